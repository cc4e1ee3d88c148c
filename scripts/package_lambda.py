"""Build build/dlpipe-lambda.zip: dlpipe's packages plus their runtime dependencies for Lambda.

The dependencies are installed for the Lambda platform (x86_64, CPython 3.13), not for the
machine that builds, so binary packages such as cryptography carry the right wheels. boto3 is
bundled too: the runtime's own copy may predate the durable-execution APIs the SDK calls.

The zip is deterministic (sorted entries, fixed timestamps and modes), so an unchanged
build keeps the same hash and Terraform does not publish a new function version.

Usage: python scripts/package_lambda.py [--output build/dlpipe-lambda.zip]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dlpipe", "orchestrator", "downloader")
# Dev- and operator-only parts of the installed package: the command line, the web view, the
# local stack and the stub provider.
EXCLUDED_SOURCE_DIRS = ("dlpipe/cli", "dlpipe/ui", "dlpipe/local")
PYTHON_VERSION = "3.13"
# Lambda's python3.13 runs on Amazon Linux 2023 (glibc 2.34): any of these wheels load there.
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64", "manylinux_2_34_x86_64")
EXCLUDED_DIRS = {"__pycache__", "tests", ".pytest_cache", ".mypy_cache"}
EXCLUDED_SUFFIXES = {".pyc", ".pyo"}
# Console scripts pip writes for the build machine's interpreter; Lambda never runs them.
EXCLUDED_DEPS_TOP_LEVEL = {"bin"}
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def runtime_dependencies(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The [project] dependencies: what the code imports at run time (no local/dev extras)."""
    with pyproject.open("rb") as handle:
        return list(tomllib.load(handle)["project"]["dependencies"])


def install_dependencies(requirements: list[str], target: Path) -> None:
    """pip-install `requirements` into `target` for the Lambda platform, wheels only."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile"]
    command += ["--target", str(target), "--only-binary=:all:", "--implementation", "cp"]
    command += ["--python-version", PYTHON_VERSION]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    subprocess.run([*command, *requirements], check=True)  # noqa: S603 (fixed argv, no shell)


def _included(path: Path, base: Path) -> bool:
    relative = path.relative_to(base)
    return (
        path.is_file()
        and not EXCLUDED_DIRS.intersection(relative.parts)
        and path.suffix not in EXCLUDED_SUFFIXES
    )


def zip_entries(source_root: Path, deps_dir: Path) -> Iterator[tuple[str, Path]]:
    """(name in the zip, file on disk) for every file to package, sorted by name."""
    entries: dict[str, Path] = {}
    for path in deps_dir.rglob("*"):
        top_level = path.relative_to(deps_dir).parts[0]
        if top_level not in EXCLUDED_DEPS_TOP_LEVEL and _included(path, deps_dir):
            entries[path.relative_to(deps_dir).as_posix()] = path
    for package in PACKAGES:
        for path in (source_root / package).rglob("*"):
            name = path.relative_to(source_root).as_posix()
            if _included(path, source_root) and not name.startswith(
                tuple(f"{d}/" for d in EXCLUDED_SOURCE_DIRS)
            ):
                entries[path.relative_to(source_root).as_posix()] = path
    for name in sorted(entries):
        yield name, entries[name]


def build_zip(source_root: Path, deps_dir: Path, output: Path) -> int:
    """Write the deterministic zip of the project packages and `deps_dir`; return its entries."""
    output.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, path in zip_entries(source_root, deps_dir):
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
            count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    """Install the dependencies for Lambda and write the zip; print where it went."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "build" / "dlpipe-lambda.zip")
    parser.add_argument("--deps-dir", type=Path, default=ROOT / "build" / "lambda-deps")
    args = parser.parse_args(argv)
    install_dependencies(runtime_dependencies(), args.deps_dir)
    count = build_zip(ROOT, args.deps_dir, args.output)
    size_mb = args.output.stat().st_size / 1_048_576
    print(f"{args.output}: {count} files, {size_mb:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

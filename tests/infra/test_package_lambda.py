"""scripts/package_lambda.py: what goes into the Lambda zip, and that the zip is reproducible."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "package_lambda.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("package_lambda", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


package_lambda = _load_script()


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A fake source root with every project package, tests and caches, plus a deps dir."""
    source, deps = tmp_path / "src", tmp_path / "deps"
    for package in package_lambda.PACKAGES:
        (source / package / "__pycache__").mkdir(parents=True)
        (source / package / "__init__.py").write_text(f"# {package}\n")
        (source / package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (source / "orchestrator" / "handler.py").write_text("def handler(e, c): ...\n")
    (source / "tests" / "unit").mkdir(parents=True)
    (source / "tests" / "unit" / "test_x.py").write_text("")
    (deps / "structlog").mkdir(parents=True)
    (deps / "structlog" / "__init__.py").write_text("")
    (deps / "bin").mkdir()
    (deps / "bin" / "dlpipe").write_text("#!/usr/bin/python3.11\n")
    return source, deps


def _names(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as zf:
        return set(zf.namelist())


def test_zip_holds_the_project_packages_and_dependencies_only(
    tree: tuple[Path, Path], tmp_path: Path
) -> None:
    """The zip has every package and dependency at its root, without tests, caches or bin/."""
    source, deps = tree
    output = tmp_path / "out.zip"
    package_lambda.build_zip(source, deps, output)
    names = _names(output)
    assert {f"{p}/__init__.py" for p in package_lambda.PACKAGES} <= names
    assert {"orchestrator/handler.py", "structlog/__init__.py"} <= names
    assert not any(n.startswith(("tests/", "bin/")) or "__pycache__" in n for n in names)


def test_zip_is_identical_when_nothing_changed(tree: tuple[Path, Path], tmp_path: Path) -> None:
    """Two builds of the same files are byte-identical, so Terraform publishes no new version."""
    source, deps = tree
    first, second = tmp_path / "a.zip", tmp_path / "b.zip"
    package_lambda.build_zip(source, deps, first)
    (source / "orchestrator" / "handler.py").touch()
    package_lambda.build_zip(source, deps, second)
    assert first.read_bytes() == second.read_bytes()


def test_runtime_dependencies_leave_out_local_and_dev_extras() -> None:
    """The zip's dependencies are pyproject's runtime list: the durable SDK in, moto and pytest out."""
    names = {
        d.split(">")[0].split("=")[0].split("<")[0] for d in package_lambda.runtime_dependencies()
    }
    assert {"aws-durable-execution-sdk-python", "boto3", "cryptography", "structlog"} <= names
    assert not names & {"moto", "pytest", "python-hcl2", "localstack-client", "flask", "waitress"}


# --- the zip built from the real source tree --------------------------------------------------

ROOT = SCRIPT.parents[1]
PRODUCTION_PACKAGES = ("dlpipe", "orchestrator", "downloader")
DEV_ONLY_PREFIXES = ("dlpipe/local/", "dlpipe/cli/", "dlpipe/ui/", "tests/", "bench/", "scripts/")
# What the laptop, the tests and CI install on top of the runtime dependencies: none of it is in
# the Lambda, so no module of the zip may import it, even lazily.
DEV_ONLY_IMPORTS = (
    "moto",
    "hcl2",
    "localstack_client",
    "aws_durable_execution_sdk_python_testing",
    "pytest",
    "_pytest",
    "psutil",
    "tests",
    "bench",
    "scripts",
)

# Run with `python -I -S`: no site-packages processing (so no editable finder pointing at the
# repository), no current directory; only the zip's tree, the stdlib and the venv's packages.
_IMPORT_EVERY_MODULE = """
import importlib, importlib.abc, json, sys
zip_root, site_packages, blocked, modules = json.loads(sys.argv[1])
attempts = []

class BlockDevOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            attempts.append(name)  # recorded too, in case a caller swallows the ImportError
            raise ImportError(f"dev-only package {name!r} imported from the Lambda zip")
        return None

sys.meta_path.insert(0, BlockDevOnly())
sys.path[:] = [zip_root, *[p for p in sys.path if "site-packages" not in p], site_packages]
failures = {}
for module in modules:
    try:
        loaded = importlib.import_module(module)
        if not loaded.__file__.startswith(zip_root):
            failures[module] = f"loaded from {loaded.__file__}, not the zip"
    except Exception as exc:
        failures[module] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"failures": failures, "attempts": attempts}))
"""


@pytest.fixture(scope="module")
def real_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """build_zip over this repository's own source, with an empty deps dir (no network)."""
    tmp = tmp_path_factory.mktemp("real-zip")
    (tmp / "deps").mkdir()
    output = tmp / "dlpipe-lambda.zip"
    package_lambda.build_zip(ROOT, tmp / "deps", output)
    return output


def _source_modules(package: str) -> set[str]:
    return {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / package).rglob("*.py")
        if "__pycache__" not in p.parts
    }


def test_real_zip_holds_every_production_module_and_no_dev_code(real_zip: Path) -> None:
    """Built from the repository, the zip has every production module of dlpipe and both
    handlers, and nothing of the local stack, the CLI, the stub, tests, bench or scripts."""
    names = _names(real_zip)
    production = {
        name
        for package in PRODUCTION_PACKAGES
        for name in _source_modules(package)
        if not name.startswith(DEV_ONLY_PREFIXES)
    }
    assert {
        "orchestrator/handler.py",
        "downloader/handler.py",
        "dlpipe/adapters/crypto.py",
        "dlpipe/adapters/download_queue.py",
        "dlpipe/entrypoints/lambda_batch.py",
    } <= names
    assert production <= names
    assert not [n for n in names if n.startswith(DEV_ONLY_PREFIXES) or "stub" in n]
    assert {n for n in names if n.endswith(".py")} == production


def test_no_module_of_the_real_zip_imports_dev_only_code_even_lazily(real_zip: Path) -> None:
    """No import statement anywhere in the zip's code (inside functions too) names a dev-only
    package, the local stack or the CLI."""
    offenders = []
    with zipfile.ZipFile(real_zip) as zf:
        for name in (n for n in zf.namelist() if n.endswith(".py")):
            for node in ast.walk(ast.parse(zf.read(name), name)):
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    targets = [node.module]
                else:
                    continue
                offenders += [
                    f"{name}:{node.lineno} {t}"
                    for t in targets
                    if t.partition(".")[0] in DEV_ONLY_IMPORTS
                    or t.startswith(("dlpipe.local", "dlpipe.cli"))
                ]
    assert not offenders


def test_every_module_of_the_real_zip_imports_without_dev_only_packages(
    real_zip: Path, tmp_path: Path
) -> None:
    """Each module of the unpacked zip imports in a fresh interpreter that sees only the zip,
    the stdlib and the venv's packages, with every dev-only package blocked."""
    with zipfile.ZipFile(real_zip) as zf:
        zf.extractall(tmp_path / "zip")
        modules = sorted(
            n.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            for n in zf.namelist()
            if n.endswith(".py")
        )
    site_packages = next(p for p in sys.path if p.endswith("site-packages"))
    argument = json.dumps([str(tmp_path / "zip"), site_packages, DEV_ONLY_IMPORTS, modules])
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _IMPORT_EVERY_MODULE, argument],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=tmp_path,
    )
    report = json.loads(result.stdout)
    shipped = {"orchestrator.handler", "downloader.handler", "dlpipe.adapters.crypto"}
    assert shipped | {"dlpipe.entrypoints.lambda_batch"} <= set(modules)
    assert report == {"failures": {}, "attempts": []}


def test_real_zip_holds_no_test_hook(real_zip: Path) -> None:
    """The chaos tests' pause points are injected by the dev kit (`dlpipe worker` from the CLI):
    no module of the zip holds them or reads their environment variable."""
    with zipfile.ZipFile(real_zip) as zf:
        hooks = [
            name
            for name in zf.namelist()
            if name.endswith(".py") and ("testpoints" in name or b"TEST_PAUSE_AT" in zf.read(name))
        ]
    assert not hooks

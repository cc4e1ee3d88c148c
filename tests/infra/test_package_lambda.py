"""scripts/package_lambda.py: what goes into the Lambda zip, and that the zip is reproducible."""

from __future__ import annotations

import importlib.util
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

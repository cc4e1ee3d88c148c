"""`pip install .` adds one top-level name, dlpipe: the handler folders ship in the Lambda zip only."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Names earlier layouts installed at the top of site-packages, where they could shadow or be
# shadowed by any other distribution's.
FORMER_TOP_LEVEL_NAMES = {"records", "ops", "provider", "downloader", "orchestrator"}


def _copy_source(target: Path) -> Path:
    """The repository without virtualenvs, caches and build output: setuptools builds in-tree."""
    ignore = shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__", "node_modules", "*.zip"
    )
    shutil.copytree(ROOT, target, ignore=ignore)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip install .` would install, built from a copy of the repository."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = _copy_source(tmp / "src")
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
    command += ["--no-build-isolation", "--no-index", "-w", str(tmp / "dist"), str(source)]
    subprocess.run(command, check=True, timeout=120, capture_output=True)
    (built,) = (tmp / "dist").glob("dlpipe-*.whl")
    return built


def test_the_wheel_installs_one_top_level_name(wheel: Path) -> None:
    """Every file of the wheel, metadata aside, lives under dlpipe/."""
    with zipfile.ZipFile(wheel) as zf:
        top_level = {name.split("/")[0] for name in zf.namelist()}
    installed = {name for name in top_level if not name.endswith((".dist-info", ".data"))}
    assert installed == {"dlpipe"}
    assert not installed & FORMER_TOP_LEVEL_NAMES


def test_the_wheel_carries_the_local_stack_resources_and_the_cli_entry_point(
    wheel: Path,
) -> None:
    """The one name still holds what a laptop needs: the Java launcher and the `dlpipe` command."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        (entry_points,) = (n for n in names if n.endswith(".dist-info/entry_points.txt"))
        console = zf.read(entry_points).decode()
    assert "dlpipe/local/java/DlpipeDynamoDBLocal.java" in names
    assert "dlpipe = dlpipe.cli.main:main" in console

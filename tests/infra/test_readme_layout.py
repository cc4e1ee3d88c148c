"""README.md's "## Layout" table against the tree.

Every top-level folder of the repository and every package directly under dlpipe/ must be
named in the table, and every path the table names must exist: a folder added, moved or
removed without its row is a failing test, not a stale README.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Not part of the repository's layout: tool caches, virtualenvs and build artifacts.
_ARTIFACTS = {"__pycache__", "build", "dist", "htmlcov", "node_modules"}
_CODE = re.compile(r"`([^`]+)`")


def _is_artifact(name: str) -> bool:
    return name.startswith(".") or name in _ARTIFACTS or name.endswith(".egg-info")


def layout_rows(readme: str) -> list[str]:
    """The first cell of each row of the table under "## Layout"."""
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    cells = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("|")]
    return cells[2:]  # past the header and its rule


def named_paths(cell: str) -> list[str]:
    """The paths a first cell names: `dlpipe/config.py`, `log.py` is dlpipe/config.py, dlpipe/log.py."""
    names = _CODE.findall(cell)
    first = names[0].rstrip("/")
    parent = first.rsplit("/", 1)[0] + "/" if "/" in first else ""
    return [first] + [parent + name.rstrip("/") for name in names[1:]]


def table_paths() -> set[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return {path for cell in layout_rows(readme) for path in named_paths(cell)}


def tree_folders() -> set[str]:
    """Top-level folders, and the packages directly under dlpipe/."""
    top = {p.name for p in ROOT.iterdir() if p.is_dir() and not _is_artifact(p.name)}
    packages = {
        f"dlpipe/{p.name}"
        for p in (ROOT / "dlpipe").iterdir()
        if (p / "__init__.py").is_file() and not _is_artifact(p.name)
    }
    return top | packages


def test_named_paths_reads_a_shared_parent() -> None:
    assert named_paths("`dlpipe/config.py`, `log.py`") == ["dlpipe/config.py", "dlpipe/log.py"]
    assert named_paths("`docs/`") == ["docs"]


def test_every_folder_is_in_the_layout_table() -> None:
    paths = table_paths()
    covered = paths | {path.split("/", 1)[0] for path in paths}
    missing = sorted(tree_folders() - covered)
    assert not missing, f"README.md's Layout table misses {missing}"


def test_the_layout_table_names_only_what_exists() -> None:
    absent = sorted(path for path in table_paths() if not (ROOT / path).exists())
    assert not absent, f"README.md's Layout table names what does not exist: {absent}"

"""docs/ARCHITECTURE.md's layer table against pyproject.toml's import-linter contracts.

`lint-imports` enforces the contracts; the table is what a reader believes. Each of the
layers contract's layers and each other root package (the Lambda handlers) must have its own
row, in the contract's order, and a row's "may import" cell must name exactly the layers the
contracts let it import, and the libraries they forbid it. A contract between modules below a
layer (one adapter, the services' independence) must be stated in the Layers section, its
source and forbidden modules named in one paragraph or row.

The "may import" cell is read clause by clause (`;` separates them):
- "every layer below" is every package of the rows below, less the backticked names after
  "except";
- a clause that starts with "no" lists, backticked, the libraries the row may not import;
- "one another" lets the packages of one row import each other, "not one another" forbids it;
- any other clause lists the layers it may import, backticked.
Layers are named by their last component (`services`, `feed_settings`, `orchestrator`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_CODE = re.compile(r"`([^`]+)`")
_BELOW = re.compile(r"\bevery(?:thing| layer) below\b")


@dataclass(frozen=True)
class Contracts:
    """What the contracts allow between whole layers, and the finer rules below them."""

    units: tuple[str, ...]  # top to bottom: the handlers, then the layers contract's order
    groups: tuple[frozenset[str], ...]  # the units in their rows' grouping
    allowed: dict[str, frozenset[str]]
    libraries: dict[str, frozenset[str]]  # third-party packages a unit may not import
    finer: tuple[tuple[str, ...], ...]  # (source, forbidden...) or (independent...) below a layer


@dataclass(frozen=True)
class Row:
    label: str
    packages: tuple[str, ...]
    cell: str


def _within(module: str, parent: str) -> bool:
    return module == parent or module.startswith(parent + ".")


def _implied(rule: tuple[str, ...], units: tuple[str, ...], allowed: dict[str, set[str]]) -> bool:
    """Whether a forbidden contract below a layer says no more than its layer's row."""
    source, *targets = rule
    (layer,) = [u for u in units if _within(source, u)]
    return not any(_within(t, b) or _within(b, t) for t in targets for b in allowed[layer])


def read_contracts(pyproject: str) -> Contracts:
    """The contracts of [tool.importlinter], as what each whole layer may import."""
    config: dict[str, Any] = tomllib.loads(pyproject)["tool"]["importlinter"]
    roots: list[str] = config["root_packages"]
    contracts: list[dict[str, Any]] = config["contracts"]
    (layered,) = [c for c in contracts if c["type"] == "layers"]
    unknown = set(layered) - {"name", "type", "layers"}
    assert not unknown, f"the test does not read the layers contract's {sorted(unknown)}"
    layer_groups: list[frozenset[str]] = []
    for entry in layered["layers"]:
        assert ":" not in entry, f"the test reads only independent siblings ('|'): {entry!r}"
        layer_groups.append(frozenset(part.strip() for part in entry.split("|")))
    in_layers = {m for group in layer_groups for m in group}
    handlers = frozenset(r for r in roots if not any(_within(m, r) for m in in_layers))
    groups = (handlers, *layer_groups)
    units = tuple(m for group in groups for m in sorted(group))
    index = {m: i for i, group in enumerate(groups) for m in group}

    allowed = {
        a: {b for b in units if b != a and (a in handlers or index[b] > index[a])} for a in units
    }
    libraries: dict[str, set[str]] = {a: set() for a in units}
    finer: list[tuple[str, ...]] = []
    independent: list[tuple[str, ...]] = []
    for contract in contracts:
        kind = contract["type"]
        if kind == "layers":
            continue
        if kind == "independence":
            modules: list[str] = contract["modules"]
            if all(m in allowed for m in modules):
                for a in modules:
                    allowed[a] -= set(modules)
            else:
                independent.append(tuple(modules))
            continue
        assert kind == "forbidden", f"the test does not read {kind} contracts: {contract['name']}"
        unknown = set(contract) - {"name", "type", "source_modules", "forbidden_modules"}
        assert not unknown, f"the test does not read {sorted(unknown)} in {contract['name']}"
        targets: list[str] = contract["forbidden_modules"]
        for source in contract["source_modules"]:
            sources = [u for u in units if _within(u, source)]
            if not sources:
                finer.append((source, *targets))
                continue
            for target in targets:
                if not any(_within(target, r) for r in roots):
                    for a in sources:
                        libraries[a].add(target)
                    continue
                whole = [u for u in units if _within(u, target)]
                if not whole:
                    finer.extend((a, target) for a in sources)
                for a in sources:
                    allowed[a] -= set(whole)
    return Contracts(
        units=units,
        groups=groups,
        allowed={a: frozenset(b) for a, b in allowed.items()},
        libraries={a: frozenset(b) for a, b in libraries.items()},
        finer=(*(r for r in finer if not _implied(r, units, allowed)), *independent),
    )


def _module(path: str) -> str:
    """`dlpipe/services/` or `dlpipe/config.py` as a module name."""
    return path.strip().rstrip("/").removesuffix(".py").replace("/", ".")


def layers_section(architecture: str) -> str:
    return architecture.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]


def read_table(architecture: str) -> list[Row]:
    """The rows of the Layers section's table: label, packages and "may import" cell."""
    lines = [line for line in layers_section(architecture).splitlines() if line.startswith("|")]
    rows = []
    for line in lines[2:]:  # past the header and its rule
        label, packages, _holds, cell = (c.strip() for c in line.strip().strip("|").split("|"))
        names = [name.rstrip("/") for name in _CODE.findall(packages)]
        parent = names[0].rsplit("/", 1)[0] + "/" if "/" in names[0] else ""
        paths = [names[0]] + [n if "/" in n else parent + n for n in names[1:]]
        rows.append(Row(label, tuple(_module(p) for p in paths), cell))
    return rows


@dataclass(frozen=True)
class Cell:
    allowed: frozenset[str]
    libraries: frozenset[str]
    unknown: frozenset[str]  # backticked names that are no layer
    siblings_stated: bool = False  # a clause says whether the row's packages import one another


def read_cell(cell: str, row: Row, below: list[str], units: tuple[str, ...]) -> Cell:
    """A "may import" cell as the units and libraries it names (grammar: the module docstring)."""
    by_name = {u.rsplit(".", 1)[-1]: u for u in units}
    allowed: set[str] = set()
    libraries: set[str] = set()
    unknown: set[str] = set()
    siblings_stated = False
    for clause in (c.strip() for c in cell.split(";")):
        names = _CODE.findall(clause)
        if clause.startswith("no "):
            libraries.update(names)
            continue
        if "one another" in clause:
            siblings_stated = True
            if not clause.startswith("not"):
                allowed.update(row.packages)
            continue
        chosen = {u for n, u in by_name.items() if re.search(rf"(?<![\w./]){n}(?![\w/'])", clause)}
        unknown.update(n for n in names if n not in by_name)
        if _BELOW.search(clause):
            allowed.update(set(below) - chosen)
        else:
            allowed.update(chosen)
    return Cell(
        allowed=frozenset(allowed),
        libraries=frozenset(libraries),
        unknown=frozenset(unknown),
        siblings_stated=siblings_stated,
    )


def _contracts() -> Contracts:
    return read_contracts((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _architecture() -> str:
    return (ROOT / "docs/ARCHITECTURE.md").read_text(encoding="utf-8")


def _short(modules: set[str] | frozenset[str]) -> list[str]:
    return sorted(m.rsplit(".", 1)[-1] for m in modules)


def test_the_contracts_read_as_the_layers_they_state() -> None:
    contracts = read_contracts(
        """
[tool.importlinter]
root_packages = ["app", "handler"]
[[tool.importlinter.contracts]]
name = "layers"
type = "layers"
layers = ["app.top", "app.mid", "app.a | app.b", "app.low"]
[[tool.importlinter.contracts]]
name = "mid reaches no library"
type = "forbidden"
source_modules = ["app.mid"]
forbidden_modules = ["app.a", "boto3", "app.low.part"]
[[tool.importlinter.contracts]]
name = "the handler keeps off the top"
type = "forbidden"
source_modules = ["handler"]
forbidden_modules = ["app.top"]
"""
    )
    assert contracts.units == ("handler", "app.top", "app.mid", "app.a", "app.b", "app.low")
    assert contracts.allowed["handler"] == {"app.mid", "app.a", "app.b", "app.low"}
    assert contracts.allowed["app.mid"] == {"app.b", "app.low"}
    assert contracts.allowed["app.a"] == {"app.low"}
    assert contracts.libraries["app.mid"] == {"boto3"}
    assert contracts.finer == (("app.mid", "app.low.part"),)


def test_a_cell_reads_as_the_layers_it_names() -> None:
    units = ("handler", "app.top", "app.mid", "app.a", "app.b", "app.low")
    row = Row("shared", ("app.a", "app.b"), "")
    below = ["app.low"]
    assert read_cell("every layer below; not one another", row, below, units) == Cell(
        frozenset({"app.low"}), frozenset(), frozenset(), siblings_stated=True
    )
    mid = Row("mid", ("app.mid",), "")
    cell = read_cell(
        "every layer below except `a`; no `boto3`, `requests`",
        mid,
        ["app.a", "app.b", "app.low"],
        units,
    )
    assert cell == Cell(
        frozenset({"app.b", "app.low"}), frozenset({"boto3", "requests"}), frozenset()
    )
    assert read_cell("`low`, `ports.py`", mid, below, units).unknown == {"ports.py"}


def test_each_layer_of_the_contracts_has_its_own_row_in_their_order() -> None:
    contracts = _contracts()
    rows = read_table(_architecture())
    table = [set(row.packages) for row in rows]
    expected = [set(group) for group in contracts.groups]
    assert table == expected, (
        "ARCHITECTURE.md's layer table has the rows "
        f"{[_short(r) for r in table]}; the contracts' layers, top to bottom, are "
        f"{[_short(g) for g in expected]}"
    )


def test_each_row_may_import_what_the_contracts_allow() -> None:
    contracts = _contracts()
    rows = read_table(_architecture())
    wrong = []
    for i, row in enumerate(rows):
        below = [p for later in rows[i + 1 :] for p in later.packages]
        cell = read_cell(row.cell, row, below, contracts.units)
        for package in row.packages:
            if package not in contracts.allowed:
                wrong.append(f"{row.label}: {package} is in no contract")
                continue
            told = cell.allowed - {package}
            if told != contracts.allowed[package]:
                wrong.append(
                    f"{row.label} ({_short({package})[0]}): the table allows "
                    f"{_short(told)}, the contracts {_short(contracts.allowed[package])}"
                )
            if cell.libraries != contracts.libraries[package]:
                wrong.append(
                    f"{row.label} ({_short({package})[0]}): the table forbids the libraries "
                    f"{sorted(cell.libraries)}, the contracts {sorted(contracts.libraries[package])}"
                )
        if len(row.packages) > 1 and not cell.siblings_stated:
            wrong.append(f"{row.label}: says not whether its packages import one another")
        if cell.unknown:
            wrong.append(f"{row.label}: {sorted(cell.unknown)} name no layer")
    assert not wrong, "ARCHITECTURE.md's layer table disagrees with the contracts:\n" + "\n".join(
        wrong
    )


def _paragraphs(section: str) -> list[set[str]]:
    """The modules each paragraph or table row of a section names, as module names."""
    blocks: list[str] = []
    for block in section.split("\n\n"):
        lines = block.splitlines()
        rows = [line for line in lines if line.startswith("|")]
        blocks.extend(rows)
        blocks.append("\n".join(line for line in lines if not line.startswith("|")))
    return [{_module(name) for name in _CODE.findall(block)} for block in blocks]


def test_the_contracts_below_a_layer_are_stated() -> None:
    named = _paragraphs(layers_section(_architecture()))
    unstated = [rule for rule in _contracts().finer if not any(set(rule) <= p for p in named)]
    assert not unstated, (
        "ARCHITECTURE.md's Layers section names no paragraph or row with these contracts' "
        f"modules (as `dlpipe/...` paths): {unstated}"
    )

"""Each status group and each attribute name has one home: the groups are what their rule
reads off the status table's rows, and no module of dlpipe/ but that home lists statuses or
spells a DynamoDB attribute name (a scan of the sources and of the web view's templates)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import dlpipe
from dlpipe.adapters.items import BATCH_ATTRIBUTES, JOB_ATTRIBUTES
from dlpipe.domain import statuses
from dlpipe.domain.schema import BATCH_INDEX, JOBS_PROJECTIONS, MANIFEST_ATTRIBUTES
from dlpipe.domain.statuses import BATCH_STATUSES, JOB_STATUSES, BatchStatus, JobStatus, StatusRow
from dlpipe.services.orchestrator import step_names

ROOT = Path(dlpipe.__file__).parent
_Rule = Callable[[StatusRow[Any]], bool]
# Each group and the rule that defines it, written against the rows' fields.
GROUPS: dict[str, tuple[Mapping[Any, StatusRow[Any]], _Rule]] = {
    "TERMINAL_JOB_STATUSES": (JOB_STATUSES, lambda row: row.ended),
    "PENDING_JOB_STATUSES": (JOB_STATUSES, lambda row: not row.ended),
    "UNSUCCESSFUL_JOB_STATUSES": (JOB_STATUSES, lambda row: row.ended and not row.successful),
    "LEASED_JOB_STATUSES": (JOB_STATUSES, lambda row: row.leased),
    "FAILED_JOB_STATUSES": (JOB_STATUSES, lambda r: r.ended and not r.successful and r.transient),
    "ERROR_JOB_STATUSES": (
        JOB_STATUSES,
        lambda r: r.ended and not r.successful and not r.transient,
    ),
    "TERMINAL_BATCH_STATUSES": (BATCH_STATUSES, lambda row: row.ended),
    "SUCCESSFUL_BATCH_STATUSES": (BATCH_STATUSES, lambda row: row.successful),
    "BATCH_OPEN": (BATCH_STATUSES, lambda row: bool(row.to)),
}


def test_every_status_group_is_its_rule_over_the_rows_in_the_tables_order() -> None:
    """A group is derived from the rows, never listed: it holds exactly the statuses whose
    row its rule accepts, in the table's order (a loop over it queries in a fixed order)."""
    for name, (table, rule) in GROUPS.items():
        assert getattr(statuses, name) == tuple(s for s, row in table.items() if rule(row)), name
    tuples = {n for n, v in vars(statuses).items() if n.isupper() and isinstance(v, tuple)}
    assert tuples == {*GROUPS, "JOB_STATUSES_BY_PROGRESS"}, "a new group needs its rule here"


def test_jobs_by_progress_orders_every_status_ended_then_held_then_waiting() -> None:
    """The operators' order: every job status once; ended before pending, successful before
    unsuccessful, held under a lease before waiting; ties in the table's order."""
    order = statuses.JOB_STATUSES_BY_PROGRESS
    assert sorted(order) == sorted(JobStatus)
    ranks = [
        (not JOB_STATUSES[s].ended, not JOB_STATUSES[s].successful, not JOB_STATUSES[s].leased)
        for s in order
    ]
    assert ranks == sorted(ranks)


_STATUS_VALUES = frozenset(str(s) for s in (*JobStatus, *BatchStatus))


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(ROOT.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), str(path))


def _status_ref(node: ast.expr) -> bool:
    """`JobStatus.X`, `BatchStatus.X`, `str(...)` of one, or a stored status string."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return len(node.args) == 1 and _status_ref(node.args[0])
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id in {"JobStatus", "BatchStatus"}
    return isinstance(node, ast.Constant) and node.value in _STATUS_VALUES


def _other_word(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and not _status_ref(node)


def _status_lists(tree: ast.Module) -> Iterator[int]:
    """Lines where statuses are listed together (two or more in a tuple, list or set, in a
    call's positional arguments or a dict's keys, beside no other word: ("expected",
    "completed", "failed") names counts), and where a status string is compared with."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = (node.left, *node.comparators)
            if any(isinstance(n, ast.Constant) and _status_ref(n) for n in operands):
                yield node.lineno
            continue
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        elif isinstance(node, ast.Call):
            items = node.args
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        else:
            continue
        if sum(_status_ref(i) for i in items) >= 2 and not any(_other_word(i) for i in items):
            yield node.lineno


def test_no_module_but_statuses_py_lists_statuses() -> None:
    """A group of statuses is named from dlpipe/domain/statuses.py at every call site (loops,
    conditions, CLI choices), and a stored status is never compared as a string."""
    found = [
        f"{name}:{line}"
        for name, tree in _sources()
        if name != "domain/statuses.py"
        for line in _status_lists(tree)
    ]
    assert not found, "\n".join(found)


# The modules that move a job into an unsuccessful status, the only ones that name one: every
# count of the unsuccessful goes through FAILED_JOB_STATUSES / ERROR_JOB_STATUSES, so a new
# terminal status is counted by its row, not by a list of names kept in each counter.
_MOVES_INTO_UNSUCCESSFUL = frozenset(
    {
        "domain/statuses.py",
        "services/download/service.py",  # a permanent fault at claim
        "services/download/claim.py",  # retries used up
        "services/download/outcome.py",  # the status an exception ends a job in
        "services/orchestrator/jobs_from_listing.py",  # a listing entry refused
        "services/orchestrator/placement.py",  # which refused entry a rerun may replace
    }
)
_UNSUCCESSFUL_NAMES = frozenset(s.name for s in statuses.UNSUCCESSFUL_JOB_STATUSES)


def _unsuccessful_named(tree: ast.Module) -> Iterator[int]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "JobStatus"
            and node.attr in _UNSUCCESSFUL_NAMES
        ):
            yield node.lineno


def test_unsuccessful_statuses_are_counted_by_group_not_by_name() -> None:
    """`failed` and `error` are counted through their groups everywhere (the completion
    check, the batch's stored counts, the errors by code, the local day, the manifest's
    revision counts); only the code that moves a job into one names it."""
    found = [
        f"{name}:{line}"
        for name, tree in _sources()
        if name not in _MOVES_INTO_UNSUCCESSFUL
        for line in _unsuccessful_named(tree)
    ]
    assert not found, "\n".join(found)


_JINJA = re.compile(r"{[{%].*?[}%]}", re.DOTALL)
_ALTERNATIVES = "|".join(sorted(_STATUS_VALUES))
_QUOTED_STATUS = re.compile(rf"""['"]({_ALTERNATIVES})['"]""")
_STATUS_CLASS = re.compile(rf"\bs-({_ALTERNATIVES})\b")


def test_templates_spell_no_status() -> None:
    """The web view's templates take statuses and their groups from the code (ui/present.py)
    and write a status's class as `s-{{ status }}`: no status string, no `s-completed`."""
    found = []
    for path in sorted((ROOT / "ui" / "templates").glob("*.html")):
        # The files table's `error` column (ErrorMessage) is a column, not the status.
        text = path.read_text().replace("('error', 'error')", "")
        in_jinja = (m for block in _JINJA.finditer(text) for m in _QUOTED_STATUS.finditer(block[0]))
        found += [f"{path.name}: {m[0]}" for m in (*_STATUS_CLASS.finditer(text), *in_jinja)]
    assert not found, "\n".join(found)


# The homes of the attribute names: adapters/items.py names every attribute, taking the ones
# the tables and indexes are keyed by (which Terraform declares too) from domain/schema.py.
_ATTRIBUTE_HOMES = frozenset({"adapters/items.py", "domain/schema.py"})
_ATTRIBUTES = frozenset({*JOB_ATTRIBUTES.values(), *BATCH_ATTRIBUTES.values()})
# The same words where they name something other than a DynamoDB attribute.
_NOT_ATTRIBUTES = frozenset(
    {
        ("adapters/events.py", "ErrorMessage"),  # a refused PutEvents entry's field
        ("metrics.py", "Feed"),  # the CloudWatch dimension
        ("services/download/file_metrics.py", "FileID"),  # a file metric document's properties
        ("services/download/file_metrics.py", "BatchID"),
        ("services/download/file_metrics.py", "Cipher"),
        ("local/provision.py", "Status"),  # S3's VersioningConfiguration
        ("cli/run_local.py", "FileID"),  # a column heading
    }
)
_ATTRIBUTE_WORD = re.compile(r"\b({})\b".format("|".join(sorted(_ATTRIBUTES))))


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the module's, classes' and functions' docstring nodes."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _attribute_names(name: str, tree: ast.Module) -> Iterator[str]:
    # In a table module an expression is a string too: a name inside one counts.
    in_text = name.startswith("adapters/") and name.endswith("_table.py")
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in docstrings:
            continue
        spelled = _ATTRIBUTE_WORD.findall(node.value) if in_text else {node.value} & _ATTRIBUTES
        for attribute in sorted(set(spelled)):
            if (name, attribute) not in _NOT_ATTRIBUTES:
                yield f"{name}:{node.lineno}: {attribute}"


def test_no_module_but_items_py_and_schema_py_spells_an_attribute_name() -> None:
    """Keys, projections and expressions name attributes through dlpipe/adapters/items.py
    (`expression_names`, `job_key`, `batch_key`) or dlpipe/domain/schema.py's key names."""
    found = [
        line
        for name, tree in _sources()
        if name not in _ATTRIBUTE_HOMES
        for line in _attribute_names(name, tree)
    ]
    assert not found, "\n".join(found)


def test_batch_index_projects_attributes_the_jobs_items_carry() -> None:
    """The manifest's projected attributes (domain/schema.py) are job attributes by the names
    adapters/items.py writes: a misspelt one would be projected empty and every manifest row
    read from BatchIndex would lack it."""
    assert set(MANIFEST_ATTRIBUTES) <= set(JOB_ATTRIBUTES.values())
    assert set(MANIFEST_ATTRIBUTES) <= set(JOBS_PROJECTIONS[BATCH_INDEX][1])


def _step_names() -> tuple[set[str], tuple[str, ...]]:
    """Every fixed step name, and the numbered names' prefixes (`check-completion-`, ...)."""
    fixed = {v for k, v in vars(step_names).items() if k.startswith("STEP_")}
    numbered = tuple(
        func(7).removesuffix("7")
        for func in (
            step_names.fetch_step_name,
            step_names.recheck_step_name,
            step_names.check_step_name,
            step_names.wait_name,
            step_names.late_step_name,
        )
    )
    return fixed, numbered


def step_name_spellings(tree: ast.Module) -> list[int]:
    """Lines of `tree` that spell a durable step's name: the constant itself, or the start of
    a numbered one (an f-string's first part is a constant too); docstrings may name them."""
    fixed, numbered = _step_names()
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return sorted(
        {
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and id(node) not in prose
            and isinstance(node.value, str)
            and (node.value in fixed or node.value.startswith(numbered))
        }
    )


def test_no_module_but_step_names_py_spells_a_step_name() -> None:
    """The names in-flight executions replay by live in services/orchestrator/step_names.py
    alone: a second spelling could drift from it and break every running day's replay."""
    found = [
        f"{name}:{line}"
        for name, tree in _sources()
        if name != "services/orchestrator/step_names.py"
        for line in step_name_spellings(tree)
    ]
    assert not found, "\n".join(found)


def test_the_step_name_scan_finds_a_second_spelling() -> None:
    """The scan itself: a constant and a numbered f-string are found, a mere mention is not."""
    tree = ast.parse('A = "write-manifest"\nB = f"poll-wait-{n}"\n"poll-wait-{n}: a docstring"\n')
    assert step_name_spellings(tree) == [1, 2]

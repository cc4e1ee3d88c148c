"""Which methods of the table modules make a conditional write, read from their source.

A method makes one when its body passes a ConditionExpression (`ConditionExpression=` or
`condition=`, or calls `conditional_update`), or calls a method of its class that does. The
tests that must cover every conditional write (tests/property/test_conditions.py,
tests/unit/test_condition_statuses.py) compare their registered names with this list, so a
new conditional write that no test registers fails a test.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Callable, Iterable
from types import ModuleType

_CONDITION_KEYWORDS = frozenset({"ConditionExpression", "condition"})


def _direct_and_calls(method: ast.FunctionDef) -> tuple[bool, set[str]]:
    """(does the body pass a condition itself, the `self.*` methods it calls)."""
    direct, calls = False, set()
    for node in ast.walk(method):
        if not isinstance(node, ast.Call):
            continue
        if any(k.arg in _CONDITION_KEYWORDS for k in node.keywords):
            direct = True
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr == "conditional_update":
                direct = True
            if isinstance(func.value, ast.Name) and func.value.id == "self":
                calls.add(func.attr)
    return direct, calls


def conditional_writes(module: ModuleType, class_name: str) -> frozenset[str]:
    """The public methods of `class_name` in `module` that make a conditional write."""
    tree = ast.parse(inspect.getsource(module))
    (cls,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    methods = {n.name: _direct_and_calls(n) for n in cls.body if isinstance(n, ast.FunctionDef)}
    conditional = {name for name, (direct, _) in methods.items() if direct}
    grown = True
    while grown:  # a method calling a conditional one is one too
        before = len(conditional)
        conditional |= {n for n, (_, calls) in methods.items() if calls & conditional}
        grown = len(conditional) > before
    return frozenset(n for n in conditional if not n.startswith("_"))


def conditional_writes_of(cls: type) -> frozenset[str]:
    """`conditional_writes` of `cls` and of the classes it extends in `SPLIT_WRITES` (a
    table's writes split over modules: jobs_rerun_writes.py's RerunWrites on JobWrites)."""
    found: frozenset[str] = frozenset()
    for part in (cls, *SPLIT_WRITES.get(cls.__name__, ())):
        found |= conditional_writes(sys.modules[part.__module__], part.__name__)
    return found


def _split_writes() -> dict[str, tuple[type, ...]]:
    from dlpipe.adapters.jobs_writes import JobWrites

    return {"RerunWrites": (JobWrites,)}


SPLIT_WRITES = _split_writes()


def methods_called(writes: Iterable[Callable[..., object]], cls: type) -> frozenset[str]:
    """The methods of `cls` the registered write functions (lambdas) call, by name."""
    public = {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}
    return frozenset(n for w in writes for n in w.__code__.co_names if n in public)

"""No test bounds real elapsed time: a busy machine stretches any wall-clock span, so a check
says it with a count, an order of recorded events, or a virtual clock, and speed figures go
to bench/. A scan (ast) of every file under tests/ for a check on an elapsed wall-clock span.

An elapsed span is a difference with a clock reading on one side (time.monotonic(),
time.time(), time.perf_counter(), their _ns forms, or a name assigned from one), a name
assigned from a span, or a call of a function (an attribute, for a property) that returns one,
found across all of tests/ (a tuple's items one by one), and a container of spans. Any ordering
comparison that weighs a span is a check (in an assert, an `if`, or stored for later), but for
a `while` loop's own condition: a deadline that only stops a hang."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import tests

ROOT = Path(tests.__file__).parent
# Builtins whose answer over a span is a span, and a container's views of its spans.
BUILTINS = frozenset({"round", "int", "float", "abs", "max", "min", "sum", "sorted", "list"})
VIEWS = frozenset({"values", "get", "pop", "copy"})
# `in` and `is` weigh no span (`file_id in kill_times`).
MEMBERSHIP = (ast.In, ast.NotIn, ast.Is, ast.IsNot)
CLOCKS = frozenset(
    f"{name}{ns}" for name in ("monotonic", "time", "perf_counter") for ns in ("", "_ns")
)


def _is_clock(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "time"
        and node.func.attr in CLOCKS
    )


def _names(target: ast.AST) -> Iterator[tuple[str, int | None]]:
    """Each name a target binds, with its position in a tuple target (None: the whole)."""
    if isinstance(target, ast.Name):
        yield target.id, None
    elif isinstance(target, ast.Tuple):
        for i, item in enumerate(target.elts):
            if isinstance(item, ast.Name):
                yield item.id, i


def _module(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root.parent).with_suffix("").parts)


# Where a span comes out of a function: None, the whole value; a set, those tuple positions.
Positions = set[int] | None


class _Returns:
    """The functions of tests/ that return a span: module-level ones by (module, name), seen
    in a module that defines or imports them; properties by name, read anywhere (a method's
    name, `run` or `get`, is too common to follow)."""

    def __init__(self) -> None:
        self.functions: dict[tuple[str, str], Positions] = {}
        self.properties: dict[str, Positions] = {}


class _Scope:
    """One function's (or a module's top level's) stamps (clock readings) and span names."""

    def __init__(self, returns: _Returns, visible: dict[str, tuple[str, str]]) -> None:
        self.returns, self.visible = returns, visible
        self.stamps: set[str] = set()
        self.spans: set[str] = set()

    def _stamp(self, node: ast.AST) -> bool:
        return any(
            _is_clock(n) or (isinstance(n, ast.Name) and n.id in self.stamps)
            for n in ast.walk(node)
        )

    def _called(self, node: ast.AST) -> Positions | set[int]:
        """What a call or an attribute returns in the way of spans (empty set: none)."""
        func = node.func if isinstance(node, ast.Call) else node
        if isinstance(func, ast.Name) and func.id in self.visible:
            return self.returns.functions.get(self.visible[func.id], set())
        if isinstance(node, ast.Attribute):
            return self.returns.properties.get(node.attr, set())
        return set()

    def holds(self, node: ast.AST) -> bool:
        """Whether `node`'s value is (or holds) an elapsed span: a span, arithmetic on one, a
        container of spans, an item of one or a builtin's answer over one."""
        if isinstance(node, ast.BinOp):
            subtract = isinstance(node.op, ast.Sub)
            if subtract and (self._stamp(node.left) or self._stamp(node.right)):
                return True
            return self.holds(node.left) or self.holds(node.right)
        if isinstance(node, ast.Name):
            return node.id in self.spans
        if isinstance(node, ast.UnaryOp | ast.Starred):
            return self.holds(node.operand if isinstance(node, ast.UnaryOp) else node.value)
        if isinstance(node, ast.Subscript):
            return self.holds(node.value)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(self.holds(item) for item in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.holds(item) for item in node.values)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return self.holds(node.elt)
        if isinstance(node, ast.DictComp):
            return self.holds(node.value)
        if isinstance(node, ast.Call | ast.Attribute) and self._called(node) is None:
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in BUILTINS:
                return any(self.holds(arg) for arg in node.args)
            return isinstance(func, ast.Attribute) and func.attr in VIEWS and self.holds(func.value)
        return False

    def positions(self, value: ast.expr) -> Positions:
        """None: `value` is a span as a whole; else the tuple positions that are spans."""
        if isinstance(value, ast.Tuple):
            return {i for i, item in enumerate(value.elts) if self.holds(item)}
        if isinstance(value, ast.Call) and self._called(value):
            return self._called(value)
        return None if self.holds(value) else set()

    def bind(self, target: ast.AST, value: ast.expr) -> None:
        if isinstance(target, ast.Subscript):  # a span stored in a container: it holds spans
            target = target.value
        positions = self.positions(value)
        for name, i in _names(target):
            if positions is None or (i is not None and i in positions):
                self.spans.add(name)
            elif i is None and self._stamp(value):
                self.stamps.add(name)


def _assignments(body: list[ast.stmt]) -> Iterator[tuple[ast.AST, ast.expr]]:
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Assign):
            yield from ((target, node.value) for target in node.targets)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            yield node.target, node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "add")
            and node.args
        ):
            yield node.func.value, node.args[0]


def _is_property(function: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in function.decorator_list)


def _scopes(tree: ast.Module) -> Iterator[tuple[list[ast.stmt], str | None, bool | None]]:
    """Each scope's statements, its function's name (None: the module) and whether it is a
    property (None: a method, not followed)."""
    top = [s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.ClassDef)]
    yield top, None, False
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            yield stmt.body, stmt.name, False
        elif isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef):
                    yield item.body, item.name, True if _is_property(item) else None


class _Module:
    def __init__(self, name: str, tree: ast.Module, returns: _Returns) -> None:
        self.name, self.tree, self.returns = name, tree, returns
        self.visible = {
            s.name: (self.name, s.name) for s in tree.body if isinstance(s, ast.FunctionDef)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.visible[alias.asname or alias.name] = (node.module, alias.name)

        # Each scope's assignments, found once (scopes() is called once a round).
        self.bodies = [
            (body, function, method, list(_assignments(body)))
            for body, function, method in _scopes(tree)
        ]

    def scopes(self) -> Iterator[tuple[_Scope, list[ast.stmt]]]:
        """Each scope with its names learnt; records the span-returning functions."""
        for body, function, method, assignments in self.bodies:
            scope = _Scope(self.returns, self.visible)
            for _ in range(2):  # a name assigned before the one it is read from
                for target, value in assignments:
                    scope.bind(target, value)
            if function is not None:
                self._record(scope, body, function, method)
            yield scope, body

    def _record(
        self, scope: _Scope, body: list[ast.stmt], function: str, method: bool | None
    ) -> None:
        found: Positions = set()
        for node in (n for stmt in body for n in ast.walk(stmt)):
            if isinstance(node, ast.Return) and node.value is not None and found is not None:
                positions = scope.positions(node.value)
                found = None if positions is None else found | positions
        if found is None or found:
            if method:
                self.returns.properties[function] = found
            elif method is False:
                self.returns.functions[(self.name, function)] = found


def _compared(tree: ast.AST, scope: _Scope) -> Iterator[int]:
    """Lines of the comparisons that weigh a span (a `while` deadline loop's are its own)."""
    if isinstance(tree, ast.While):
        for stmt in [*tree.body, *tree.orelse]:
            yield from _compared(stmt, scope)
        return
    if (
        isinstance(tree, ast.Compare)
        and not all(isinstance(op, MEMBERSHIP) for op in tree.ops)
        and any(scope.holds(side) for side in [tree.left, *tree.comparators])
    ):
        yield tree.lineno
    for child in ast.iter_child_nodes(tree):
        if not isinstance(child, ast.FunctionDef | ast.ClassDef):
            yield from _compared(child, scope)


def wall_clock_checks(root: Path = ROOT) -> list[str]:
    """`path:line: source` of every check on an elapsed wall-clock span under `root`."""
    paths = sorted(root.rglob("*.py"))
    returns = _Returns()
    modules = {
        p: _Module(_module(p, root), ast.parse(p.read_text(encoding="utf-8"), str(p)), returns)
        for p in paths
    }
    for _ in range(2):  # a span returned through a helper of a helper
        for module in modules.values():
            list(module.scopes())
    found: list[str] = []
    for path, module in modules.items():
        source = path.read_text(encoding="utf-8").splitlines()
        lines = {
            line for scope, body in module.scopes() for s in body for line in _compared(s, scope)
        }
        where = path.relative_to(root.parent).as_posix()
        found.extend(f"{where}:{line}: {source[line - 1].strip()}" for line in sorted(lines))
    return found


def test_no_test_checks_an_elapsed_wall_clock_span() -> None:
    found = wall_clock_checks()
    assert not found, "say these with a count, an order or a virtual clock:\n" + "\n".join(found)


PLANTED = """import time
class Watch:
    @property
    def seconds(self):
        return time.monotonic() - self.started
def run():
    started = time.monotonic()
    return 'done', time.monotonic() - started
def test_it(watch):
    t0 = time.monotonic()
    assert time.monotonic() - t0 < 3  # planted
    elapsed = time.perf_counter() - t0
    assert elapsed < 3  # planted
    done, took = run()
    assert took < 5  # planted
    assert done == 'done'
    problems = []
    if elapsed > 9:  # planted
        problems.append('slow')
    seen = (1, time.time() - t0 < 4)  # planted
    times = {}
    times['a'] = time.monotonic() - t0
    assert max(times.values()) <= 2 * watch.seconds  # planted
    assert 'a' in times
    deadline = time.monotonic() + 60
    while time.monotonic() - t0 < 60 and time.monotonic() < deadline:
        break
    assert len(seen) == 2
"""


def test_the_scan_finds_each_form_of_a_wall_clock_check(tmp_path: Path) -> None:
    """Seen on planted checks (the lines marked `planted`): inline, through a name, a helper's
    tuple, a property, a container, an `if`, a stored comparison; a deadline loop, a count and
    a membership test are left alone."""
    root = tmp_path / "tests"
    root.mkdir()
    (root / "test_planted.py").write_text(PLANTED)
    planted = [n for n, line in enumerate(PLANTED.splitlines(), 1) if line.endswith("# planted")]
    assert [int(line.split(":")[1]) for line in wall_clock_checks(root)] == planted

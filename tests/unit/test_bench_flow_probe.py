"""bench/batch_day.py's FlowProbe stands in for the orchestrator's BatchFlow: it must answer
every step the sequence calls, or `make bench` stops mid-day (it lacked write_manifest once:
AttributeError after the last check). bench/ is not type-checked, so the two are held here."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from dlpipe.services.orchestrator.ports import BatchFlow

BENCH = Path(__file__).resolve().parents[2] / "bench" / "batch_day.py"


def _methods(class_name: str) -> set[str]:
    tree = ast.parse(BENCH.read_text(encoding="utf-8"))
    (found,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    return {n.name for n in found.body if isinstance(n, ast.FunctionDef)}


def test_the_bench_probe_answers_every_step_of_the_flow() -> None:
    """Every public method of BatchFlow has its FlowProbe twin."""
    steps = {name for name, _ in inspect.getmembers(BatchFlow) if not name.startswith("_")}
    assert steps - _methods("FlowProbe") == set()

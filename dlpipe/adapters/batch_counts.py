"""The batch item's counts and outcome sets as one UpdateItem writes them: the poller's
record of each check (`record_counts`) and the end of the batch (`finish`, which writes the
deciding check's again) build them here, once."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dlpipe.domain.model import SETS_MAX_FILES


def counts_update(
    values: dict[str, Any],
    *,
    completed: int,
    failed: int,
    error: int,
    completed_files: Iterable[str] | None,
    failed_files: Iterable[str] | None,
) -> tuple[str, list[str]]:
    """The SET clauses of the counts and of each given set (its values added to `values`),
    and the sets to REMOVE: an empty one, or one over SETS_MAX_FILES (a large day keeps
    counts only). A set given as None is left as it is stored."""
    values.update({":done": completed, ":failed": failed, ":errors": error})
    clauses = ["#cnt_done = :done", "#cnt_failed = :failed", "#cnt_error = :errors"]
    removed: list[str] = []
    for name, placeholder, files in (
        ("#done", ":dset", completed_files),
        ("#failed", ":fset", failed_files),
    ):
        if files is None:
            continue
        chosen = set(files)
        if chosen and len(chosen) <= SETS_MAX_FILES:
            clauses.append(f"{name} = {placeholder}")
            values[placeholder] = chosen
        else:
            removed.append(name)
    return ", ".join(clauses), removed

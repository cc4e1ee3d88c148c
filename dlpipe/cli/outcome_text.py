"""One line that says why a batch ended as it did: its cause and its errors grouped by code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpipe.domain.outcome import OutcomeSummary
from dlpipe.domain.statuses import SUCCESSFUL_BATCH_STATUSES


def outcome_text(outcome: Mapping[str, Any] | OutcomeSummary | None) -> str | None:
    """'cause; wrong_key: 20 (accounts-2026-02-28, ...)', or None when there is nothing to say."""
    if outcome is None:
        return None
    try:
        summary = (
            outcome
            if isinstance(outcome, OutcomeSummary)
            else OutcomeSummary.from_dict(dict(outcome))
        )
    except ValueError:
        return None
    return None if summary.is_empty else summary.text()


def counts_text(completed: int, failed: int, error: int, pending: int) -> str:
    """The job counts in the jobs table's own words (`failed` transient, `error` permanent)."""
    return f"{completed} completed, {failed} failed, {error} error, {pending} pending"


def result_line(result: Mapping[str, Any]) -> str:
    """The run's final line: 'batch B failed: 0 completed, 0 failed, 20 error, 0 pending;
    wrong_key: 20 (...)'."""
    counts = counts_text(
        int(result.get("completed", 0)),
        int(result.get("failed", 0)),
        int(result.get("error", 0)),
        int(result.get("pending", 0)),
    )
    line = f"batch {result.get('batch_id')} {result.get('status')}: {counts}"
    why = outcome_text(result.get("outcome"))
    line = f"{line}; {why}" if why else line
    problem = result.get("handoff_problem")
    return f"{line}; hand-off withheld: {problem}" if problem else line


def run_exit_code(result: Mapping[str, Any]) -> int:
    """A run's exit code: 0 for a day that completed and was handed off, else 1 (a withheld
    hand-off included: the day's event did not go out)."""
    ok = result.get("status") in SUCCESSFUL_BATCH_STATUSES and not result.get("handoff_problem")
    return 0 if ok else 1

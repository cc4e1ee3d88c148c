"""Every durable step and wait name of the orchestrator's execution, in one place.

The names are part of every in-flight execution's history: a replay finds a step's result by
its name, so renaming one (or changing how a numbered one is spelled) breaks the executions
running when the new code is deployed. Plain strings and pure functions, no imports.
"""

from __future__ import annotations

STEP_READ_FEED = "read-feed"  # feed_runs.py: the event's feed, looked up once
STEP_CREATE_BATCH = "create-batch"
STEP_FETCH_AND_QUEUE = "fetch-and-queue-files"
STEP_RESTATEMENT_CHECK = "restatement-check"  # recheck.py: a scheduled run's earlier days
STEP_FAIL_BATCH = "fail-batch"
STEP_WRITE_MANIFEST = "write-manifest"
STEP_PUBLISH_OUTCOME = "publish-outcome-event"  # announce.py
STEP_RECORD_PROBLEM = "record-handoff-problem"  # announce.py


def fetch_step_name(chunk: int) -> str:
    """Name of the n-th fetch-and-queue chunk (1-based); the first has no suffix, the name
    in-flight executions' histories already hold for it."""
    return STEP_FETCH_AND_QUEUE if chunk == 1 else f"{STEP_FETCH_AND_QUEUE}-{chunk}"


def is_fetch_step(name: str) -> bool:
    """True for every fetch-and-queue chunk step (they share the outage retry strategy)."""
    return name == STEP_FETCH_AND_QUEUE or name.startswith(f"{STEP_FETCH_AND_QUEUE}-")


def recheck_step_name(days_back: int) -> str:
    """Name of the window step for the day `days_back` days before the run's own (1-based)."""
    return f"{STEP_RESTATEMENT_CHECK}-{days_back}"


def check_step_name(poll_number: int) -> str:
    """Name of the n-th completion check (1-based): deterministic, so replays line up."""
    return f"check-completion-{poll_number}"


def wait_name(poll_number: int) -> str:
    """Name of the wait before the n-th completion check."""
    return f"poll-wait-{poll_number}"


def late_step_name(poll_number: int) -> str:
    """Name of the `Day Late` step after the n-th completion check."""
    return f"day-late-{poll_number}"

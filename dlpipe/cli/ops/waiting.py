"""The download queue's part of `dlpipe status`: depth, the oldest wait, the idle warning."""

from __future__ import annotations

from dlpipe.domain.waiting import WaitingWork, idle_warning
from dlpipe.services.ops.queries import DayStatus

# SQS gives depth only; the oldest message's age is CloudWatch's, so it is derived here.
AGE_SOURCE = "oldest available job, StatusIndex (when it became available)"


def waiting_payload(found: DayStatus) -> dict[str, object]:
    """`queue` and `idle_warning` of `status --json` (queue None: no queue configured)."""
    work = found.waiting
    queue: dict[str, object] | None = None
    if work is not None and work.depth is not None:
        queue = {
            "visible": work.depth.visible,
            "in_flight": work.depth.in_flight,
            "oldest_available_age_s": work.oldest_age_s,
            "oldest_available_from": AGE_SOURCE,
        }
    warning = None if found.idle_s is None else idle_warning(found.idle_s)
    return {"queue": queue, "idle_warning": warning}


def waiting_lines(found: DayStatus) -> list[str]:
    """The queue line, and the warning line when no worker takes the work."""
    lines = [_queue_line(found.waiting)]
    if found.idle_s is not None:
        lines.append(f"WARNING: {idle_warning(found.idle_s)}")
    return lines


def _queue_line(work: WaitingWork | None) -> str:
    if work is None or work.depth is None:
        return "download queue: not configured"
    age_s = work.oldest_age_s
    oldest = "no job available" if age_s is None else f"oldest available job waited {_span(age_s)}"
    depth = work.depth
    return f"download queue: {depth.visible} waiting, {depth.in_flight} in flight; {oldest}"


def _span(seconds: int) -> str:
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"

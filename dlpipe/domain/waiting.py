"""Waiting work: the download queue's depth, the age of its oldest waiting job, and the rule
that says no worker is consuming.

SQS reports a queue's depth (visible and in-flight messages) but not the age of its oldest
message (a CloudWatch metric, absent locally): that age is taken from the oldest `available`
job (StatusIndex, ascending StatusUpdatedAt, Limit 1), which is when it was (re)queued.
"""

from __future__ import annotations

from dataclasses import dataclass

# Long enough that a worker between two long polls, or a Lambda scaling up, never trips it.
DEFAULT_IDLE_WARNING_SECONDS = 300


@dataclass(frozen=True)
class QueueDepth:
    """ApproximateNumberOfMessages (visible) and ...NotVisible (in flight) of the download
    queues together (the large-file queue included when there is one)."""

    visible: int
    in_flight: int


@dataclass(frozen=True)
class WaitingWork:
    """The queues' depth (None: no queue configured) and when the oldest `available` job
    became available (None: no job is available), at `now_ms`."""

    depth: QueueDepth | None
    oldest_available_ms: int | None
    now_ms: int

    @property
    def oldest_age_s(self) -> int | None:
        """Seconds the oldest available job has waited, or None if none waits."""
        if self.oldest_available_ms is None:
            return None
        return max(0, self.now_ms - self.oldest_available_ms) // 1000


def idle_consumer_seconds(work: WaitingWork, threshold_s: int) -> int | None:
    """Seconds no worker has taken anything while jobs wait, or None when that is not the case.

    True (a number) only when all hold: a job is `available`, its queue message is waiting
    (visible > 0: a lost message is the sweeper's case, not a missing worker's), no message is
    in flight (a worker holding one is consuming, however long the backlog), and the oldest
    available job has waited at least `threshold_s`. The answer is that job's wait: a lower
    bound of how long the queue has gone undrained (SQS is not FIFO, so a worker may have
    taken younger messages meanwhile; then it would hold one in flight or the backlog would
    be gone)."""
    age_s = work.oldest_age_s
    if work.depth is None or age_s is None:
        return None
    if work.depth.visible == 0 or work.depth.in_flight > 0 or age_s < threshold_s:
        return None
    return age_s


def idle_warning(idle_s: int) -> str:
    """The one-line warning every surface (run, status, web view) shows."""
    minutes = idle_s // 60
    span = f"{minutes} min" if minutes else f"{idle_s} s"
    return f"no worker has received a message for {span} while jobs are available"

"""Waiting work: the download queues' depth, the age of their oldest waiting job, the rule
that says no worker is consuming, and, with a queue per feed, the rule that says one feed's
queue holds the threads while another feed's work waits.

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
    """The one-line warning every surface (run, status, web view) shows, with what to do."""
    return (
        f"no worker has received a message for {_span(idle_s)} while jobs are available"
        " (is one running? start one: dlpipe worker)"
    )


@dataclass(frozen=True)
class FeedQueue:
    """One feed's part of the download queues: its queue's depth and its available jobs.

    Feeds without a queue of their own share the deployment's: that queue's depth is on the
    first of them (default first) and `shared_with` names the others on every one of them, so
    a depth is shown once. `depth` None with `queue_url` set: shown on another feed's row;
    `queue_url` None: no queue is configured. `oldest_available_ms` and `slow` come from a
    bounded read of the available jobs, oldest first (`FeedQueues.truncated`)."""

    feed: str
    queue_url: str | None
    depth: QueueDepth | None
    oldest_available_ms: int | None  # None: none of this feed's jobs was seen available
    slow: int  # available jobs whose last error is provider_slow (abandoned below the floor)
    shared_with: tuple[str, ...] = ()

    def age_s(self, now_ms: int) -> int | None:
        """Seconds this feed's oldest available job has waited, or None."""
        if self.oldest_available_ms is None:
            return None
        return max(0, now_ms - self.oldest_available_ms) // 1000


@dataclass(frozen=True)
class FeedQueues:
    """Every known feed's queue row (default first), the shared large-file queue's depth,
    and whether the read of available jobs stopped at its cap (`read_cap`): then a feed's
    oldest wait may be missing (its jobs lie past the cap) and the slow counts are lower
    bounds."""

    rows: tuple[FeedQueue, ...]
    large: QueueDepth | None
    read_cap: int
    truncated: bool
    now_ms: int


@dataclass(frozen=True)
class Starving:
    """Work waiting on some feeds' queues, none of it in flight, for at least the threshold,
    while other feeds' queues hold every message in flight: the threads are theirs."""

    holders: tuple[tuple[str, int], ...]  # (feed, messages in flight), most first
    in_flight: int  # of every feed's queue (the shared large-file queue is no feed's)
    waiting: tuple[tuple[str, int, int], ...]  # (feed, messages visible, oldest wait in s)


def starving_feeds(queues: FeedQueues, threshold_s: int) -> Starving | None:
    """Starving when a feed's queue has messages visible and none in flight, its feeds' oldest
    available job has waited at least `threshold_s`, and another feed's queue holds messages
    in flight. One queue (every feed sharing it) is never starving: a worker holding its
    messages is consuming it, and with none in flight the idle rule speaks."""
    shown = [row for row in queues.rows if row.depth is not None]
    holders = sorted(
        ((row.feed, row.depth.in_flight) for row in shown if row.depth and row.depth.in_flight),
        key=lambda pair: (-pair[1], pair[0]),
    )
    waiting = []
    for row in shown:
        depth = row.depth
        if depth is None or depth.visible == 0 or depth.in_flight > 0:
            continue
        ages = [
            age
            for other in queues.rows
            if other.feed == row.feed or other.feed in row.shared_with
            if (age := other.age_s(queues.now_ms)) is not None
        ]
        if ages and max(ages) >= threshold_s:
            waiting.append((row.feed, depth.visible, max(ages)))
    if not holders or not waiting:
        return None
    total = sum(held for _, held in holders)
    return Starving(tuple(holders), total, tuple(waiting))


def starving_warning(starving: Starving) -> str:
    """One line naming who holds the threads and who waits:
    'vendor-b holds 4 of 4 in flight; 11 waiting on default for 10 min'."""
    (first, held), *others = starving.holders
    holders = ", ".join([f"{first} holds {held}", *(f"{f} {n}" for f, n in others)])
    waiting = ", ".join(
        f"{visible} waiting on {feed} for {_span(age_s)}"
        for feed, visible, age_s in starving.waiting
    )
    return f"{holders} of {starving.in_flight} in flight; {waiting}"


def _span(seconds: int) -> str:
    minutes = seconds // 60
    return f"{minutes} min" if minutes else f"{seconds} s"

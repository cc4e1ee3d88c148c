"""Which feed a free downloader thread serves next: a cap per feed, fairness between feeds.

Each feed has its own download queue (on AWS a queue and event source mapping per feed, whose
`maximum_concurrency` is the feed's share; docs/ARCHITECTURE.md, "Why each feed has its own
queue"). A long-poll worker's threads are shared by the feeds' queues, its lanes:

- a lane holds at most its cap of the threads: all of them when it is the only lane, else
  `max_share_percent` of them (at least one), so the other feeds always find room;
- a message is received for a lane only when that lane is under its cap, so a worker never
  receives a message just to hand it back (each hand-back spends one of the message's receives
  and walks it toward the dead-letter queue);
- a free thread takes the waiting message of the lane holding the fewest threads (fair by
  messages in flight, not first come), and of equal lanes the one waiting longest; within a
  lane, messages come in the queue's own order.

Plain rules, no I/O: dlpipe/entrypoints/lanes.py runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_MAX_SHARE_PERCENT = 50


def lane_cap(concurrency: int, share_percent: int, lanes: int) -> int:
    """Threads one lane may hold of `concurrency`: all of them when it is the only lane, else
    its share, rounded down, and at least one."""
    if lanes <= 1:
        return concurrency
    return max(1, concurrency * share_percent // 100)


@dataclass(frozen=True)
class LaneLoad:
    """One lane as the choice sees it."""

    name: str
    cap: int
    held: int  # threads working on this lane's messages
    waiting_since: float | None  # when its received, not yet taken message arrived; None: none


def may_receive(lane: LaneLoad, has_message: bool) -> bool:
    """A lane receives its next message only when it has none waiting and is under its cap."""
    return not has_message and lane.held < lane.cap


def next_lane(lanes: Sequence[LaneLoad]) -> LaneLoad | None:
    """The lane whose waiting message a free thread takes: under its cap, fewest threads held,
    then waiting longest; None when no lane has a message it may hand out."""
    ready = [lane for lane in lanes if lane.waiting_since is not None and lane.held < lane.cap]
    return min(ready, key=lambda lane: (lane.held, lane.waiting_since), default=None)

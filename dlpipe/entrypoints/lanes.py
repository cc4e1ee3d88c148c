"""A long-poll worker's inbox over several feeds' queues (its lanes), capped and fair.

The Worker's threads ask `receive` for their next message as they would ask one queue. Each
lane has one receiver thread that long-polls its queue only while a worker thread is waiting
for work, the lane has no received message waiting, and it holds fewer threads than its cap;
a free thread then takes the waiting message that dlpipe.domain.lanes.next_lane picks (the lane
holding the fewest threads). So an idle feed costs one open long poll and no worker thread, a
feed never holds more than its cap, and no message is received to be handed back.

A received message waits for a thread at most while every thread is busy; it is received
hidden for the short receive window only, renewed while it waits
(dlpipe.entrypoints.receive_window), so the lanes of a killed or frozen worker give it back
within that window. A lane whose queue cannot be reached backs off by itself (one log
line when it fails, one when it answers again); only when every lane fails does `receive`
raise QueueUnavailableError, so the worker's dependency gate pauses as it does for one queue.
`refresh` adds the lanes of feeds configured after the start (their queues appear on AWS
when Terraform adds the feed).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dlpipe.adapters.download_queue import DownloadQueue, MessageVisibility, Received
from dlpipe.bootstrap.worker_queues import FeedQueue
from dlpipe.domain.download_errors import QueueUnavailableError
from dlpipe.domain.lanes import LaneLoad, lane_cap, may_receive, next_lane
from dlpipe.entrypoints.receive_window import RECEIVE_WINDOW_S, TICK_S, renew_every_s
from dlpipe.log import get_logger

log = get_logger()
_BACKOFF_FIRST_S = 1.0
_BACKOFF_MAX_S = 30.0
_REFRESH_EVERY_S = 60.0


@dataclass
class _Lane:
    spec: FeedQueue
    cap: int = 1
    held: int = 0
    waiting: Received | None = None
    waiting_since: float = 0.0
    extended_at: float = 0.0
    polling: bool = False
    failing: BaseException | None = None

    def load(self) -> LaneLoad:
        since = self.waiting_since if self.waiting is not None else None
        return LaneLoad(self.spec.name, self.cap, self.held, since)


class LaneInbox:
    """The Worker's queue over several lanes: receive, delete, visibility, settled."""

    def __init__(
        self,
        lanes: Sequence[FeedQueue],
        concurrency: int,
        *,
        wait_s: int = 20,
        visibility_s: int = RECEIVE_WINDOW_S,
        refresh: Callable[[], Sequence[FeedQueue]] | None = None,
    ) -> None:
        self._concurrency, self._wait_s, self._visibility_s = concurrency, wait_s, visibility_s
        self._refresh = refresh
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._lanes: dict[str, _Lane] = {}  # by queue URL
        self._owner: dict[str, _Lane] = {}  # receipt handle -> the lane of a taken message
        self._demand = 0  # worker threads waiting in receive
        for spec in lanes:
            self._add(spec)
        if refresh is not None:
            self._start(self._refresh_loop, "lanes-refresh")

    def caps(self) -> dict[str, int]:
        """Each lane's cap now (it shrinks as lanes are added)."""
        with self._cond:
            return {lane.spec.name: lane.cap for lane in self._lanes.values()}

    # --- what the Worker calls -------------------------------------------------------------

    def receive(self, *, max_messages: int, wait_s: int, visibility_s: int) -> list[Received]:
        """The next message of the fairest lane, or [] after `wait_s`; QueueUnavailableError
        when every lane's queue is failing. One message at a time (`max_messages` is ignored:
        a thread's second message would be one more the lane holds)."""
        del max_messages, visibility_s  # the lanes receive with their own
        end = time.monotonic() + wait_s
        with self._cond:
            self._demand += 1
            self._cond.notify_all()
            try:
                while True:
                    taken = self._take()
                    if taken is not None:
                        return [taken]
                    failure = self._all_failing()
                    if failure is not None:
                        raise QueueUnavailableError(str(failure)) from failure
                    left = end - time.monotonic()
                    if left <= 0 or (self._closed.is_set() and not self._pending()):
                        return []
                    self._cond.wait(min(left, 0.5))
            finally:
                self._demand -= 1

    def settled(self, message: Received) -> None:
        """The thread is done with `message` (acknowledged, deferred or handed back)."""
        with self._cond:
            lane = self._owner.pop(message.receipt_handle, None)
            if lane is not None:
                lane.held -= 1
                self._cond.notify_all()

    def delete(self, message: Received) -> None:
        """Acknowledge `message` on its lane's queue."""
        self._queue_of(message).delete(message)

    def visibility(self, message: Received) -> MessageVisibility:
        """`message`'s visibility on its lane's queue."""
        return self._queue_of(message).visibility(message)

    def has_pending(self) -> bool:
        """A message is waiting, or a long poll is open that may still return one."""
        with self._cond:
            return self._pending()

    def close(self) -> None:
        """Start no new long poll; what open ones return is still handed out."""
        self._closed.set()
        with self._cond:
            self._cond.notify_all()

    def release_waiting(self) -> None:
        """Hand back the messages no thread took (the worker has stopped)."""
        with self._cond:
            left = [(lane, lane.waiting) for lane in self._lanes.values() if lane.waiting]
            for lane, _ in left:
                lane.waiting = None
        for lane, message in left:
            if message is not None:
                lane.spec.queue.visibility(message)(0)

    # --- the lanes ---------------------------------------------------------------------------

    def _add(self, spec: FeedQueue) -> None:
        """Called holding the lock, or before any thread runs."""
        lane = _Lane(spec)
        self._lanes[spec.queue.queue_url] = lane
        count = len(self._lanes)
        for each in self._lanes.values():
            each.cap = lane_cap(self._concurrency, each.spec.share_percent, count)
        self._start(lambda: self._receive_loop(lane), f"lane-{spec.name}")

    def _start(self, target: Callable[[], None], name: str) -> threading.Thread:
        context = contextvars.copy_context()
        thread = threading.Thread(target=context.run, args=(target,), name=name, daemon=True)
        thread.start()
        return thread

    def _take(self) -> Received | None:
        chosen = next_lane([lane.load() for lane in self._lanes.values()])
        if chosen is None:
            return None
        lane = next(each for each in self._lanes.values() if each.spec.name == chosen.name)
        message, lane.waiting = lane.waiting, None
        assert message is not None
        lane.held += 1
        self._owner[message.receipt_handle] = lane
        self._cond.notify_all()
        return message

    def _pending(self) -> bool:
        return any(lane.waiting is not None or lane.polling for lane in self._lanes.values())

    def _all_failing(self) -> BaseException | None:
        failures = [lane.failing for lane in self._lanes.values()]
        if failures and all(failures):
            return failures[-1]
        return None

    def _queue_of(self, message: Received) -> DownloadQueue:
        with self._cond:
            lane = self._owner.get(message.receipt_handle)
        if lane is None:
            raise KeyError("a message this inbox did not hand out")
        return lane.spec.queue

    def _wanted(self, lane: _Lane) -> bool:
        """Receive for `lane` now? Only for a thread waiting that no other message serves."""
        waiting = sum(1 for other in self._lanes.values() if other.waiting is not None)
        return self._demand > waiting and may_receive(lane.load(), lane.waiting is not None)

    def _receive_loop(self, lane: _Lane) -> None:
        backoff_s = 0.0
        while not self._closed.is_set():
            with self._cond:
                while not self._closed.is_set() and not self._wanted(lane):
                    self._cond.wait(TICK_S)
                    self._extend(lane)
                if self._closed.is_set():
                    return
                lane.polling = True
            try:
                messages = lane.spec.queue.receive(
                    max_messages=1, wait_s=self._wait_s, visibility_s=self._visibility_s
                )
            except QueueUnavailableError as exc:
                backoff_s = min(_BACKOFF_MAX_S, max(_BACKOFF_FIRST_S, backoff_s * 2))
                self._failed(lane, exc)
                self._closed.wait(backoff_s)
                continue
            backoff_s = 0.0
            self._answered(lane, messages)

    def _failed(self, lane: _Lane, exc: QueueUnavailableError) -> None:
        with self._cond:
            first = lane.failing is None
            lane.failing, lane.polling = exc, False
            self._cond.notify_all()
        if first:
            log.warning("worker.lane_unavailable", lane=lane.spec.name, error=str(exc))

    def _answered(self, lane: _Lane, messages: list[Received]) -> None:
        with self._cond:
            recovered = lane.failing is not None
            lane.failing, lane.polling = None, False
            if messages:
                lane.waiting, lane.waiting_since = messages[0], time.monotonic()
            self._cond.notify_all()
        if recovered:
            log.info("worker.lane_available", lane=lane.spec.name)

    def _extend(self, lane: _Lane) -> None:
        """Keep a message that waits for a thread hidden (called holding the lock)."""
        message = lane.waiting
        now = time.monotonic()
        if message is None or now - max(lane.waiting_since, lane.extended_at) < renew_every_s(
            self._visibility_s
        ):
            return
        lane.extended_at = now
        lane.spec.queue.visibility(message)(self._visibility_s)

    def _refresh_loop(self) -> None:
        assert self._refresh is not None
        while not self._closed.wait(_REFRESH_EVERY_S):
            try:
                specs = self._refresh()
            except Exception as exc:  # noqa: BLE001 - a failed re-read keeps the lanes it has
                log.warning("worker.lanes_refresh_failed", error=str(exc))
                continue
            with self._cond:
                for spec in specs:
                    if spec.queue.queue_url not in self._lanes:
                        log.info("worker.lane_added", lane=spec.name)
                        self._add(spec)

"""The feeds' lanes: a cap per feed and fairness between feeds (dlpipe.domain.lanes), and the
inbox that runs them over in-process fake queues (dlpipe.entrypoints.lanes)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import pytest

from dlpipe.adapters.download_queue import Received
from dlpipe.bootstrap.worker_queues import FeedQueue
from dlpipe.domain.download_errors import QueueUnavailableError
from dlpipe.domain.lanes import LaneLoad, lane_cap, may_receive, next_lane
from dlpipe.entrypoints.lanes import LaneInbox


def test_a_lone_lane_holds_every_thread_and_others_their_share() -> None:
    assert lane_cap(4, 50, 1) == 4
    assert lane_cap(4, 50, 3) == 2
    assert lane_cap(3, 50, 2) == 1
    assert lane_cap(1, 50, 2) == 1  # never none
    assert lane_cap(8, 100, 5) == 8


def test_the_lane_holding_fewest_threads_goes_first_then_the_longest_waiting() -> None:
    big = LaneLoad("big", cap=2, held=1, waiting_since=1.0)
    small = LaneLoad("small", cap=2, held=0, waiting_since=5.0)
    other = LaneLoad("other", cap=2, held=0, waiting_since=3.0)
    assert next_lane([big, small]) == small
    assert next_lane([big, small, other]) == other
    assert next_lane([LaneLoad("full", cap=1, held=1, waiting_since=0.0)]) is None
    assert next_lane([LaneLoad("idle", cap=2, held=0, waiting_since=None)]) is None


def test_a_lane_receives_only_under_its_cap_and_with_nothing_waiting() -> None:
    assert may_receive(LaneLoad("a", 2, 1, None), has_message=False)
    assert not may_receive(LaneLoad("a", 2, 2, None), has_message=False)
    assert not may_receive(LaneLoad("a", 2, 0, 1.0), has_message=True)


class FakeQueue:
    """A queue with a long poll: receive waits (briefly) for a message or returns []."""

    def __init__(self, url: str, bodies: list[str] | None = None) -> None:
        self.queue_url = url
        self._messages: deque[Received] = deque()
        self._cond = threading.Condition()
        self.received = 0
        self.deleted: list[str] = []
        self.visibilities: list[tuple[str, int]] = []
        self.fail: Exception | None = None
        self.delay_s = 0.0  # a long poll that answers this late
        for body in bodies or []:
            self.put(body)

    def put(self, body: str) -> None:
        with self._cond:
            n = len(self.deleted) + len(self._messages) + self.received
            self._messages.append(Received(f"{self.queue_url}-{n}", f"{body}-rh-{n}", body))
            self._cond.notify_all()

    def receive(self, *, max_messages: int, wait_s: int, visibility_s: int) -> list[Received]:
        if self.fail is not None:
            raise QueueUnavailableError("down") from self.fail
        time.sleep(self.delay_s)
        with self._cond:
            self._cond.wait_for(lambda: bool(self._messages), timeout=min(wait_s, 0.2))
            if not self._messages:
                return []
            self.received += 1
            return [self._messages.popleft()]

    def delete(self, message: Received) -> None:
        self.deleted.append(message.body)

    def hide(self, messages: Any, seconds: int) -> None:
        pass

    def visibility(self, message: Received) -> Callable[[int], None]:
        return lambda seconds: self.visibilities.append((message.body, seconds))


def _inbox(*queues: FakeQueue, concurrency: int = 4, share: int = 50) -> LaneInbox:
    specs = [FeedQueue(q.queue_url, q, share) for q in queues]  # type: ignore[arg-type]
    return LaneInbox(specs, concurrency, wait_s=1, visibility_s=300)


def _take(inbox: LaneInbox) -> Received:
    got = inbox.receive(max_messages=1, wait_s=2, visibility_s=300)
    assert got, "no message within 2 s"
    return got[0]


def test_a_feed_never_holds_more_than_its_cap_and_a_quiet_feed_goes_first() -> None:
    big = FakeQueue("big", [f"b{n}" for n in range(50)])
    small = FakeQueue("small")
    inbox = _inbox(big, small)
    try:
        held = [_take(inbox), _take(inbox)]
        assert [m.body for m in held] == ["b0", "b1"]
        # Big is at its cap (2 of 4): a third thread waits although big has 48 more.
        assert inbox.receive(max_messages=1, wait_s=1, visibility_s=300) == []
        small.put("s0")
        assert _take(inbox).body == "s0"  # the quiet feed's file is served at once
        inbox.settled(held[0])
        assert _take(inbox).body.startswith("b")  # big gets its freed thread back
        assert big.received <= 4  # at most one message waits per lane beyond what is held
        assert big.visibilities == []  # nothing was received only to be handed back
    finally:
        inbox.close()


def test_two_backlogs_split_the_threads_by_their_caps() -> None:
    a = FakeQueue("a", [f"a{n}" for n in range(20)])
    b = FakeQueue("b", [f"b{n}" for n in range(20)])
    inbox = _inbox(a, b, concurrency=4, share=50)
    try:
        held = [_take(inbox) for _ in range(4)]
        assert sorted(m.body[0] for m in held) == ["a", "a", "b", "b"]
    finally:
        inbox.close()


def test_one_unreachable_queue_costs_the_other_feeds_nothing() -> None:
    broken = FakeQueue("broken")
    broken.fail = RuntimeError("AccessDenied")
    fine = FakeQueue("fine", ["f0", "f1"])
    inbox = _inbox(broken, fine)
    try:
        assert _take(inbox).body == "f0"
        assert _take(inbox).body == "f1"
    finally:
        inbox.close()


def test_every_queue_unreachable_is_an_outage_the_worker_sees() -> None:
    a, b = FakeQueue("a"), FakeQueue("b")
    a.fail = b.fail = RuntimeError("Throttling")
    inbox = _inbox(a, b)
    try:
        time.sleep(0.1)  # the first probe: a thread must be waiting for the lanes to poll
        with pytest.raises(QueueUnavailableError):
            inbox.receive(max_messages=1, wait_s=2, visibility_s=300)
    finally:
        inbox.close()


def test_acknowledging_and_visibility_go_to_the_message_s_own_queue() -> None:
    a, b = FakeQueue("a", ["a0"]), FakeQueue("b")
    inbox = _inbox(a, b)
    try:
        message = _take(inbox)
        inbox.visibility(message)(30)
        inbox.delete(message)
        inbox.settled(message)
        assert a.visibilities == [("a0", 30)]
        assert a.deleted == ["a0"]
        assert b.deleted == []
    finally:
        inbox.close()


def test_at_the_stop_a_message_no_thread_took_is_handed_back() -> None:
    late = FakeQueue("late", ["l0"])
    late.delay_s = 2.0
    inbox = _inbox(late, FakeQueue("other"))
    try:
        # The thread gives up before the long poll it caused answers: l0 then waits.
        assert inbox.receive(max_messages=1, wait_s=1, visibility_s=300) == []
        deadline = time.monotonic() + 60
        while late.received == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)  # the answer reaches its lane
        inbox.close()
        assert inbox.has_pending()
        inbox.release_waiting()
        assert late.visibilities == [("l0", 0)]
        assert not inbox.has_pending()
    finally:
        inbox.close()

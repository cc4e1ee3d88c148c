"""The idle-consumer rule: when the status views warn that no worker takes the queue's work."""

from __future__ import annotations

import pytest

from dlpipe.domain.waiting import (
    FeedQueue,
    FeedQueues,
    QueueDepth,
    WaitingWork,
    idle_consumer_seconds,
    idle_warning,
    starving_feeds,
    starving_warning,
)

NOW_MS = 1_000_000_000_000
THRESHOLD_S = 300


def _work(
    visible: int = 5, in_flight: int = 0, waited_s: int | None = 600, queue: bool = True
) -> WaitingWork:
    oldest = None if waited_s is None else NOW_MS - waited_s * 1000
    return WaitingWork(QueueDepth(visible, in_flight) if queue else None, oldest, NOW_MS)


def test_waiting_messages_nothing_in_flight_and_an_old_available_job_is_an_idle_consumer() -> None:
    """Messages wait, none is in flight, the oldest available job waited 10 min: 600 s idle."""
    assert idle_consumer_seconds(_work(), THRESHOLD_S) == 600


def test_the_threshold_itself_counts_as_idle() -> None:
    """A job waiting exactly the threshold trips the warning; one second less does not."""
    assert idle_consumer_seconds(_work(waited_s=THRESHOLD_S), THRESHOLD_S) == THRESHOLD_S
    assert idle_consumer_seconds(_work(waited_s=THRESHOLD_S - 1), THRESHOLD_S) is None


@pytest.mark.parametrize(
    ("work", "why"),
    [
        (_work(in_flight=1), "a worker holds a message"),
        (_work(visible=0), "no message waits (lost ones are the sweeper's case)"),
        (_work(waited_s=None), "no job is available"),
        (_work(queue=False), "no queue is configured"),
    ],
)
def test_no_warning_when_the_queue_is_consumed_or_nothing_waits(
    work: WaitingWork, why: str
) -> None:
    """Each condition alone clears the warning."""
    assert idle_consumer_seconds(work, THRESHOLD_S) is None, why


def test_an_available_job_from_the_future_waited_zero_seconds() -> None:
    """Clock skew between writer and reader never makes a negative age."""
    assert _work(waited_s=-30).oldest_age_s == 0


def test_the_warning_names_whole_minutes_or_seconds_under_one() -> None:
    """One wording on every surface."""
    assert (
        idle_warning(605) == "no worker has received a message for 10 min while jobs are available"
        " (is one running? start one: dlpipe worker)"
    )
    assert idle_warning(45).startswith(
        "no worker has received a message for 45 s while jobs are available ("
    )


def _row(
    feed: str,
    visible: int | None = 0,
    in_flight: int = 0,
    waited_s: int | None = None,
    shared_with: tuple[str, ...] = (),
) -> FeedQueue:
    depth = None if visible is None else QueueDepth(visible, in_flight)
    oldest = None if waited_s is None else NOW_MS - waited_s * 1000
    return FeedQueue(feed, f"https://sqs/{feed}", depth, oldest, 0, shared_with)


def _queues(*rows: FeedQueue) -> FeedQueues:
    return FeedQueues(rows, None, read_cap=1000, truncated=False, now_ms=NOW_MS)


def test_one_feeds_queue_holding_every_message_in_flight_starves_the_others() -> None:
    """vendor-b holds 4 in flight; default's 11 wait, none in flight, oldest 10 min: named."""
    queues = _queues(
        _row("default", visible=11, waited_s=600), _row("vendor-b", visible=3, in_flight=4)
    )
    starving = starving_feeds(queues, THRESHOLD_S)
    assert starving is not None
    assert starving_warning(starving) == (
        "vendor-b holds 4 of 4 in flight; 11 waiting on default for 10 min"
    )


def test_several_holders_and_waiters_are_each_named() -> None:
    """Holders most first; every starved feed with its depth and wait."""
    queues = _queues(
        _row("default", visible=2, waited_s=400),
        _row("vendor-b", in_flight=1),
        _row("vendor-c", in_flight=3),
        _row("vendor-d", visible=5, waited_s=900),
    )
    starving = starving_feeds(queues, THRESHOLD_S)
    assert starving is not None
    assert starving_warning(starving) == (
        "vendor-c holds 3, vendor-b 1 of 4 in flight;"
        " 2 waiting on default for 6 min, 5 waiting on vendor-d for 15 min"
    )


@pytest.mark.parametrize(
    ("rows", "why"),
    [
        ((_row("default", visible=11, waited_s=600),), "no queue holds anything: the idle rule"),
        (
            (_row("default", visible=11, in_flight=1, waited_s=600), _row("b", in_flight=4)),
            "default's queue is consumed too",
        ),
        (
            (_row("default", visible=11, waited_s=THRESHOLD_S - 1), _row("b", in_flight=4)),
            "default's oldest has not waited the threshold",
        ),
        (
            (_row("default", visible=11), _row("b", in_flight=4)),
            "no job of default's was seen available (past the read's cap)",
        ),
        (
            (
                _row("default", visible=11, in_flight=4, shared_with=("b",)),
                _row("b", visible=None, waited_s=600, shared_with=("default",)),
            ),
            "one shared queue, held: it is being consumed",
        ),
    ],
)
def test_no_starving_warning(rows: tuple[FeedQueue, ...], why: str) -> None:
    """Each case alone clears the warning."""
    assert starving_feeds(_queues(*rows), THRESHOLD_S) is None, why


def test_a_shared_queue_waits_for_its_feeds_oldest_job() -> None:
    """default and vendor-c share one queue (its depth on default's row); vendor-c's job is
    the one that waited: the queue starves under vendor-b's in-flight messages."""
    queues = _queues(
        _row("default", visible=2, waited_s=10, shared_with=("vendor-c",)),
        _row("vendor-b", in_flight=2),
        _row("vendor-c", visible=None, waited_s=700, shared_with=("default",)),
    )
    starving = starving_feeds(queues, THRESHOLD_S)
    assert starving is not None
    assert starving.waiting == (("default", 2, 700),)

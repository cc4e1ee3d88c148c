"""The idle-consumer rule: when the status views warn that no worker takes the queue's work."""

from __future__ import annotations

import pytest

from dlpipe.domain.waiting import QueueDepth, WaitingWork, idle_consumer_seconds, idle_warning

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
    )
    assert idle_warning(45) == "no worker has received a message for 45 s while jobs are available"

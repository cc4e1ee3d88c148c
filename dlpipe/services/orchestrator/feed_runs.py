"""Which feed's day an event runs, and with what: the feed's flow, polling plan and time zone.

The event names the feed (absent: the default feed); the wiring (dlpipe/bootstrap/orchestrator.py)
answers with that feed's FeedRun, built from its settings. A feed no configuration names
fails the execution at once with InvalidEventError, one line naming it: retrying cannot make
it known, and another feed's day must never run in its place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dlpipe.domain.events import InvalidEventError, PollingRequest, event_feed, parse_event
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, FeedError
from dlpipe.feed_settings import UnknownFeedError
from dlpipe.services.orchestrator.handoff import DayDeadline
from dlpipe.services.orchestrator.ports import BatchFlow


@dataclass(frozen=True)
class PollingPlan:
    """How often and how many times to check a batch for completion."""

    poll_interval_seconds: int
    max_polls: int
    # When the feed's day is due: `Day Late` goes out once it passes while the batch runs.
    deadline: DayDeadline | None = None

    def __post_init__(self) -> None:
        if self.poll_interval_seconds < 1 or self.max_polls < 1:
            raise ValueError(f"poll interval and max polls must be at least 1, got {self}")


@dataclass(frozen=True)
class FeedRun:
    """One feed's day: its flow (built on first use, inside a step), its polling plan, and
    the time zone whose calendar day a scheduled event's time falls on."""

    flow: Callable[[], BatchFlow]
    plan: PollingPlan
    time_zone: str = "UTC"


# A feed's FeedRun by its name; FeedError (one line) when it is not configured or invalid.
FeedRuns = Callable[[str], FeedRun]


def single_feed(flow: Callable[[], BatchFlow], plan: PollingPlan) -> FeedRuns:
    """The default feed alone, on `flow` and `plan` (every other feed is unknown)."""

    def run_of(name: str) -> FeedRun:
        if name != DEFAULT_FEED_NAME:
            raise UnknownFeedError(name)
        return FeedRun(flow, plan)

    return run_of


def served_request(
    event: object, date_offset_days: int, runs: FeedRuns
) -> tuple[PollingRequest, FeedRun]:
    """The event's request and its feed's run; InvalidEventError for an invalid event or a
    feed that is not configured (the feed first: its time zone dates a scheduled event)."""
    feed = event_feed(event)
    try:
        run = runs(feed)
    except FeedError as exc:
        raise InvalidEventError(str(exc)) from exc
    return parse_event(event, date_offset_days, run.time_zone), run

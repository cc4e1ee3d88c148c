"""Which feed's day an event runs, and with what: the feed's flow, polling plan and time zone.

The event names the feed (absent: the default feed). Its configuration is looked up in the
execution's first step, `read-feed`, because on AWS a named feed's is an SSM parameter: a
throttled, failing or unreachable SSM (DependencyUnavailableError) is retried by the durable
shell after suspended backoffs within the AWS outage budget, like every step's. The step's
checkpoint is the feed's fields (a few hundred bytes), so a replay reads no parameter and the
whole execution runs on one reading of it. The run (FeedRun) is then built from those fields
without I/O, by the wiring (dlpipe/bootstrap/orchestrator.py).

A feed no configuration names, or whose configuration is invalid or may not be read (AWS
refused the read for good: IAM grants the orchestrator only the configured feeds' parameters),
fails the execution at once with InvalidEventError, one line naming it: retrying cannot make
it known, and another feed's day must never run in its place. The refusal is the step's
result, not its error, so it is never retried; nothing (no batch, no job) has been written
when it fails the execution.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dlpipe.domain.errors import AwsRequestError
from dlpipe.domain.events import InvalidEventError, PollingRequest, event_feed, parse_event
from dlpipe.domain.feeds import (
    DEFAULT_FEED,
    DEFAULT_FEED_NAME,
    Feed,
    FeedError,
    feed_fields,
    feed_from_fields,
)
from dlpipe.feed_settings import UnknownFeedError
from dlpipe.services.orchestrator.announce import DayDeadline
from dlpipe.services.orchestrator.ports import BatchFlow, StepFailed, StepRunner
from dlpipe.services.orchestrator.step_names import STEP_READ_FEED


@dataclass(frozen=True)
class PollingPlan:
    """How often and how many times to check a batch for completion."""

    poll_interval_seconds: int
    max_polls: int
    # When the feed's day is due: `Day Late` goes out once it passes while the batch runs.
    deadline: DayDeadline | None = None
    # Earlier days a scheduled run re-lists for restatements (recheck.py; 0: none).
    restatement_window_days: int = 0

    def __post_init__(self) -> None:
        if self.poll_interval_seconds < 1 or self.max_polls < 1 or self.restatement_window_days < 0:
            raise ValueError(f"poll interval and max polls must be at least 1, got {self}")


@dataclass(frozen=True)
class FeedRun:
    """One feed's day: its flow (built on first use, inside a step), its polling plan, and
    the time zone whose calendar day a scheduled event's time falls on."""

    flow: Callable[[], BatchFlow]
    plan: PollingPlan
    time_zone: str = "UTC"


@dataclass(frozen=True)
class FeedRuns:
    """Each feed's run by its name, in two halves: `lookup` reads the feed's configuration
    (I/O: on AWS a named feed's SSM parameter; UnknownFeedError or FeedError, one line, when
    there is none or it is invalid; DependencyUnavailableError while SSM is unavailable), and
    `run_of` builds its run from it without I/O (FeedError for settings that cannot run)."""

    lookup: Callable[[str], Feed]
    run_of: Callable[[Feed], FeedRun]


def single_feed(flow: Callable[[], BatchFlow], plan: PollingPlan) -> FeedRuns:
    """The default feed alone, on `flow` and `plan` (every other feed is unknown)."""

    def lookup(name: str) -> Feed:
        if name != DEFAULT_FEED_NAME:
            raise UnknownFeedError(name)
        return DEFAULT_FEED

    return FeedRuns(lookup, lambda _feed: FeedRun(flow, plan))


def served_request(
    steps: StepRunner, event: object, date_offset_days: int, runs: FeedRuns
) -> tuple[PollingRequest, FeedRun]:
    """The event's request and its feed's run, the feed read in step `read-feed`.

    InvalidEventError for an invalid event or a feed that is not configured (the feed first:
    its time zone dates a scheduled event); StepFailed, naming the feed, when the lookup failed
    for good (SSM unavailable past the AWS outage budget, say).
    """
    name = event_feed(event)
    try:
        found = steps.step(STEP_READ_FEED, functools.partial(_read_feed, runs.lookup, name))
    except StepFailed as exc:
        raise StepFailed(f"feed {name!a}: {exc}") from exc
    if "refused" in found:
        raise InvalidEventError(str(found["refused"]))
    try:
        run = runs.run_of(feed_from_fields(name, found["feed"]))
    except FeedError as exc:
        raise InvalidEventError(str(exc)) from exc
    return parse_event(event, date_offset_days, run.time_zone), run


def _read_feed(lookup: Callable[[str], Feed], name: str) -> dict[str, Any]:
    """Step read-feed: the feed's fields, or the one line refusing it. Any other error (SSM
    unavailable) escapes, for the step's retries."""
    try:
        return {"feed": feed_fields(lookup(name))}
    except FeedError as exc:
        return {"refused": str(exc)}
    except AwsRequestError as exc:
        # A refusal that will not pass (AccessDenied: a parameter outside the feeds' path the
        # orchestrator may read). An unknown feed under that path is ParameterNotFound: a
        # FeedError above.
        return {"refused": f"feed {name!a}: {exc}"}

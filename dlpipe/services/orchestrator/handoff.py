"""The hand-off: the outcome event once a batch has ended, and `Day Late` while it runs past its
feed's deadline (the events: dlpipe/domain/handoff_events.py; the bus: an EventSender port).

Both are durable steps, so a replay finds their checkpoint and sends nothing again:
- `publish-outcome-event`, on every path that ends the batch, after the batch's final status
  (and its manifest) are written. A send that fails for good fails the execution (logged
  `batch.event_unsent`): the batch item is final either way, but a consumer waiting for the
  day must not be left without a word, so the failure is as loud as the execution's.
- `day-late-{n}`, after each poll that leaves the batch running, only while the feed has a
  deadline and no `Day Late` went out yet: its body reads the flow's clock (time is read in a
  step, so a replay decides the same) and sends the event once the deadline has passed. Its
  failure is logged and the next poll's step tries again; at most one `Day Late` succeeds per
  execution.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from dlpipe.domain.clock import Clock, iso_from_ms
from dlpipe.domain.feeds import Feed
from dlpipe.domain.freshness import deadline_ms
from dlpipe.domain.handoff_events import (
    DAY_LATE,
    STILL_RUNNING,
    DayCounts,
    DayFacts,
    HandoffEvent,
    build_event,
    detail_type_for,
)
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.ports import StepFailed

if TYPE_CHECKING:
    from dlpipe.services.orchestrator.ports import (
        BatchFlow,
        BatchRunResult,
        CompletionCheck,
        StepRunner,
    )

log = get_logger(component="orchestrator")

# Step names are part of every in-flight execution's history: renaming one breaks replay.
STEP_PUBLISH_OUTCOME = "publish-outcome-event"


def late_step_name(poll_number: int) -> str:
    """Name of the `Day Late` step after the n-th completion check."""
    return f"day-late-{poll_number}"


class EventSender(Protocol):
    """The event bus (dlpipe/adapters/events.py on EventBridge)."""

    def send(self, event: HandoffEvent) -> None:
        """Put `event` on the bus, or raise: DependencyUnavailableError while the bus is
        throttling or failing (the durable retry waits it out), another error if it refused."""
        ...


@dataclass(frozen=True)
class DayDeadline:
    """When a feed's day is due: `local_time` (HH:MM) in `time_zone`, on the day the schedule
    runs for the date (dlpipe/domain/freshness.py)."""

    local_time: str
    time_zone: str = "UTC"
    date_offset_days: int = 1

    def at_ms(self, polling_date: str) -> int:
        """Epoch ms at which `polling_date`'s day is due."""
        return deadline_ms(polling_date, self.local_time, self.time_zone, self.date_offset_days)


def feed_deadline(feed: Feed, date_offset_days: int = 1) -> DayDeadline | None:
    """A validated feed's deadline (None when it declares none): how a named feed's plan gets
    it, as the default feed's comes from DLPIPE_DAY_DEADLINE."""
    if feed.deadline is None:
        return None
    return DayDeadline(feed.deadline, feed.time_zone, date_offset_days)


def publish(events: EventSender | None, event: HandoffEvent) -> dict[str, Any]:
    """Send `event` (the step body); what went out, as the step's checkpoint."""
    fields = {"detail_type": event.detail_type, "event_id": event.event_id}
    if events is None:
        # Only a flow built without the bus (tests, benchmarks) has none: bootstrap always
        # wires one (the configured bus, else the account's default bus).
        log.warning("batch.event_not_wired", **fields)
        return fields | {"sent": False}
    events.send(event)
    log.info("batch.event_sent", batch_id=event.detail["batch_id"], **fields)
    return fields | {"sent": True}


def publish_if_late(
    events: EventSender | None, clock: Clock, event: HandoffEvent, deadline_at_ms: int
) -> bool:
    """Send `Day Late` if the deadline has passed (the step body); True once it went out."""
    if clock.now_ms() <= deadline_at_ms:
        return False
    return bool(publish(events, event)["sent"])


def publish_outcome(
    steps: StepRunner,
    flow: Callable[[], BatchFlow],
    result: BatchRunResult,
    *,
    feed: str,
    deadline: DayDeadline | None,
    manifest: Mapping[str, Any] | None = None,
) -> None:
    """The step `publish-outcome-event` for an ended batch; StepFailed if it could not be sent."""
    counts = DayCounts(result.completed, result.failed, result.error, result.pending)
    facts = DayFacts(
        feed,
        result.date,
        result.batch_id,
        result.status,
        counts,
        result.outcome,
        manifest,
        _deadline_iso(deadline, result.date),
    )
    event = build_event(detail_type_for(result.status), facts)
    try:
        steps.step(STEP_PUBLISH_OUTCOME, lambda: flow().publish_event(event.to_dict()))
    except StepFailed as exc:
        log.error(  # noqa: TRY400 - the cause is one line; a traceback says nothing more
            "batch.event_unsent", event_id=event.event_id, batch_id=result.batch_id, cause=str(exc)
        )
        raise


def late_if_due(
    steps: StepRunner,
    flow: Callable[[], BatchFlow],
    check: CompletionCheck,
    *,
    day: tuple[str, str, str],
    poll_number: int,
    deadline: DayDeadline,
) -> bool:
    """The step `day-late-{n}` after a check that left the batch running (`day`: feed, date,
    BatchID); True once sent."""
    feed, date, batch_id = day
    counts = DayCounts(check.completed, check.failed, check.error, check.pending)
    facts = DayFacts(
        feed, date, batch_id, STILL_RUNNING, counts, deadline_at=_deadline_iso(deadline, date)
    )
    event = build_event(DAY_LATE, facts).to_dict()
    at_ms = deadline.at_ms(date)
    try:
        return bool(
            steps.step(late_step_name(poll_number), lambda: flow().publish_if_late(event, at_ms))
        )
    except StepFailed as exc:
        # The day goes on; the next poll's step tries again.
        event_id = event["detail"]["event_id"]
        log.error("batch.event_unsent", event_id=event_id, cause=str(exc))  # noqa: TRY400 - as above
        return False


def _deadline_iso(deadline: DayDeadline | None, date: str) -> str | None:
    return None if deadline is None else iso_from_ms(deadline.at_ms(date))

"""The producer's side of the hand-off, announcing the day: the outcome event once a batch has
ended, and `Day Late` while it runs past its feed's deadline (the events:
dlpipe/domain/handoff_events.py; the bus: an EventSender port). The consumer's side, reading a
day, is the modules named handoff.py (dlpipe/handoff.py, services/ops/handoff.py).

Both are durable steps, so a replay finds their checkpoint and sends nothing again:
- `publish-outcome-event`, on every path that ends the batch, after the batch's final status
  (and its manifest) are written: `Day Revised` for a revision batch that completed (its
  manifest's reference says it is one; without a destination bucket there is no manifest and
  it goes out as `Day Completed`). A send that fails for good fails the execution (logged
  `batch.event_unsent`): the batch item is final either way, but a consumer waiting for the
  day must not be left without a word, so the failure is as loud as the execution's.
- `day-late-{n}`, after each poll that leaves the batch running, only while the feed has a
  deadline and no `Day Late` went out yet: its body reads the flow's clock (time is read in a
  step, so a replay decides the same) and sends the event once the deadline has passed. Its
  failure is logged and the next poll's step tries again.

An event ID is one content, across executions too: a run that attaches to an ended batch
(`dlpipe run --date D` again) builds the event anew, so the batch item keeps the outcome event
as first sent (`record_handoff`, the first one wins) and every later run re-sends that one byte
for byte. A later run whose manifest is no longer the one that event named withholds it and
names why (`manifest_recreated` / `manifest_changed`, and `manifest_tampered` /
`manifest_failed` when the write-manifest step could not verify or write it, or
`manifest_superseded` when it renders other bytes because a later batch's manifest, a rerun
that adopted its files, is the day's now): the reason is
recorded on the batch item (HandoffProblem, shown by `dlpipe status` and the day page) and in
the run's result, never sent as an event with another manifest or none. `Day Late` is claimed
on the batch item before it is sent, so it goes out once per batch however many runs watch it
(a send that fails gives the claim back; a crash between the claim and the send loses it).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from dlpipe.domain.clock import Clock, iso_from_ms
from dlpipe.domain.errors import BatchTransitionRefusedError
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
from dlpipe.services.orchestrator.step_names import STEP_PUBLISH_OUTCOME, late_step_name

if TYPE_CHECKING:
    from dlpipe.domain.manifest import ManifestConflictError
    from dlpipe.domain.model import Batch
    from dlpipe.services.orchestrator.manifest_ports import ManifestStore
    from dlpipe.services.orchestrator.ports import (
        BatchFlow,
        BatchRunResult,
        CompletionCheck,
        StepRunner,
    )
    from dlpipe.services.orchestrator.store_ports import BatchStore

log = get_logger(component="orchestrator")

# The reasons a hand-off is withheld that the write-manifest step finds (the others are
# manifest_problem's).
MANIFEST_TAMPERED = "manifest_tampered"
MANIFEST_SUPERSEDED = "manifest_superseded"
MANIFEST_FAILED = "manifest_failed"


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


def conflict_problem(
    manifests: ManifestStore | None, batch: Batch, conflict: ManifestConflictError
) -> str:
    """Why the write-manifest step found the batch's manifest there with other bytes:
    `manifest_superseded` when a later batch's manifest is the day's (a rerun adopted files
    this batch had, so it renders other bytes now: nobody tampered), else `manifest_tampered`."""
    found = manifests.read_pointer(batch.feed, batch.polling_date) if manifests else None
    current = found[0] if found else None
    if (
        current is not None
        and current.batch_id != batch.batch_id
        and current.created_at > batch.created_at
    ):
        return (
            f"{MANIFEST_SUPERSEDED}: the day's latest manifest is batch {current.batch_id}'s"
            f" ({current.key}); batch {batch.batch_id}'s, written before a later run adopted"
            f" its files, is kept as it was ({conflict})"
        )
    return f"{MANIFEST_TAMPERED}: {conflict}"


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


def publish_once(
    batches: BatchStore, events: EventSender | None, event: HandoffEvent
) -> dict[str, Any]:
    """The outcome event's step body (module docstring): record `event` as the batch's, or
    find the one recorded first, and send that; withheld, with the reason as `problem`, when
    this run's manifest is not the one it named."""
    batch_id = str(event.detail["batch_id"])
    fields = {"detail_type": event.detail_type, "event_id": event.event_id}
    try:
        batch = batches.record_handoff(
            batch_id, str(event.detail["status"]), event.detail_type, _event_json(event)
        )
    except BatchTransitionRefusedError as refused:
        if refused.current is None:
            raise
        batch = refused.current
    if batch.handoff_type != event.detail_type or not batch.handoff_event:
        # A late retry for a status the batch has left (timeout, since repaired).
        log.warning("batch.event_superseded", batch_id=batch_id, status=str(batch.status), **fields)
        return fields | {"sent": False}
    sent = HandoffEvent.from_dict(json.loads(batch.handoff_event))
    if sent.event_id != event.event_id:
        problem = manifest_problem(sent, event)
        if problem is not None:
            batches.record_handoff_problem(batch_id, problem)
            log.error("batch.handoff_withheld", batch_id=batch_id, problem=problem, **fields)
            return fields | {"sent": False, "problem": problem}
        log.info("batch.event_resent", batch_id=batch_id, built=event.event_id)
    published = publish(events, sent)
    if batch.handoff_problem is not None:
        batches.record_handoff_problem(batch_id, None)  # the hand-off holds again
    return published


def manifest_problem(sent: HandoffEvent, built: HandoffEvent) -> str | None:
    """Why `built` (this run's) may not stand for `sent` (the batch's event): its manifest is
    another (None: the same manifest, so `sent` is re-sent as it is)."""
    old, new = sent.detail.get("manifest"), built.detail.get("manifest")
    if old == new:
        return None
    if old and new and old["uri"] == new["uri"]:
        return (
            f"manifest_recreated: {new['uri']} is version {new['version_id']} now; the"
            f" {sent.detail_type} event sent named version {old['version_id']}"
        )
    return (
        f"manifest_changed: the {sent.detail_type} event sent named"
        f" {_manifest_text(old)}, this run's manifest is {_manifest_text(new)}"
    )


def _manifest_text(manifest: Mapping[str, Any] | None) -> str:
    if not manifest:
        return "no manifest"
    return f"{manifest['uri']} version {manifest['version_id']}"


def _event_json(event: HandoffEvent) -> str:
    return json.dumps(event.to_dict(), sort_keys=True, separators=(",", ":"))


def publish_if_late(
    batches: BatchStore,
    events: EventSender | None,
    clock: Clock,
    event: HandoffEvent,
    deadline_at_ms: int,
) -> bool:
    """Send `Day Late` if the deadline has passed and no other event claimed the batch's one
    (the step body); True once it went out, here or by another run."""
    if clock.now_ms() <= deadline_at_ms:
        return False
    batch_id = str(event.detail["batch_id"])
    try:
        batches.claim_day_late(batch_id, event.event_id)
    except BatchTransitionRefusedError:
        log.info("batch.day_late_sent_before", batch_id=batch_id, event_id=event.event_id)
        return True
    try:
        return bool(publish(events, event)["sent"])
    except Exception:
        # Unsent: give the claim back, so the next poll's step (or another run) may send it.
        with contextlib.suppress(BatchTransitionRefusedError):
            batches.release_day_late(batch_id, event.event_id)
        raise


def publish_outcome(
    steps: StepRunner,
    flow: Callable[[], BatchFlow],
    result: BatchRunResult,
    *,
    feed: str,
    deadline: DayDeadline | None,
    manifest: Mapping[str, Any] | None = None,
) -> str | None:
    """The step `publish-outcome-event` for an ended batch; why it was withheld (None: it went
    out); StepFailed if it could not be sent."""
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
    event = build_event(detail_type_for(result.status, manifest), facts)
    try:
        done = steps.step(STEP_PUBLISH_OUTCOME, lambda: flow().publish_event(event.to_dict()))
    except StepFailed as exc:
        log.error(  # noqa: TRY400 - the cause is one line; a traceback says nothing more
            "batch.event_unsent", event_id=event.event_id, batch_id=result.batch_id, cause=str(exc)
        )
        raise
    problem = done.get("problem")
    return None if problem is None else str(problem)


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

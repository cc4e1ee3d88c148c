"""The daily batch flow in plain Python: every dependency injected, every method one durable step.

A second run for a date that already has a batch (a repeated schedule, a manual run, a
backfill) never downloads a file twice, because jobs are keyed by FileID:
- a batch still running (initiated / queued) or completed: the run attaches to it (no new
  batch; a completed batch is reported as it is). It only watches once the batch is queued;
  while it is initiated the first run may have died mid-listing, so the attached run fans
  out too (conditional puts make the two runs' writes one);
- only failed / timed-out batches, or `rerun`: a new batch adopts the date's jobs. Files
  already completed count as completed; failed, errored, never-picked-up or abandoned ones
  move to the new batch and are queued again; files the provider added since are created.

Each step's body lives in its own module: create.py (create-batch), queueing.py with
placement.py (fetch-and-queue-files), recheck.py (restatement-check-{n}, a scheduled run's
look at earlier days), poll.py (check-completion), finish.py (the end of a batch,
fail-batch). This class holds what they share (the stores, the provider, the queue,
the clock, and this invocation's open listing) and is the BatchFlow the sequence calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dlpipe.config import DEFAULT_RESEND_AFTER_SECONDS, DEFAULT_SWEEP_REQUEUE
from dlpipe.domain.clock import Clock
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.handoff_events import HandoffEvent
from dlpipe.domain.manifest import ManifestConflictError
from dlpipe.domain.model import FileJob
from dlpipe.services.orchestrator import announce, create, finish, manifest, poll, queueing, recheck
from dlpipe.services.orchestrator.announce import EventSender
from dlpipe.services.orchestrator.fanout import CHUNK_ENTRIES, FileLister, ListingPosition
from dlpipe.services.orchestrator.manifest_ports import ManifestStore
from dlpipe.services.orchestrator.ports import CompletionCheck, QueueResult
from dlpipe.services.orchestrator.store_ports import BatchStore, DownloadQueues, JobStore
from dlpipe.services.orchestrator.sweep_ports import PublishedCheck


@dataclass
class BatchFlowService:
    """The batch use cases against the job and batch stores, the queue and the provider
    (wired by dlpipe.bootstrap.orchestrator)."""

    jobs: JobStore
    batches: BatchStore
    provider: FileLister
    queue: DownloadQueues
    clock: Clock
    new_uuid: Callable[[], str]
    sweep_requeue: bool = DEFAULT_SWEEP_REQUEUE
    resend_after_seconds: int = DEFAULT_RESEND_AFTER_SECONDS
    # The workers' lease: only claims older than this are the sweeper's candidates (None: every
    # claim made before the poll).
    lease_seconds: int | None = None
    published: PublishedCheck | None = None  # the sweeper's HEAD of a destination key
    chunk_entries: int = CHUNK_ENTRIES  # listing entries per fetch-and-queue step
    manifests: ManifestStore | None = None  # the day manifests; None: none are written
    # The feed whose days it runs: its BatchIDs carry it, and its jobs' keys from them.
    feed: str = DEFAULT_FEED_NAME
    events: EventSender | None = None  # the hand-off events' bus (announce.py)
    # This invocation's open listing stream, continued by the next chunk (fanout.py).
    listing: ListingPosition | None = field(default=None, init=False, repr=False)
    # Earlier batches this invocation already marked AdoptedBy (placement.py).
    adopted_from: set[str] = field(default_factory=set, init=False, repr=False)
    adopted_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def create_batch(self, polling_date: str, rerun: bool = False) -> str:
        """create-batch: the day's batch (initiated), or the one already running / done."""
        return create.create_batch(self, polling_date, rerun)

    def recheck_day(
        self, polling_date: str, start: recheck.DayStarter | None = None
    ) -> dict[str, Any]:
        """restatement-check-{n}: is an earlier, delivered day restated? `start` starts its
        run if so (recheck.py)."""
        return recheck.recheck_day(self, polling_date, start)

    def fetch_and_queue(
        self, batch_id: str, polling_date: str, resume: QueueResult | None = None
    ) -> QueueResult:
        """fetch-and-queue-files: the next chunk of the listing, from `resume` or the start."""
        return queueing.fetch_and_queue(self, batch_id, polling_date, resume)

    def check_completion(
        self, batch_id: str, poll_number: int, is_last_poll: bool
    ) -> CompletionCheck:
        """check-completion: count the batch's jobs, record the counts, end it when due."""
        return poll.check_completion(self, batch_id, poll_number, is_last_poll)

    def sweep(self, batch_id: str, pending_jobs: Iterable[FileJob]) -> int:
        """The sweep of one poll (poll.py), called through here so that a test can stand a
        race in for it."""
        return poll.sweep(self, batch_id, pending_jobs)

    def fail_batch(self, batch_id: str, reason: str) -> None:
        """fail-batch: end the batch failed with `reason` (e.g. the provider stayed down)."""
        finish.fail_batch(self, batch_id, reason)

    def write_manifest(self, batch_id: str) -> dict[str, Any] | None:
        """write-manifest: the ended batch's manifest and the day's pointer (manifest.py); a
        manifest there with other bytes is `{"problem": "manifest_tampered: ..."}`, or
        `manifest_superseded: ...` when a later batch's manifest is the day's (announce.py)."""
        try:
            ref = manifest.write_manifest(self, batch_id)
        except ManifestConflictError as exc:
            batch = self.batches.require(batch_id)
            return {"problem": announce.conflict_problem(self.manifests, batch, exc)}
        return None if ref is None else ref.to_dict()

    def record_handoff_problem(self, batch_id: str, problem: str) -> None:
        """record-handoff-problem: why the batch's hand-off was withheld, on its item."""
        self.batches.record_handoff_problem(batch_id, problem)

    def publish_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """publish-outcome-event: put the batch's hand-off event on the bus (announce.py)."""
        return announce.publish_once(self.batches, self.events, HandoffEvent.from_dict(event))

    def publish_if_late(self, event: dict[str, Any], deadline_at_ms: int) -> bool:
        """day-late-{n}: put the batch's one `Day Late` on the bus once the deadline passed."""
        return announce.publish_if_late(
            self.batches, self.events, self.clock, HandoffEvent.from_dict(event), deadline_at_ms
        )

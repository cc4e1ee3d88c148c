"""In-memory jobs and batches tables and queue, with the tables' conditional semantics.

The conditions are those of dlpipe/adapters/jobs_writes.py and batches_table.py, decided by
the pure rules of dlpipe.domain.transitions (may_claim, holds_claim, may_requeue, ...: the
rules the tables' ConditionExpressions are proven equal to): a fake that accepted every write would prove nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dlpipe.domain.clock import Clock, iso_from_ms
from dlpipe.domain.errors import (
    BatchExistsError,
    BatchTransitionRefusedError,
    ClaimRefusedError,
    JobExistsError,
    LeaseLostError,
    ListedTwiceError,
    NotFoundError,
    QueueSendError,
    RequeueRefusedError,
)
from dlpipe.domain.job_row import JobRow
from dlpipe.domain.model import (
    SETS_MAX_FILES,
    Batch,
    BatchStatus,
    FileJob,
    JobStatus,
    listed_by,
)
from dlpipe.domain.outcome import OutcomeSummary
from dlpipe.domain.routing import DEFAULT_LARGE_FILE_THRESHOLD_BYTES, Route, route_for
from dlpipe.domain.rules import lease_expiry_ms
from dlpipe.domain.statuses import UNSUCCESSFUL_JOB_STATUSES
from dlpipe.domain.transitions import (
    holds_claim,
    may_adopt,
    may_claim,
    may_claim_late,
    may_complete_abandoned,
    may_create,
    may_finish,
    may_mark_listed,
    may_mark_queued,
    may_record,
    may_record_counts,
    may_record_handoff,
    may_release_late,
    may_requeue,
)


@dataclass
class FakeMeter:
    """An in-memory store reads for free."""

    read_capacity_units: float = 0.0


class FakeJobsTable:
    """JobStore (orchestrator) and JobLeases (downloader) over a dict, one lock for all."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.items: dict[str, FileJob] = {}
        self.meter = FakeMeter()
        self._lock = threading.Lock()

    # ---- reads ----------------------------------------------------------------------

    def get(self, file_id: str, *, consistent: bool = True) -> FileJob | None:
        return self.items.get(file_id)

    def require(self, file_id: str) -> FileJob:
        job = self.items.get(file_id)
        if job is None:
            raise NotFoundError(f"no job {file_id!r}")
        return job

    def query_by_batch(
        self,
        batch_id: str,
        status: JobStatus | None = None,
        *,
        limit: int | None = None,
        on_unreadable: Callable[..., None] | None = None,
    ) -> Iterator[FileJob]:
        found = [
            j
            for j in self.items.values()
            if j.batch_id == batch_id and (status is None or j.status is status)
        ]
        yield from found[:limit]

    def count_by_batch(self, batch_id: str, status: JobStatus) -> int:
        return sum(1 for _ in self.query_by_batch(batch_id, status))

    def rows_by_batch(self, batch_id: str, status: JobStatus) -> Iterator[JobRow]:
        for job in self.query_by_batch(batch_id, status):
            yield JobRow(
                job.file_id,
                job.entity,
                job.status,
                destination_key=job.destination_key,
                byte_count=job.byte_count,
                sha256=job.sha256,
                error_message=job.error_message,
            )

    def counts_by_batch(self, batch_id: str, statuses: Iterable[JobStatus]) -> dict[JobStatus, int]:
        return {s: self.count_by_batch(batch_id, s) for s in statuses}

    def stale_of_batch(
        self,
        batch_id: str,
        status: JobStatus,
        *,
        older_than_ms: int,
        on_unreadable: Callable[..., None] | None = None,
    ) -> Iterator[FileJob]:
        found = [
            j
            for j in self.query_by_batch(batch_id, status)
            if j.status_updated_at_ms < older_than_ms
        ]
        yield from sorted(found, key=lambda j: j.status_updated_at_ms)

    def batch_file_ids(self, batch_id: str) -> dict[str, JobStatus | None]:
        return {j.file_id: j.status for j in self.query_by_batch(batch_id)}

    def batch_get(
        self,
        file_ids: Iterable[str],
        *,
        consistent: bool = False,
        on_unreadable: Callable[..., None] | None = None,
    ) -> dict[str, FileJob]:
        return {f: self.items[f] for f in set(file_ids) if f in self.items}

    # ---- conditional writes ---------------------------------------------------------

    def create(self, job: FileJob) -> FileJob:
        with self._lock:
            if not may_create(self.items.get(job.file_id)):
                raise JobExistsError(
                    f"job {job.file_id} exists already",
                    condition="attribute_not_exists(FileID)",
                    current=self.items[job.file_id],
                )
            self.items[job.file_id] = job
            return job

    def claim(self, file_id: str, owner: str, lease_seconds: int) -> FileJob:
        with self._lock:
            now_ms = self.clock.now_ms()
            job = self.items.get(file_id)
            if job is None or not may_claim(job, now_ms):
                raise ClaimRefusedError(
                    f"claim refused for {file_id}", condition="claim", current=job
                )
            return self._put(
                job,
                JobStatus.DOWNLOADING,
                lease_owner=owner,
                lease_expires_at_ms=lease_expiry_ms(now_ms, lease_seconds),
                attempts=job.attempts + 1,
            )

    def extend_lease(self, file_id: str, owner: str, lease_seconds: int) -> FileJob:
        with self._lock:
            job = self._owned(file_id, owner, "extend lease")
            expiry = lease_expiry_ms(self.clock.now_ms(), lease_seconds)
            self.items[file_id] = replace(job, lease_expires_at_ms=expiry)
            return self.items[file_id]

    def update_url(self, file_id: str, owner: str, url: str, url_expires_at: str | None) -> FileJob:
        with self._lock:
            job = self._owned(file_id, owner, "update url")
            expires = url_expires_at or job.url_expires_at
            self.items[file_id] = replace(job, presigned_url=url, url_expires_at=expires)
            return self.items[file_id]

    def complete(
        self,
        file_id: str,
        owner: str,
        *,
        byte_count: int,
        sha256: str,
        destination_key: str,
        previous_version_id: str | None = None,
    ) -> FileJob:
        with self._lock:
            job = self._owned(file_id, owner, "complete")
            if previous_version_id is not None:
                job = replace(job, previous_version_id=previous_version_id)
            return self._completed(job, byte_count, sha256, destination_key)

    def finish_unsuccessfully(
        self, file_id: str, owner: str, status: JobStatus, error_message: str
    ) -> FileJob:
        if status not in UNSUCCESSFUL_JOB_STATUSES:
            takes = " or ".join(UNSUCCESSFUL_JOB_STATUSES)
            raise ValueError(f"finish_unsuccessfully takes {takes}, not {status}")
        with self._lock:
            job = self._owned(file_id, owner, str(status))
            return self._put(
                job,
                status,
                error_message=error_message[:1000],
                lease_owner=None,
                lease_expires_at_ms=None,
            )

    def release(self, file_id: str, owner: str, *, error_message: str | None = None) -> FileJob:
        with self._lock:
            job = self._owned(file_id, owner, "release")
            reason = {} if error_message is None else {"error_message": error_message[:1000]}
            return self._put(
                job, JobStatus.AVAILABLE, lease_owner=None, lease_expires_at_ms=None, **reason
            )

    def requeue(self, file_id: str, *, force: bool = False) -> FileJob:
        with self._lock:
            job = self._requeuable(file_id, force=force, rule="requeue")
            return self._back_to_available(job)

    def adopt(self, file_id: str, batch_id: str, listing_index: int | None = None) -> FileJob:
        with self._lock:
            job = self.items.get(file_id)
            if job is None or not may_adopt(job, batch_id, self.clock.now_ms()):
                raise RequeueRefusedError("adopt refused", condition="adopt", current=job)
            moved = replace(job, batch_id=batch_id)
            if listing_index is not None:
                moved = replace(moved, listing_index=listing_index)
            return self._back_to_available(moved)

    def mark_listed(self, file_id: str, batch_id: str, listing_index: int) -> FileJob:
        with self._lock:
            job = self.items.get(file_id)
            if not may_mark_listed(job, batch_id, listing_index):
                raise ListedTwiceError("mark listed refused", condition="mark listed", current=job)
            assert job is not None  # may_mark_listed refuses a missing job
            marked = replace(job, listed_by=listed_by(batch_id, listing_index))
            self.items[file_id] = marked
            return marked

    def revise(
        self, current: FileJob, listed: FileJob, *, revision: int, revised_as: str
    ) -> FileJob:
        with self._lock:
            job = self.items.get(listed.file_id)
            own = job is not None and job.batch_id == listed.batch_id and job.revision == revision
            if own:
                return job  # type: ignore[return-value]  # (own: not None)
            still = (
                job is not None
                and job.status is JobStatus.COMPLETED
                and job.batch_id == current.batch_id
                and job.sha256 == current.sha256
            )
            if not still or job is None:
                raise RequeueRefusedError("revise refused", condition="revise", current=job)
            revised = replace(
                listed,
                status=JobStatus.AVAILABLE,
                status_updated_at_ms=self.clock.now_ms(),
                destination_key=job.destination_key,
                created_at=job.created_at,
                revision=revision,
                revised_as=revised_as,
                previous_sha256=job.sha256,
                previous_size=job.byte_count,
                attempts=0,
            )
            self.items[listed.file_id] = revised
            return revised

    def withdraw(self, file_id: str, batch_id: str, by_batch: str) -> FileJob:
        with self._lock:
            job = self.items.get(file_id)
            if job is not None and job.withdrawn_by == by_batch:
                return job
            if (
                job is None
                or job.status is not JobStatus.COMPLETED
                or job.batch_id != batch_id
                or job.withdrawn_by is not None
            ):
                raise RequeueRefusedError("withdraw refused", condition="withdraw", current=job)
            marked = replace(job, withdrawn_by=by_batch)
            self.items[file_id] = marked
            return marked

    def complete_abandoned(
        self,
        file_id: str,
        owner: str,
        *,
        byte_count: int,
        sha256: str,
        destination_key: str,
        previous_version_id: str | None = None,
    ) -> FileJob:
        with self._lock:
            job = self.items.get(file_id)
            if job is None or not may_complete_abandoned(job, owner, self.clock.now_ms()):
                raise LeaseLostError(
                    "complete abandoned refused", condition="complete abandoned", current=job
                )
            if previous_version_id is not None:
                job = replace(job, previous_version_id=previous_version_id)
            return self._completed(job, byte_count, sha256, destination_key)

    # ---- helpers (callers hold the lock) --------------------------------------------

    def _owned(self, file_id: str, owner: str, rule: str) -> FileJob:
        job = self.items.get(file_id)
        if job is None or not holds_claim(job, owner):
            raise LeaseLostError(f"{rule} refused for {file_id}", condition=rule, current=job)
        return job

    def _requeuable(self, file_id: str, *, force: bool, rule: str) -> FileJob:
        job = self.items.get(file_id)
        if job is None or not may_requeue(job, self.clock.now_ms(), force=force):
            raise RequeueRefusedError(f"{rule} refused for {file_id}", condition=rule, current=job)
        return job

    def _back_to_available(self, job: FileJob) -> FileJob:
        now_ms = self.clock.now_ms()
        self.items[job.file_id] = replace(
            job,
            status=JobStatus.AVAILABLE,
            status_updated_at_ms=now_ms,
            lease_owner=None,
            lease_expires_at_ms=None,
            error_message=None,
            completed_at=None,
        )
        return self.items[job.file_id]

    def _completed(
        self, job: FileJob, byte_count: int, sha256: str, destination_key: str
    ) -> FileJob:
        return self._put(
            job,
            JobStatus.COMPLETED,
            completed_at=iso_from_ms(self.clock.now_ms()),
            byte_count=byte_count,
            sha256=sha256,
            destination_key=destination_key,
            lease_owner=None,
            lease_expires_at_ms=None,
            error_message=None,
        )

    def _put(self, job: FileJob, status: JobStatus, **changes: Any) -> FileJob:
        updated = replace(job, status=status, status_updated_at_ms=self.clock.now_ms(), **changes)
        self.items[job.file_id] = updated
        return updated


class FakeBatchesTable:
    """BatchStore over a dict: creates once, moves only along the batch status machine."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.items: dict[str, Batch] = {}

    def create(self, batch: Batch) -> Batch:
        if not may_create(self.items.get(batch.batch_id)):
            raise BatchExistsError(
                "batch exists",
                condition="attribute_not_exists(BatchID)",
                current=self.items[batch.batch_id],
            )
        self.items[batch.batch_id] = batch
        return batch

    def require(self, batch_id: str) -> Batch:
        if batch_id not in self.items:
            raise NotFoundError(f"no batch {batch_id!r}")
        return self.items[batch_id]

    def query_by_date(self, polling_date: str, status: BatchStatus | None = None) -> list[Batch]:
        found = [
            b
            for b in self.items.values()
            if b.polling_date == polling_date and (status is None or b.status is status)
        ]
        return sorted(found, key=lambda b: b.start_time)

    def mark_queued(
        self,
        batch_id: str,
        expected_files: Iterable[str],
        *,
        error_message: str | None = None,
        expected_count: int | None = None,
        queued_count: int | None = None,
    ) -> Batch:
        batch = self.require(batch_id)
        # A replay of the last chunk finds it queued already: the same write again.
        if not may_mark_queued(batch):
            raise BatchTransitionRefusedError(
                "mark queued refused", condition="mark queued", current=batch
            )
        files = frozenset(expected_files)
        count = len(files) if expected_count is None else expected_count
        small = count <= SETS_MAX_FILES and len(files) == count
        return self._put(
            batch,
            status=BatchStatus.QUEUED,
            expected_count=count,
            queued_count=count if queued_count is None else queued_count,
            error_message=error_message[:1000] if error_message else batch.error_message,
            expected_files=files if small else frozenset(),
            sets_truncated=not small,
        )

    def record_counts(
        self,
        batch_id: str,
        *,
        completed: int,
        failed: int,
        error: int,
        completed_files: Iterable[str] | None = None,
        failed_files: Iterable[str] | None = None,
    ) -> Batch:
        batch = self.require(batch_id)
        if not may_record_counts(batch):
            raise BatchTransitionRefusedError(
                "record counts refused", condition="record counts", current=batch
            )
        changes: dict[str, Any] = {
            "completed_count": completed,
            "failed_count": failed,
            "error_count": error,
        }
        for name, files in (("completed_files", completed_files), ("failed_files", failed_files)):
            if files is not None:
                chosen = frozenset(files)
                changes[name] = chosen if len(chosen) <= SETS_MAX_FILES else frozenset()
        return self._put(batch, **changes)

    def finish(
        self,
        batch_id: str,
        status: BatchStatus,
        *,
        timeout_at: str | None = None,
        error_message: str | None = None,
        outcome: OutcomeSummary | None = None,
        counts_of: Batch | None = None,
    ) -> Batch:
        batch = self.require(batch_id)
        if not may_finish(batch, status):
            raise BatchTransitionRefusedError(
                f"finish {status} refused", condition=f"finish {status}", current=batch
            )
        changes: dict[str, Any] = {"status": status}
        if counts_of is not None:
            changes.update(
                completed_count=counts_of.completed_count or 0,
                failed_count=counts_of.failed_count or 0,
                error_count=counts_of.error_count or 0,
            )
            if not counts_of.sets_truncated:
                for name in ("completed_files", "failed_files"):
                    if getattr(counts_of, name):
                        changes[name] = getattr(counts_of, name)
        if timeout_at:
            changes["timeout_at"] = timeout_at
        if error_message:
            changes["error_message"] = error_message[:1000]
        if outcome is not None:
            changes["outcome"] = outcome
        return self._put(batch, **changes)

    def mark_adopted(self, batch_id: str, adopted_by: str) -> Batch:
        batch = self.require(batch_id)
        if not may_record(batch):
            raise BatchTransitionRefusedError(
                "mark adopted refused", condition="mark adopted", current=batch
            )
        return self._put(batch, adopted_by=adopted_by)

    def record_handoff(self, batch_id: str, status: str, detail_type: str, event: str) -> Batch:
        batch = self.items.get(batch_id)
        if not may_record_handoff(batch, status, detail_type):
            raise BatchTransitionRefusedError(
                "record hand-off refused", condition="record hand-off", current=batch
            )
        return self._mark(self.require(batch_id), handoff_event=event, handoff_type=detail_type)

    def record_handoff_problem(self, batch_id: str, problem: str | None) -> Batch:
        return self._mark(self.require(batch_id), handoff_problem=problem)

    def claim_day_late(self, batch_id: str, event_id: str) -> Batch:
        batch = self.items.get(batch_id)
        if not may_claim_late(batch):
            raise BatchTransitionRefusedError(
                "claim Day Late refused", condition="claim Day Late", current=batch
            )
        return self._mark(self.require(batch_id), late_event_id=event_id)

    def release_day_late(self, batch_id: str, event_id: str) -> Batch:
        batch = self.items.get(batch_id)
        if not may_release_late(batch, event_id):
            raise BatchTransitionRefusedError(
                "release Day Late refused", condition="release Day Late", current=batch
            )
        return self._mark(self.require(batch_id), late_event_id=None)

    def _mark(self, batch: Batch, **changes: Any) -> Batch:
        # A mark beside the status: UpdatedAt stays (the manifest's header reads it).
        updated = replace(batch, **changes)
        self.items[batch.batch_id] = updated
        return updated

    def _put(self, batch: Batch, **changes: Any) -> Batch:
        updated = replace(batch, updated_at=iso_from_ms(self.clock.now_ms()), **changes)
        self.items[batch.batch_id] = updated
        return updated


@dataclass
class FakeQueue:
    """JobSender: records what was sent; `unsendable` FileIDs fail (QueueSendError)."""

    large_queue: bool = False
    threshold_bytes: int = DEFAULT_LARGE_FILE_THRESHOLD_BYTES
    visible: int = 0  # what depth() reports
    unsendable: set[str] = field(default_factory=set)
    sent: list[FileJob] = field(default_factory=list)
    refusal: str = "refused"  # the reason SQS gives for the unsendable ones

    def route(self, size_bytes: int | None) -> Route:
        return route_for(size_bytes, self.threshold_bytes, self.large_queue)

    def send_jobs(self, jobs: Sequence[FileJob]) -> int:
        failed = [j.file_id for j in jobs if j.file_id in self.unsendable]
        self.sent.extend(j for j in jobs if j.file_id not in self.unsendable)
        if failed:
            raise QueueSendError(f"{len(failed)} message(s) not sent: {self.refusal}", failed)
        return len(jobs)

    def depth(self) -> int:
        return self.visible

    def sent_ids(self) -> list[str]:
        return [j.file_id for j in self.sent]

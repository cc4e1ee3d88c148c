"""Requeue: jobs back to `available` through JobsTable's conditional write, then onto SQS.

Only a running batch's files: a file of a batch that has ended (failed, timeout) would complete
in a batch nobody polls, which stays as it ended, with no new manifest and no `Day Completed`.
Its repair is a new run of the day (`advice.ended_batch_repair`), which adopts it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from dlpipe.domain.clock import time_for_people
from dlpipe.domain.errors import NotFoundError, QueueSendError, RequeueRefusedError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import FileJob, JobStatus, file_feed
from dlpipe.domain.transitions import is_stuck, lease_live, may_requeue
from dlpipe.log import get_logger
from dlpipe.services.ops.advice import DayRepair, ended_batch_repair
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.errors import EndedBatchError
from dlpipe.services.ops.feed_filter import FeedChoice, chosen, record_feed
from dlpipe.services.ops.ports import OpsJobs
from dlpipe.services.ops.queries import STUCK_STATUSES, stuck_jobs
from dlpipe.services.shared_ports import JobSender

# Jobs sent per call: a refused send costs only its ten, never the rest of the list.
SEND_CHUNK = 10


class RequeueOutcome(StrEnum):
    """What a requeue did to one requested file (how a download ended is another enum: the
    download service's Outcome)."""

    REQUEUED = "requeued"
    WOULD_REQUEUE = "would-requeue"  # --dry-run
    REFUSED = "refused"
    UNKNOWN = "unknown"
    NOT_SENT = "not-sent"  # available again, but the SQS send failed: run the command again


@dataclass(frozen=True)
class RequeueResult:
    """One file's outcome, with the status it had when we looked."""

    file_id: str
    outcome: RequeueOutcome
    previous_status: str | None
    batch_id: str | None
    detail: str
    job: FileJob | None = field(default=None, compare=False, repr=False)  # as requeued

    @property
    def ok(self) -> bool:
        """True if the file is (or would be) back on the queue."""
        return self.outcome in (RequeueOutcome.REQUEUED, RequeueOutcome.WOULD_REQUEUE)


def refusal(job: FileJob, now_ms: int, force: bool) -> str | None:
    """Why a requeue of `job` is refused, or None if it may go back to available."""
    if may_requeue(job, now_ms, force=force):
        return None
    if lease_live(job, now_ms):
        expiry = time_for_people(job.lease_expires_at_ms or 0)
        return f"refused: held by worker {job.lease_owner} until {expiry}"
    return f"refused: {job.status}"


def _result(job: FileJob, outcome: RequeueOutcome, detail: str) -> RequeueResult:
    return RequeueResult(job.file_id, outcome, str(job.status), job.batch_id, detail)


def _change(job: FileJob) -> str:
    if job.status is JobStatus.AVAILABLE:
        return "sent again (still available)"
    return f"{job.status} -> available, sent"


def ended_repairs(ops: OpsContext, jobs: Iterable[FileJob]) -> dict[str, DayRepair]:
    """The batches of `jobs` that have ended, each with what repairs its unfinished files: a
    GetItem per batch, and a PollingDateIndex Query per ended one (its day's batches)."""
    batches, seen, repairs = ops.batches(), set[str](), dict[str, DayRepair]()
    for job in jobs:
        if job.batch_id in seen:
            continue
        seen.add(job.batch_id)
        try:
            batch = batches.require(job.batch_id)
        except NotFoundError:
            continue  # its batch expired (TTL) before the job: nothing to end
        if batch.is_terminal:
            day = chosen(record_feed(batch), batches.query_by_date(batch.polling_date))
            repair = ended_batch_repair(ops.settings, batch, day)
            why = f"its batch {batch.batch_id} ended {batch.status}; {repair.why}"
            repairs[batch.batch_id] = replace(repair, why=why)
    return repairs


def _requeue_one(
    jobs: OpsJobs,
    file_id: str,
    before: FileJob | None,
    now_ms: int,
    *,
    force: bool,
    dry_run: bool,
    ended: dict[str, DayRepair],
) -> RequeueResult:
    if before is None:
        return RequeueResult(file_id, RequeueOutcome.UNKNOWN, None, None, "no such job")
    reason = refusal(before, now_ms, force)
    if reason is None and before.batch_id in ended:
        reason = f"refused: {ended[before.batch_id]}"
    if reason is not None:
        return _result(before, RequeueOutcome.REFUSED, reason)
    change = _change(before)
    if dry_run:
        return _result(before, RequeueOutcome.WOULD_REQUEUE, f"would be {change}")
    try:
        # The condition re-checks at write time: a worker may have finished or renewed.
        after = jobs.requeue(file_id, force=force)
    except RequeueRefusedError as refused:
        current = refused.current
        detail = (current and refusal(current, now_ms, force)) or f"refused: {refused}"
        get_logger(component="ops").info("ops.requeue_refused", file_id=file_id, detail=detail)
        return _result(current or before, RequeueOutcome.REFUSED, detail)
    get_logger(component="ops").info(
        "ops.requeued", file_id=file_id, batch_id=after.batch_id, was=str(before.status)
    )
    # The batch the job belongs to now (a rerun may have adopted it since we looked).
    return RequeueResult(
        file_id, RequeueOutcome.REQUEUED, str(before.status), after.batch_id, change, job=after
    )


def send_jobs(ops: OpsContext, jobs: Sequence[FileJob]) -> set[str]:
    """Send in chunks of ten, each job to its feed's queue its size routes it to; return the
    FileIDs that could not be sent."""
    by_feed: dict[str, list[FileJob]] = {}
    for job in jobs:
        by_feed.setdefault(file_feed(job.file_id, default=DEFAULT_FEED_NAME), []).append(job)
    unsent: set[str] = set()
    for feed, feed_jobs in by_feed.items():
        unsent |= _send_chunks(ops.queue(feed), feed_jobs)
    return unsent


def _send_chunks(queue: JobSender, jobs: Sequence[FileJob]) -> set[str]:
    unsent: set[str] = set()
    for start in range(0, len(jobs), SEND_CHUNK):
        chunk = jobs[start : start + SEND_CHUNK]
        try:
            queue.send_jobs(chunk)
        except QueueSendError as exc:
            unsent.update(exc.failed)
    return unsent


def _unsent(result: RequeueResult) -> RequeueResult:
    detail = "available again but not sent to SQS: run the requeue again"
    return RequeueResult(
        result.file_id, RequeueOutcome.NOT_SENT, result.previous_status, result.batch_id, detail
    )


def requeue_files(
    ops: OpsContext,
    file_ids: Iterable[str],
    *,
    force: bool = False,
    dry_run: bool = False,
    named: bool = True,
) -> list[RequeueResult]:
    """Requeue each file (look, then conditional write) and send the requeued ones to SQS.

    A file of a batch that has ended is never requeued: `named` files, one of which is such,
    raise EndedBatchError before anything is written (the line names the run that repairs
    the day); otherwise (--stuck) each such file is refused, saying so."""
    jobs, now_ms = ops.jobs(), ops.now_ms()
    wanted = list(dict.fromkeys(file_ids))
    before = {f: jobs.get(f) for f in wanted}
    movable = [j for j in before.values() if j is not None and refusal(j, now_ms, force) is None]
    ended = ended_repairs(ops, movable)
    if named and ended:
        held = [j.file_id for j in movable if j.batch_id in ended]
        why = "; ".join(str(r) for r in ended.values())
        raise EndedBatchError(f"{len(held)} file(s) not requeued: {why}")
    if not dry_run:
        # Every queue the files go to is found before the first write (ConfigError, one line,
        # nothing changed): a job made available with no message would wait for the sweeper.
        for feed in {file_feed(f, default=DEFAULT_FEED_NAME) for f in wanted}:
            ops.queue(feed)
    results = [
        _requeue_one(jobs, f, before[f], now_ms, force=force, dry_run=dry_run, ended=ended)
        for f in wanted
    ]
    to_send = [r.job for r in results if r.outcome is RequeueOutcome.REQUEUED and r.job is not None]
    unsent = send_jobs(ops, to_send) if to_send else set()
    return [_unsent(r) if r.file_id in unsent else r for r in results]


def stuck_file_ids(ops: OpsContext, older_than_s: int, feed: FeedChoice = None) -> list[str]:
    """Downloading jobs with an expired lease and available jobs, unchanged for `older_than_s`
    (of `feed` only, if given)."""
    now_ms = ops.now_ms()
    cutoff_ms = now_ms - older_than_s * 1000
    found: list[str] = []
    for status in STUCK_STATUSES:
        stale = stuck_jobs(ops, status, cutoff_ms, limit=None, feed=feed)
        found.extend(job.file_id for job in stale.jobs if is_stuck(job, now_ms))
    return found

"""A job's claim: taking it, and writing how the run under it ended.

Every write here is conditional on the claim's owner: a claim taken over by another worker
makes it LEASE_LOST, and that worker's result stands.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeVar

from dlpipe.domain.download_errors import PermanentError, ProviderSlowError, TransientError
from dlpipe.domain.errors import ClaimRefusedError, DependencyUnavailableError, LeaseLostError
from dlpipe.domain.model import FileJob, JobStatus, Verified
from dlpipe.domain.outage import DEFAULT_DEPENDENCY_BUDGET_SECONDS, worker_retry_s
from dlpipe.domain.rules import ClaimDecision, claim_decision
from dlpipe.domain.stall import slow_retry_s
from dlpipe.log import get_logger
from dlpipe.services.download.deps import ServiceDeps
from dlpipe.services.download.file_metrics import (
    NO_ERROR,
    FileFinish,
    record_finished,
)
from dlpipe.services.download.filerun import FileRun
from dlpipe.services.download.outcome import Outcome, ProcessResult, ended_outcome
from dlpipe.services.download.transfer import MIB

log = get_logger()
_MAX_VISIBILITY_S = 43_200  # SQS's limit
_CLAIM_ROUNDS = 3
_T = TypeVar("_T")


def claim(deps: ServiceDeps, job: FileJob, owner: str) -> FileJob | ProcessResult:
    """The job claimed for `owner`, or the result that ends the message without a claim
    (ALREADY_DONE, BUSY, NOT_FOUND)."""
    for _ in range(_CLAIM_ROUNDS):
        decision = claim_decision(job, deps.clock.now_ms())
        if decision is ClaimDecision.DONE:
            log.info("job.already_done", status=str(job.status))
            return ProcessResult(Outcome.ALREADY_DONE)
        if decision is ClaimDecision.BUSY:
            return _busy(deps, job)
        try:
            claimed = deps.jobs.claim(job.file_id, owner, deps.lease_seconds)
        except ClaimRefusedError as refused:
            if refused.current is None:
                log.warning("job.not_found")
                return ProcessResult(Outcome.NOT_FOUND)
            job = refused.current  # lost a race: decide again from what the store holds
            continue
        log.info("job.claimed", attempts=claimed.attempts, decision=decision.value)
        return claimed
    return _busy(deps, job)


def _busy(deps: ServiceDeps, job: FileJob) -> ProcessResult:
    remaining_ms = (job.lease_expires_at_ms or 0) - deps.clock.now_ms()
    margin_s = deps.tuning.margin_s(deps.lease_seconds)
    seconds = max(0, math.ceil(remaining_ms / 1000)) + margin_s
    retry_after_s = min(seconds, _MAX_VISIBILITY_S)
    log.info("job.busy", retry_after_s=retry_after_s)
    return ProcessResult(Outcome.BUSY, retry_after_s, size_bytes=job.expected_size)


def while_claimed(
    deps: ServiceDeps, call: Callable[[], _T], on_heartbeat: Callable[[int], None] | None
) -> _T:
    """`call` (the run's outcome written under our claim: a completion, a `failed` or
    `error`, a release), tried again while DynamoDB is unavailable: 1 s doubling to 30 s,
    the message kept hidden meanwhile, until the stop or the dependency budget. Giving up
    here would leave the claim to run out, and the file hidden for a lease + margin after
    the outage."""
    started = time.monotonic()
    failures = 0
    while True:
        try:
            return call()
        except DependencyUnavailableError as exc:
            failures += 1
            delay_s = worker_retry_s(failures)
            spent_s = time.monotonic() - started
            if deps.stop.is_set() or spent_s + delay_s > DEFAULT_DEPENDENCY_BUDGET_SECONDS:
                raise
            if failures == 1:
                log.warning("job.store_unavailable", dependency=exc.dependency, error=str(exc))
            if on_heartbeat is not None:
                margin_s = deps.tuning.margin_s(deps.lease_seconds)
                on_heartbeat(delay_s + margin_s)
            deps.stop.wait(delay_s)


def complete(
    deps: ServiceDeps, job: FileJob, run: FileRun, key: str, verified: Verified, *, seconds: float
) -> ProcessResult:
    """Record the published file `key` as the job's result: `completed` (a revision's with
    the version it replaced)."""
    try:
        deps.jobs.complete(
            job.file_id,
            run.owner,
            byte_count=verified.byte_count,
            sha256=verified.sha256,
            destination_key=key,
            previous_version_id=run.previous_version_id,
        )
    except LeaseLostError:
        log.warning("job.lease_lost", during="complete")
        return ProcessResult(Outcome.LEASE_LOST)
    mib_s = verified.byte_count / MIB / seconds if seconds > 0 else None
    log.info(
        "job.completed",
        byte_count=verified.byte_count,
        sha256=verified.sha256,
        destination_key=key,
        seconds=round(seconds, 3),
        mib_s=round(mib_s, 1) if mib_s else None,
    )
    # Bytes only when this claim moved them: a file found already published moved none.
    moved = verified.byte_count if run.transfers else None
    record_finished(job, FileFinish(Outcome.COMPLETED, NO_ERROR, seconds, moved, run.transfers))
    return ProcessResult(Outcome.COMPLETED)


def finish(
    deps: ServiceDeps,
    job: FileJob,
    owner: str,
    status: JobStatus,
    exc: PermanentError | TransientError,
    *,
    started: float | None = None,  # when the run began; None: nothing was attempted
    transfers: int = 0,
) -> ProcessResult:
    """End the job `status` (`failed` or `error`) with `exc`'s message."""
    try:
        deps.jobs.finish_unsuccessfully(job.file_id, owner, status, exc.error_message)
    except LeaseLostError:
        log.warning("job.lease_lost", during=str(status))
        return ProcessResult(Outcome.LEASE_LOST)
    log.warning(f"job.{status}", error_code=exc.code, error=exc.error_message)
    outcome = ended_outcome(status)
    seconds = None if started is None else time.monotonic() - started
    record_finished(job, FileFinish(outcome, exc.code, seconds, transfers=transfers))
    return ProcessResult(outcome)


def slow(
    deps: ServiceDeps, job: FileJob, run: FileRun, exc: ProviderSlowError, started: float
) -> ProcessResult:
    """Give a file abandoned below the stall floor back for a later claim, its message
    hidden a growing while; on its last attempt it ends `failed` (provider_slow)."""
    delay_s = slow_retry_s(job.attempts, deps.tuning.stall_floor.window_s)
    if delay_s is None:
        return finish(
            deps, job, run.owner, JobStatus.FAILED, exc, started=started, transfers=run.transfers
        )
    released = release(deps, job, run.owner, reason=exc.error_message)
    if released.outcome is not Outcome.RELEASED:
        return released
    log.warning("job.slow", error_code=exc.code, error=str(exc), retry_after_s=delay_s)
    return ProcessResult(Outcome.SLOW, delay_s, size_bytes=job.expected_size)


def key_reread_due(
    deps: ServiceDeps, job: FileJob, run: FileRun, exc: PermanentError, delay_s: int
) -> ProcessResult:
    """Give a file refused wrong_key back until its feed's key is read again (`delay_s`, the
    rest of DLPIPE_SECRET_REREAD_SECONDS since the last re-read): a fix made since that read
    reaches it then, and a key still wrong ends it `error` on that fresh read. BUSY: like a
    live claim's, its message comes back as a fresh copy delayed that long."""
    released = release(deps, job, run.owner, reason=exc.error_message)
    if released.outcome is not Outcome.RELEASED:
        return released
    log.warning("job.key_reread_due", error_code=exc.code, error=str(exc), retry_after_s=delay_s)
    return ProcessResult(Outcome.BUSY, delay_s, size_bytes=job.expected_size)


def release(
    deps: ServiceDeps,
    job: FileJob,
    owner: str,
    *,
    quiet: bool = False,
    reason: str | None = None,
) -> ProcessResult:
    """Give the claim back: the job is `available` again (`reason` its last error); `quiet`
    logs a failed release instead of raising it."""
    try:
        deps.jobs.release(job.file_id, owner, error_message=reason)
    except LeaseLostError:
        log.warning("job.lease_lost", during="release")
        return ProcessResult(Outcome.LEASE_LOST)
    except Exception:
        if not quiet:
            raise
        log.warning("job.release_failed")
        return ProcessResult(Outcome.RELEASED)
    log.info("job.released")
    return ProcessResult(Outcome.RELEASED)

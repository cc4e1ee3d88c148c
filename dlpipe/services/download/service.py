"""The download use case: read a job, claim it, run it, record how it ended.

Both entry points (the Lambda handler and the long-poll worker) call `process` and act on
the result: acknowledge the message, hide it until a live claim ends, or make it visible.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import TypeVar

from structlog.contextvars import bound_contextvars

from dlpipe.domain.download_errors import (
    FeedNotConfiguredError,
    PermanentError,
    ProviderSlowError,
    TooLargeForWorkerError,
    TransientError,
)
from dlpipe.domain.errors import ClaimRefusedError, DependencyUnavailableError, LeaseLostError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, FeedError
from dlpipe.domain.model import FileJob, JobStatus, Verified, file_feed
from dlpipe.domain.outage import DEFAULT_DEPENDENCY_BUDGET_SECONDS, worker_retry_s
from dlpipe.domain.routing import Budget, TimeBudget, too_large_message
from dlpipe.domain.rules import ClaimDecision, claim_decision
from dlpipe.domain.stall import slow_retry_s
from dlpipe.domain.unknown_feed import LAST_DELIVERY, unknown_feed_delay_s
from dlpipe.feed_settings import UnknownFeedError
from dlpipe.log import get_logger
from dlpipe.services.download.deps import ServiceDeps
from dlpipe.services.download.file_metrics import (
    NO_ERROR,
    FileFinish,
    record_finished,
)
from dlpipe.services.download.filerun import FileRun
from dlpipe.services.download.lease import LeaseLost, ShutdownRequested
from dlpipe.services.download.transfer import MIB

log = get_logger()
_MAX_VISIBILITY_S = 43_200  # SQS's limit
_CLAIM_ROUNDS = 3
_T = TypeVar("_T")


class Outcome(StrEnum):
    """How processing one message ended."""

    COMPLETED = "completed"
    ALREADY_DONE = "already_done"  # terminal before we came: a stale or duplicate message
    BUSY = "busy"  # another worker holds a live lease: hide the message until it runs out
    FAILED = "failed"  # transient faults outlasted the retries: job `failed`
    ERROR = "error"  # permanent fault: job `error`
    RELEASED = "released"  # shutdown: the job is `available` again, the message must return
    LEASE_LOST = "lease_lost"  # another worker took the claim over; its result stands
    NOT_FOUND = "not_found"  # no such job (or past its TTL)
    NO_TIME = "no_time"  # not claimed: fits a fresh invocation, not what is left of this one
    FEED_UNKNOWN = "feed_unknown"  # not claimed: the message returns after retry_after_s
    SLOW = (
        "slow"  # below the stall floor: `available` again, the message returns after retry_after_s
    )
    # DynamoDB (or another of our AWS dependencies) unavailable past the client's retries:
    # nothing decided, no claim kept; the message returns after retry_after_s (short, growing)
    UNAVAILABLE = "unavailable"


_ACKNOWLEDGED = frozenset(
    {Outcome.COMPLETED, Outcome.ALREADY_DONE, Outcome.FAILED, Outcome.ERROR}
    | {Outcome.LEASE_LOST, Outcome.NOT_FOUND}
)


@dataclass(frozen=True)
class ProcessResult:
    """An outcome, and for BUSY, FEED_UNKNOWN, SLOW and UNAVAILABLE how long the message
    should stay hidden (UNAVAILABLE: `dependency` names what could not be reached)."""

    outcome: Outcome
    retry_after_s: int | None = None
    size_bytes: int | None = None  # the job's size, for routing a delayed copy of its message
    dependency: str | None = None

    @property
    def acknowledge(self) -> bool:
        """True when the message is done with and should be deleted."""
        return self.outcome in _ACKNOWLEDGED


# Another feed's service by the feed's name (built once per feed by the wiring); FeedError
# when the feed is not configured.
FeedServices = Callable[[str], "DownloadService"]


class DownloadService:
    """Claims, downloads, decrypts, verifies and publishes the file a message names, with
    the parts of the FileID's feed: its own, or another feed's service from `feeds`."""

    def __init__(self, deps: ServiceDeps, feeds: FeedServices | None = None) -> None:
        self.deps = deps
        self._feeds = feeds
        self._lock = threading.Lock()
        self._unavailable = 0  # consecutive UNAVAILABLE results: the next backoff grows with it
        self._unavailable_since_ms = 0  # when the first of them came (the deps' clock)

    def process(
        self,
        file_id: str,
        *,
        on_heartbeat: Callable[[int], None] | None = None,
        budget: TimeBudget | None = None,
        receive_count: int | None = None,
    ) -> ProcessResult:
        """Process one FileID; `on_heartbeat(seconds)` keeps the message hidden that long;
        a file that cannot finish in `budget` is not started (see dlpipe.domain.routing).
        `receive_count` is the message's delivery count (None: no message, no later try).

        DynamoDB unavailable past the client's retries is an outcome, not an exception:
        UNAVAILABLE, with no claim kept and a short backoff that grows while it lasts."""
        try:
            result = self._process_feed(file_id, on_heartbeat, budget, receive_count)
        except DependencyUnavailableError as exc:
            return self._unavailable_result(exc)
        if result.outcome is not Outcome.UNAVAILABLE:
            with self._lock:
                self._unavailable = 0
        return result

    def _unavailable_result(self, exc: DependencyUnavailableError) -> ProcessResult:
        now_ms = self.deps.clock.now_ms()
        with self._lock:
            if self._unavailable == 0:
                self._unavailable_since_ms = now_ms
            self._unavailable += 1
            # Never longer than the outage so far: files met together at its start (one per
            # thread) would otherwise grow the delay per file, not per second of outage.
            down_s = math.ceil((now_ms - self._unavailable_since_ms) / 1000)
            retry_after_s = min(worker_retry_s(self._unavailable), max(1, down_s))
        log.warning(
            "job.unavailable",
            dependency=exc.dependency,
            error=str(exc),
            retry_after_s=retry_after_s,
        )
        return ProcessResult(Outcome.UNAVAILABLE, retry_after_s, dependency=exc.dependency)

    def _process_feed(
        self,
        file_id: str,
        on_heartbeat: Callable[[int], None] | None,
        budget: TimeBudget | None,
        receive_count: int | None,
    ) -> ProcessResult:
        # A FileID that names no feed takes the default feed's path, where no job has it:
        # NOT_FOUND, acknowledged like any missing job.
        feed = file_feed(file_id, default=DEFAULT_FEED_NAME)
        if feed == self.deps.feed:
            return self._process(file_id, on_heartbeat, budget)
        try:
            if self._feeds is None:
                raise UnknownFeedError(feed, " for this downloader")
            service = self._feeds(feed)
        except FeedError as exc:
            return self._feed_unknown(file_id, feed, exc, receive_count)
        except PermanentError as exc:  # its key unusable: no retry can help, say so on the job
            return self._refuse(file_id, exc)
        return service.process(file_id, on_heartbeat=on_heartbeat, budget=budget)

    def _feed_unknown(
        self, file_id: str, feed: str, exc: FeedError, receive_count: int | None
    ) -> ProcessResult:
        """A feed no source knows (yet): the job is left as it is for a later delivery, hidden
        longer each time, and ends `unknown_feed` on the last one (dlpipe.domain.unknown_feed)."""
        delay_s = None if receive_count is None else unknown_feed_delay_s(receive_count)
        if delay_s is None:
            where = "" if receive_count is None else f" (delivery {receive_count}, the last)"
            return self._refuse(file_id, FeedNotConfiguredError(f"{exc}{where}"))
        with bound_contextvars(file_id=file_id):
            job = self.deps.jobs.get(file_id)
            if job is None:
                log.warning("job.not_found")
                return ProcessResult(Outcome.NOT_FOUND)
            if claim_decision(job, self.deps.clock.now_ms()) is ClaimDecision.DONE:
                log.info("job.already_done", status=str(job.status))
                return ProcessResult(Outcome.ALREADY_DONE)
            log.warning(
                "job.feed_unknown",
                feed=feed,
                error=str(exc),
                receive_count=receive_count,
                last_delivery=LAST_DELIVERY,
                retry_after_s=delay_s,
            )
            return ProcessResult(Outcome.FEED_UNKNOWN, delay_s, size_bytes=job.expected_size)

    def _refuse(self, file_id: str, error: PermanentError) -> ProcessResult:
        """End the job `error` under a claim of its own, without fetching anything."""
        with bound_contextvars(file_id=file_id):
            job = self.deps.jobs.get(file_id)
            if job is None:
                log.warning("job.not_found")
                return ProcessResult(Outcome.NOT_FOUND)
            owner = f"{self.deps.owner_prefix}:{uuid.uuid4().hex[:8]}"
            claimed = self._claim(job, owner)
            if isinstance(claimed, ProcessResult):
                return claimed
            return self._finish(claimed, owner, JobStatus.ERROR, error)

    def _process(
        self,
        file_id: str,
        on_heartbeat: Callable[[int], None] | None,
        budget: TimeBudget | None,
    ) -> ProcessResult:
        with bound_contextvars(file_id=file_id):
            self.deps.pause("received", file_id)
            job = self.deps.jobs.get(file_id)
            if job is None:
                log.warning("job.not_found")
                return ProcessResult(Outcome.NOT_FOUND)
            with bound_contextvars(batch_id=job.batch_id):
                fit = budget.decide(job.expected_size) if budget else Budget.FITS
                if fit is Budget.LATER and self._claimable(job):
                    log.info("job.deferred", reason="not enough time left in this invocation")
                    return ProcessResult(Outcome.NO_TIME, size_bytes=job.expected_size)
                owner = f"{self.deps.owner_prefix}:{uuid.uuid4().hex[:8]}"
                claimed = self._claim(job, owner)
                if isinstance(claimed, ProcessResult):
                    return claimed
                if fit is Budget.TOO_LARGE and budget is not None:
                    return self._too_large(claimed, owner, budget)
                # A job claimed before (taken over, released, requeued) may have left an upload.
                reclaimed = claimed.attempts > 1
                run = FileRun(
                    self.deps, claimed, owner, reclaimed=reclaimed, on_heartbeat=on_heartbeat
                )
                return self._run(run, claimed, on_heartbeat)

    def _claimable(self, job: FileJob) -> bool:
        return claim_decision(job, self.deps.clock.now_ms()) is not ClaimDecision.DONE

    def _too_large(self, job: FileJob, owner: str, budget: TimeBudget) -> ProcessResult:
        # Claimed first, then failed under that claim: the job is visible and counted as
        # `failed` instead of restarting from zero until its message dead-letters.
        size = job.expected_size or 0
        error = TooLargeForWorkerError(too_large_message(size, budget.full_s or 0))
        return self._finish(job, owner, JobStatus.FAILED, error)

    def _claim(self, job: FileJob, owner: str) -> FileJob | ProcessResult:
        for _ in range(_CLAIM_ROUNDS):
            decision = claim_decision(job, self.deps.clock.now_ms())
            if decision is ClaimDecision.DONE:
                log.info("job.already_done", status=str(job.status))
                return ProcessResult(Outcome.ALREADY_DONE)
            if decision is ClaimDecision.BUSY:
                return self._busy(job)
            try:
                claimed = self.deps.jobs.claim(job.file_id, owner, self.deps.lease_seconds)
            except ClaimRefusedError as refused:
                if refused.current is None:
                    log.warning("job.not_found")
                    return ProcessResult(Outcome.NOT_FOUND)
                job = refused.current  # lost a race: decide again from what the store holds
                continue
            log.info("job.claimed", attempts=claimed.attempts, decision=decision.value)
            return claimed
        return self._busy(job)

    def _busy(self, job: FileJob) -> ProcessResult:
        remaining_ms = (job.lease_expires_at_ms or 0) - self.deps.clock.now_ms()
        margin_s = self.deps.tuning.margin_s(self.deps.lease_seconds)
        seconds = max(0, math.ceil(remaining_ms / 1000)) + margin_s
        retry_after_s = min(seconds, _MAX_VISIBILITY_S)
        log.info("job.busy", retry_after_s=retry_after_s)
        return ProcessResult(Outcome.BUSY, retry_after_s, size_bytes=job.expected_size)

    def _run(
        self, run: FileRun, job: FileJob, on_heartbeat: Callable[[int], None] | None = None
    ) -> ProcessResult:
        started = time.monotonic()
        try:
            with run.heartbeat:
                self.deps.pause("claimed", job.file_id)
                key, verified = run.produce()
            self.deps.pause("published", job.file_id)
            return self._while_claimed(
                lambda: self._complete(job, run, key, verified, time.monotonic() - started),
                on_heartbeat,
            )
        except LeaseLost:
            log.warning("job.lease_lost", during="transfer")
            return ProcessResult(Outcome.LEASE_LOST)
        except ShutdownRequested:
            return self._release(job, run.owner)
        except ProviderSlowError as exc:
            return self._while_claimed(partial(self._slow, job, run, exc, started), on_heartbeat)
        except (PermanentError, TransientError) as exc:
            status = JobStatus.ERROR if isinstance(exc, PermanentError) else JobStatus.FAILED
            finish = partial(
                self._finish, job, run.owner, status, exc, started=started, transfers=run.transfers
            )
            return self._while_claimed(finish, on_heartbeat)
        except DependencyUnavailableError:
            # An outage outlasting the client's retries: the claim is given back as soon as
            # the store answers (not left to run out), then UNAVAILABLE (see `process`).
            self._while_claimed(lambda: self._release(job, run.owner), on_heartbeat)
            raise
        except Exception:
            # A bug: give the claim back, let SQS redeliver.
            log.exception("job.crashed")
            self._release(job, run.owner, quiet=True)
            raise

    def _while_claimed(
        self, call: Callable[[], _T], on_heartbeat: Callable[[int], None] | None
    ) -> _T:
        """`call` (the run's outcome written under our claim: a completion, a `failed` or
        `error`, a release), tried again while DynamoDB is unavailable: 1 s doubling to 30 s,
        the message kept hidden meanwhile, until the stop or the dependency budget. Giving up here would leave the claim to run out, and the
        file hidden for a lease + margin after the outage."""
        started = time.monotonic()
        failures = 0
        while True:
            try:
                return call()
            except DependencyUnavailableError as exc:
                failures += 1
                delay_s = worker_retry_s(failures)
                spent_s = time.monotonic() - started
                if self.deps.stop.is_set() or spent_s + delay_s > DEFAULT_DEPENDENCY_BUDGET_SECONDS:
                    raise
                if failures == 1:
                    log.warning("job.store_unavailable", dependency=exc.dependency, error=str(exc))
                if on_heartbeat is not None:
                    margin_s = self.deps.tuning.margin_s(self.deps.lease_seconds)
                    on_heartbeat(delay_s + margin_s)
                self.deps.stop.wait(delay_s)

    def _complete(
        self, job: FileJob, run: FileRun, key: str, verified: Verified, seconds: float
    ) -> ProcessResult:
        try:
            self.deps.jobs.complete(
                job.file_id,
                run.owner,
                byte_count=verified.byte_count,
                sha256=verified.sha256,
                destination_key=key,
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

    def _finish(
        self,
        job: FileJob,
        owner: str,
        status: JobStatus,
        exc: PermanentError | TransientError,
        *,
        started: float | None = None,  # when the run began; None: nothing was attempted
        transfers: int = 0,
    ) -> ProcessResult:
        try:
            self.deps.jobs.finish_unsuccessfully(job.file_id, owner, status, exc.error_message)
        except LeaseLostError:
            log.warning("job.lease_lost", during=str(status))
            return ProcessResult(Outcome.LEASE_LOST)
        log.warning(f"job.{status}", error_code=exc.code, error=exc.error_message)
        outcome = Outcome.FAILED if status is JobStatus.FAILED else Outcome.ERROR
        seconds = None if started is None else time.monotonic() - started
        record_finished(job, FileFinish(outcome, exc.code, seconds, transfers=transfers))
        return ProcessResult(outcome)

    def _slow(
        self, job: FileJob, run: FileRun, exc: ProviderSlowError, started: float
    ) -> ProcessResult:
        """Give a file abandoned below the stall floor back for a later claim, its message
        hidden a growing while; on its last attempt it ends `failed` (provider_slow)."""
        delay_s = slow_retry_s(job.attempts)
        if delay_s is None:
            return self._finish(
                job, run.owner, JobStatus.FAILED, exc, started=started, transfers=run.transfers
            )
        released = self._release(job, run.owner, reason=exc.error_message)
        if released.outcome is not Outcome.RELEASED:
            return released
        log.warning("job.slow", error_code=exc.code, error=str(exc), retry_after_s=delay_s)
        return ProcessResult(Outcome.SLOW, delay_s, size_bytes=job.expected_size)

    def _release(
        self, job: FileJob, owner: str, *, quiet: bool = False, reason: str | None = None
    ) -> ProcessResult:
        try:
            self.deps.jobs.release(job.file_id, owner, error_message=reason)
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

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
from functools import partial

from structlog.contextvars import bound_contextvars

from dlpipe.domain.download_errors import (
    FeedNotConfiguredError,
    PermanentError,
    ProviderSlowError,
    TooLargeForWorkerError,
    TransientError,
    WrongKeyError,
)
from dlpipe.domain.errors import DependencyUnavailableError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, FeedError
from dlpipe.domain.model import FileJob, JobStatus, file_feed
from dlpipe.domain.outage import worker_retry_s
from dlpipe.domain.routing import Budget, TimeBudget, too_large_message
from dlpipe.domain.rules import ClaimDecision, claim_decision
from dlpipe.domain.unknown_feed import LAST_DELIVERY, unknown_feed_delay_s
from dlpipe.feed_settings import UnknownFeedError
from dlpipe.log import get_logger
from dlpipe.services.download.claim import (
    claim,
    complete,
    finish,
    key_reread_due,
    release,
    slow,
    while_claimed,
)
from dlpipe.services.download.deps import ServiceDeps
from dlpipe.services.download.filerun import FileRun
from dlpipe.services.download.lease import LeaseLost, ShutdownRequested
from dlpipe.services.download.outcome import Outcome, ProcessResult, fault_status

# Outcome and ProcessResult live in outcome.py; the entry points and tests import them here,
# with the service that returns them.
__all__ = ["DownloadService", "FeedServices", "Outcome", "ProcessResult"]

log = get_logger()

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
        UNAVAILABLE, with no claim kept and a short backoff that grows while it lasts. So is
        Secrets Manager unavailable when the feed's key or token is to be read: before the
        claim (the key: `key_ready`, a named feed's parts) or under it (a re-read, the token
        for a fresh URL), which is then given back."""
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
            try:
                self.deps.key_ready()  # an outage: DependencyUnavailableError, see `process`
            except PermanentError as exc:  # the key read at last is unusable: as for a feed's
                return self._refuse(file_id, exc)
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
            claimed = claim(self.deps, job, owner)
            if isinstance(claimed, ProcessResult):
                return claimed
            return finish(self.deps, claimed, owner, JobStatus.ERROR, error)

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
                claimed = claim(self.deps, job, owner)
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
        return finish(self.deps, job, owner, JobStatus.FAILED, error)

    def _run(
        self, run: FileRun, job: FileJob, on_heartbeat: Callable[[int], None] | None = None
    ) -> ProcessResult:
        started = time.monotonic()
        try:
            with run.heartbeat:
                self.deps.pause("claimed", job.file_id)
                key, verified = run.produce()
            self.deps.pause("published", job.file_id)
            return while_claimed(
                self.deps,
                lambda: complete(
                    self.deps, job, run, key, verified, seconds=time.monotonic() - started
                ),
                on_heartbeat,
            )
        except LeaseLost:
            log.warning("job.lease_lost", during="transfer")
            return ProcessResult(Outcome.LEASE_LOST)
        except ShutdownRequested:
            return release(self.deps, job, run.owner)
        except ProviderSlowError as exc:
            settle = partial(slow, self.deps, job, run, exc, started)
            return while_claimed(self.deps, settle, on_heartbeat)
        except (PermanentError, TransientError) as exc:
            reread_after_s = _key_reread_after_s(exc)
            if reread_after_s is not None and isinstance(exc, PermanentError):
                give_back = partial(key_reread_due, self.deps, job, run, exc, reread_after_s)
                return while_claimed(self.deps, give_back, on_heartbeat)
            end = partial(
                finish,
                self.deps,
                job,
                run.owner,
                fault_status(exc),
                exc,
                started=started,
                transfers=run.transfers,
            )
            return while_claimed(self.deps, end, on_heartbeat)
        except DependencyUnavailableError:
            # An outage outlasting the client's retries: the claim is given back as soon as
            # the store answers (not left to run out), then UNAVAILABLE (see `process`).
            while_claimed(self.deps, lambda: release(self.deps, job, run.owner), on_heartbeat)
            raise
        except Exception:
            # A bug: give the claim back, let SQS redeliver.
            log.exception("job.crashed")
            release(self.deps, job, run.owner, quiet=True)
            raise


def _key_reread_after_s(exc: PermanentError | TransientError) -> int | None:
    """For a wrong_key refused before the key could be read again (the Decryption port's
    `reread_after_s`, adapters/decryption.py): in how many seconds it is read again."""
    if not isinstance(exc, WrongKeyError):
        return None
    seconds = getattr(exc, "reread_after_s", None)
    return seconds if isinstance(seconds, int) and seconds > 0 else None

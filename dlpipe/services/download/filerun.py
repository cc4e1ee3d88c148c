"""One claimed file, start to finish: heartbeat, bounded retries, URL refresh, publish.

The claim is ours when a FileRun starts. Every way out records an outcome conditional on
that claim (completed, failed, error, released), or leaves the job alone if it was lost.
A restated file's revision is published over the previous revision's object (revision.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_random_exponential

from dlpipe.domain.destination_key import destination_key
from dlpipe.domain.download_errors import (
    ObjectExists,
    ProviderRejectedError,
    ProviderSlowError,
    ProviderUnreachableError,
    TransientError,
    UrlRefusedError,
)
from dlpipe.domain.errors import LeaseLostError, StoreUnavailableError
from dlpipe.domain.model import FileJob, Verified
from dlpipe.domain.provider_errors import ProviderError, ProviderUnavailableError
from dlpipe.domain.url_policy import check_url, url_host
from dlpipe.log import get_logger
from dlpipe.services.download.deps import ServiceDeps
from dlpipe.services.download.lease import Heartbeat, LeaseLost
from dlpipe.services.download.ports import Upload
from dlpipe.services.download.revision import RevisionPlan, is_revision, revision_plan
from dlpipe.services.download.transfer import transfer_once

log = get_logger()


def _retryable(exc: BaseException) -> bool:
    # A refused URL was already refreshed once (or cannot be): retrying it cannot help. A slow
    # source is not retried here either: the claim goes back, so the thread serves others.
    if isinstance(exc, UrlRefusedError | ProviderSlowError):
        return False
    return isinstance(exc, TransientError | StoreUnavailableError)


class FileRun:
    """Download, verify and publish one claimed job; raises what the caller must record."""

    def __init__(
        self,
        deps: ServiceDeps,
        job: FileJob,
        owner: str,
        *,
        reclaimed: bool,
        on_heartbeat: Callable[[int], None] | None,
    ) -> None:
        self._deps, self._job, self.owner, self._reclaimed = deps, job, owner, reclaimed
        self._url, self._refreshed = job.presigned_url, False
        self.transfers = 0  # transfers tried, for the file's metrics
        # A revision's: the version of its key that the published file replaced, for the
        # completion (PreviousVersionID); None for a first revision or when not found.
        self.previous_version_id: str | None = None
        tuning = deps.tuning
        self.heartbeat = Heartbeat(
            deps.jobs,
            job.file_id,
            owner,
            deps.lease_seconds,
            on_beat=on_heartbeat,
            visibility_s=deps.lease_seconds + tuning.margin_s(deps.lease_seconds),
            stop=deps.stop,
            # The clock leases are judged by (another worker takes a claim over once its
            # LeaseExpiresAt has passed on this kind of clock), and the one tests move.
            clock=lambda: deps.clock.now_ms() / 1000,
        )
        self._backoff = wait_random_exponential(
            multiplier=tuning.retry_wait_s, max=tuning.retry_wait_max_s
        )

    def produce(self) -> tuple[str, Verified]:
        """The destination key and the verified object there, published by us or before us."""
        key = destination_key(self._job, self._deps.destination_prefix)
        if self._reclaimed:
            self._deps.destination.abort_stale_uploads(key)
        # A revision's key holds the previous revision: each attempt reads what is there.
        existing = None
        if not is_revision(self._job):
            existing = self._deps.destination.already_published(key, self._job)
        if existing is not None:
            log.info("job.already_published", destination_key=key)
            return key, existing
        retrying = Retrying(
            stop=stop_after_attempt(self._deps.tuning.attempts),
            wait=self._wait,
            retry=retry_if_exception(_retryable),
            sleep=self._sleep,
            before_sleep=self._log_retry,
            reraise=True,
        )
        return key, retrying(self._attempt_with_refresh, key)

    def _attempt_with_refresh(self, key: str) -> Verified:
        try:
            return self._attempt(key)
        except UrlRefusedError:
            if self._refreshed or self._deps.provider is None:
                raise
            self._refresh_url()
            return self._attempt(key)

    def _attempt(self, key: str) -> Verified:
        self.heartbeat.checkpoint()
        deps, tuning = self._deps, self._deps.tuning
        plan = None
        if is_revision(self._job):
            # Read just before this attempt's upload: its ETag is the one If-Match sends.
            plan = revision_plan(self._job, key, self._deps.destination.current_object(key))
            if plan.published is not None:
                log.info("job.already_published", destination_key=key)
                self._replaced_before(key, plan.published.version_id)
                return plan.published.verified
        self.transfers += 1
        sink = self._open_upload(key, plan)
        started = time.monotonic()
        try:
            verified = transfer_once(
                self._job,
                self._url,
                decryption=deps.decryption,
                source=deps.source,
                sink=sink,
                tuning=tuning,
                checkpoint=self.heartbeat.checkpoint,
                policy=deps.url_policy,
                clock=lambda: deps.clock.now_ms() / 1000,
            )
            log.info("job.downloaded", byte_count=verified.byte_count, seconds=_since(started))
            # Cheap early exit for a worker that already lost its claim. It is only a check:
            # a pause after it defeats it, so the publish itself is conditional (sink.py):
            # create-only, or over the previous revision's object only.
            # On a recent lease the fence reads the job rather than extending its lease.
            self.heartbeat.fence()
            try:
                sink.publish(verified.sha256)
            except ObjectExists:
                # Someone published first (a successor, or our own earlier attempt; for a
                # revision, also one that replaced the previous revision since our read):
                # finish only if theirs is exactly our file; completion stays conditional on
                # the claim.
                log.info("job.publish_refused", destination_key=key, reason="object_exists")
                existing = deps.destination.verify_existing(key, verified)
                log.info("job.already_published", destination_key=key)
                if plan is not None:
                    current = self._deps.destination.current_object(key)
                    if current is not None and current.verified == existing:
                        self._replaced_before(key, current.version_id)
                return existing
            replaced = {}
            if plan is not None:
                self.previous_version_id = plan.previous_version_id
                replaced = {"previous_version_id": plan.previous_version_id}
            log.info("job.published", destination_key=key, parts=sink.part_count, **replaced)
            return verified
        finally:
            if not sink.published:
                _abort(sink)

    def _open_upload(self, key: str, plan: RevisionPlan | None) -> Upload:
        tuning = self._deps.tuning
        return self._deps.destination.open_upload(
            key,
            part_bytes=tuning.part_bytes_for(self._job.expected_size),
            max_in_flight=tuning.max_in_flight_parts,
            expected_sha256=(self._job.expected_sha256 or "").lower() or None,
            replaces_etag=None if plan is None else plan.replaces_etag,
        )

    def _replaced_before(self, key: str, version_id: str | None) -> None:
        """This revision was published before us, as version `version_id` of `key`: what it
        replaced is the version before that one."""
        if version_id is not None:
            self.previous_version_id = self._deps.destination.version_before(key, version_id)

    def _refresh_url(self) -> None:
        deps, job = self._deps, self._job
        assert deps.provider is not None
        try:
            descriptor = deps.provider().get_file(job.entity, job.download_date)
        except ProviderUnavailableError as exc:
            raise ProviderUnreachableError(str(exc)) from exc
        except ProviderError as exc:
            raise ProviderRejectedError(str(exc)) from exc
        # A refreshed URL is provider input like the listed one: refused before it is stored.
        check_url(deps.url_policy, descriptor.url)
        try:
            deps.jobs.update_url(job.file_id, self.owner, descriptor.url, descriptor.expires_at)
        except LeaseLostError as exc:
            raise LeaseLost(str(exc)) from exc
        self._url, self._refreshed = descriptor.url, True
        log.info(
            "job.url_refreshed", host=url_host(descriptor.url), expires_at=descriptor.expires_at
        )

    def _wait(self, state: RetryCallState) -> float:
        backoff = self._backoff(state)
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after_s", None)
        if retry_after is None:
            return backoff
        return max(backoff, min(float(retry_after), self._deps.tuning.retry_after_max_s))

    def _sleep(self, seconds: float) -> None:
        # A shutdown cuts the wait short; the next attempt's checkpoint then gives up.
        self._deps.stop.wait(seconds)

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "job.retrying",
            attempt=state.attempt_number,
            error_code=getattr(exc, "code", type(exc).__name__),
            error=str(exc),
            wait_s=round(state.upcoming_sleep, 3),
        )


def _abort(sink: Upload) -> None:
    try:
        sink.abort()
    except TransientError as exc:
        # The bucket's lifecycle rule aborts what is left after a day.
        log.warning("upload.abort_failed", error_type=type(exc).__name__, error=str(exc))


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)

"""One whole day on the local stack: stub provider, downloader workers, the durable poller."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from dlpipe.bootstrap.download import build_service
from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.config import Settings
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.outage import OutageBackoff
from dlpipe.domain.statuses import (
    ERROR_JOB_STATUSES,
    SUCCESSFUL_BATCH_STATUSES,
    UNSUCCESSFUL_JOB_STATUSES,
)
from dlpipe.entrypoints.pool import WorkerPool, build_worker_pool
from dlpipe.entrypoints.worker import WorkerOptions
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.local.stack import LocalStack
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.local.testpoints import pause_from_env
from dlpipe.services.ops.feed_filter import record_feed
from dlpipe.services.ops.ports import OpsBatches, OpsJobs
from dlpipe.services.orchestrator.durable import build_durable_handler

_HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class DayOptions:
    """What to run: the date, how many workers, how often to poll."""

    date: str
    workers: int = 4
    poll_interval_seconds: int = 2
    max_polls: int = 90
    # A local day lasts minutes, not hours: recovery (lease, sweeper re-send) is scaled to fit
    # its polling window, as build_flow's recovery check demands (RELIABILITY.md, bounds).
    lease_seconds: int = 30
    resend_after_seconds: int = 30
    # How long a feed's day waits out its provider's outage (None: the orchestrator's default).
    outage: OutageBackoff | None = None


@dataclass(frozen=True)
class FileReport:
    """One file's end state, checked against the provider's plaintext digest."""

    file_id: str
    status: str
    byte_count: int | None
    verified: bool
    error_message: str | None


@dataclass(frozen=True)
class DayReport:
    """The batch's outcome and every file's."""

    batch_id: str
    status: str
    files: list[FileReport]
    result: dict[str, Any] = field(default_factory=dict)  # the run's own result (counts, outcome)
    feed: str = DEFAULT_FEED_NAME

    @property
    def ok(self) -> bool:
        """True when the batch completed, was handed off and every file verified."""
        handed_off = not self.result.get("handoff_problem")
        return (
            self.status in SUCCESSFUL_BATCH_STATUSES
            and handed_off
            and all(f.verified for f in self.files)
        )


@contextmanager
def running_workers(
    stack: LocalStack, count: int, settings: Settings | None = None
) -> Iterator[WorkerPool]:
    """`count` downloader threads on each of the stack's queues (main and large-file), as
    `dlpipe worker` runs them, stopped (by request) on exit."""
    settings = settings or stack.settings
    options = WorkerOptions(concurrency=count, wait_seconds=1, max_messages=1, grace_s=5.0)
    stop = threading.Event()
    service = build_service(settings, stack.clients, stop=stop, pause=pause_from_env())
    worker = build_worker_pool(settings, stack.clients, options, service=service, stop=stop)
    thread = threading.Thread(target=worker.run, name="dlpipe-workers", daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.request_stop("run finished")
        thread.join(timeout=30)


def run_day(
    stack: LocalStack,
    files: list[StubFileSpec],
    options: DayOptions,
    on_progress: Callable[[DayProgress], None] | None = None,
) -> tuple[DayReport, dict[str, Any]]:
    """Run the day's batch end to end; return the report and the poller's result."""
    with StubProvider(stack.clients, stack.public_key_pem, stack.provider_token, files) as stub:
        settings = replace(
            stack.settings,
            provider_base_url=stub.base_url,
            poll_interval_seconds=options.poll_interval_seconds,
            max_polls=options.max_polls,
            lease_seconds=options.lease_seconds,
            resend_after_seconds=options.resend_after_seconds,
        )
        handler = build_durable_handler(
            lambda: build_flow(settings, stack.clients),
            options.poll_interval_seconds,
            options.max_polls,
            outage=options.outage,
        )
        tables = build_ops_context(settings, stack.clients)
        watcher = ProgressWatcher(tables.jobs(), tables.batches(), options.date, on_progress)
        budget_s = options.poll_interval_seconds * options.max_polls + 300.0
        with running_workers(stack, options.workers, settings), watcher.watching():
            result = run_durable_locally(
                handler, {"date": options.date}, skip_time=False, timeout_seconds=budget_s
            )
        expected = {f: e.sha256 for f, e in stub.expected(options.date).items()}
    return day_report(stack, result, expected), result


@dataclass(frozen=True)
class DayProgress:
    """Where the day stands: files completed (published), files failed or in error, all files."""

    completed: int
    unsuccessful: int
    total: int
    error: int = 0  # of the unsuccessful, those in `error` (permanent); the rest are `failed`

    @property
    def failed(self) -> int:
        """Unsuccessful files in `failed` (transient, retries used up)."""
        return self.unsuccessful - self.error


def day_progress(jobs: Iterable[FileJob]) -> DayProgress:
    """Count the batch's jobs by outcome: a claimed or failed file is not progress."""
    statuses = [job.status for job in jobs]
    completed = statuses.count(JobStatus.COMPLETED)
    unsuccessful = sum(1 for status in statuses if status in UNSUCCESSFUL_JOB_STATUSES)
    error = sum(1 for status in statuses if status in ERROR_JOB_STATUSES)
    return DayProgress(completed, unsuccessful, len(statuses), error)


class ProgressWatcher:
    """Reports the day's progress from the BatchIndex while the poller runs."""

    def __init__(
        self,
        jobs: OpsJobs,
        batches: OpsBatches,
        date: str,
        on_progress: Callable[[DayProgress], None] | None,
        feed: str = DEFAULT_FEED_NAME,
    ) -> None:
        self._jobs, self._batches, self._date, self._feed = jobs, batches, date, feed
        self._on_progress = on_progress
        self._stop = threading.Event()

    @contextmanager
    def watching(self) -> Iterator[None]:
        thread = threading.Thread(target=self._loop, daemon=True)
        if self._on_progress:
            thread.start()
        try:
            yield
        finally:
            self._stop.set()
            if thread.is_alive():
                thread.join(timeout=5)

    def _loop(self) -> None:
        assert self._on_progress is not None
        while not self._stop.wait(0.5):
            self._on_progress(day_progress(self._batch_jobs()))

    def _batch_jobs(self) -> Iterator[FileJob]:
        # A date's batches are every feed's (PollingDateIndex): only this feed's is its progress.
        batches = [
            b for b in self._batches.query_by_date(self._date) if record_feed(b) == self._feed
        ]
        if batches:
            yield from self._jobs.query_by_batch(batches[-1].batch_id)


def day_report(
    stack: LocalStack,
    result: dict[str, Any],
    expected: dict[str, str],
    feed: str = DEFAULT_FEED_NAME,
    destination_prefix: str = "",
) -> DayReport:
    """Each expected file's job, verified against the bucket: completed, published under the
    feed's prefix, and its object's bytes hash to the provider's SHA-256."""
    jobs = build_ops_context(stack.settings, stack.clients).jobs()
    found = jobs.batch_get(expected)
    reports = []
    under = f"{destination_prefix}/" if destination_prefix else ""
    for file_id in sorted(expected):
        job = found.get(file_id)
        verified = (
            job is not None
            and job.status is JobStatus.COMPLETED
            and job.destination_key is not None
            and job.destination_key.startswith(under)
            and _object_sha256(stack, job.destination_key) == expected[file_id]
        )
        reports.append(
            FileReport(
                file_id=file_id,
                status=str(job.status) if job else "missing",
                byte_count=job.byte_count if job else None,
                verified=verified,
                error_message=job.error_message if job else "no job was written",
            )
        )
    return DayReport(
        batch_id=str(result.get("batch_id") or ""),  # "": the run failed before its batch
        status=str(result.get("status")),
        files=reports,
        result=dict(result),
        feed=feed,
    )


def _object_sha256(stack: LocalStack, key: str) -> str:
    """SHA-256 of the published object's bytes, read back from the bucket (not its metadata)."""
    body = stack.clients.s3.get_object(
        Bucket=stack.settings.require("destination_bucket"), Key=key
    )["Body"]
    digest = hashlib.sha256()
    for chunk in iter(lambda: body.read(_HASH_CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()

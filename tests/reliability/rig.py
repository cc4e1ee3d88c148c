"""The reliability rig: one test's queue pair, the real flow under the durable runner, workers
(threads or `dlpipe worker` processes), call counters and a log tap. No tests here."""

from __future__ import annotations

import dataclasses
import io
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests
import structlog
from aws_durable_execution_sdk_python.exceptions import RetryableSerDesError
from aws_durable_execution_sdk_python_testing.execution import ExecutionStatus
from aws_durable_execution_sdk_python_testing.runner import (
    DurableFunctionTestResult,
    DurableFunctionTestRunner,
)
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.decryption import KeyDecryption
from dlpipe.adapters.destination import S3Destination
from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.provider_client import ProviderClient
from dlpipe.adapters.queue import JobQueue
from dlpipe.adapters.source import HttpSource
from dlpipe.config import Settings
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.messages import JobMessage
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.domain.outage import OutageBackoff
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import ExpectedFile
from dlpipe.local.stub.server import StubProvider
from dlpipe.log import configure_logging
from dlpipe.services.download.deps import ServiceDeps
from dlpipe.services.download.service import DownloadService
from dlpipe.services.download.transfer import TransferTuning
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import BatchFlow
from tests.e2e.test_worker_kit import Queues, WorkerProcess, wait_until, worker_env
from tests.integration.test_downloader_kit import FAST, LOOPBACK_URLS
from tests.provider_support import fast_client
from tests.reliability.invariant import DayFacts, check_day
from tests.support import unique_day as unique_day  # noqa: PLC0414 - re-exported for the scenarios

# Thread workers retry in milliseconds, as in the downloader's integration tests.
THREAD_TUNING: TransferTuning = FAST


def unique_entity() -> str:
    """An entity prefix no other test uses."""
    return f"rel{uuid.uuid4().hex[:10]}"


@dataclass
class Rig:
    """The session emulator as one test sees it: its own queue pair, the shared tables."""

    clients: AwsClients
    provisioned: Provisioned
    queues: Queues
    private_key: RSAPrivateKey
    key_file: Path
    aws_env: dict[str, str]
    workdir: Path

    @property
    def bucket(self) -> str:
        """The destination bucket."""
        return str(self.provisioned.destination_bucket)

    def jobs(self, clients: AwsClients | None = None) -> JobsTable:
        """The jobs table on the wall clock (leases must agree with presigned-URL time)."""
        client = (clients or self.clients).dynamodb
        return JobsTable(client, self.provisioned.jobs_table, SystemClock())

    def batches(self, clients: AwsClients | None = None) -> BatchesTable:
        """The batches table on the wall clock."""
        client = (clients or self.clients).dynamodb
        return BatchesTable(client, self.provisioned.batches_table, SystemClock())

    def flow(
        self,
        stub: StubProvider,
        *,
        provider: ProviderClient | None = None,
        queue: JobQueue | None = None,
        clients: AwsClients | None = None,
    ) -> BatchFlowService:
        """The real batch flow on this rig's queue, listing `stub` with a fast client."""
        clients = clients or self.clients
        return BatchFlowService(
            jobs=self.jobs(clients),
            batches=self.batches(clients),
            provider=provider or fast_client(stub),
            queue=queue or JobQueue(clients.sqs, self.queues.url),
            clock=SystemClock(),
            new_uuid=lambda: str(uuid.uuid4()),
        )

    def check_day(
        self,
        date: str,
        batch_id: str,
        expected: Mapping[str, ExpectedFile],
        *,
        objects_prefix: str | None = None,
    ) -> DayFacts:
        """The invariant for the day's batch on this rig's tables, bucket and DLQ."""
        return check_day(
            self.clients,
            jobs_table=self.provisioned.jobs_table,
            batches_table=self.provisioned.batches_table,
            bucket=self.bucket,
            dlq_url=self.queues.dlq_url,
            date=date,
            batch_id=batch_id,
            expected=expected,
            objects_prefix=objects_prefix,
        )

    def run_day(
        self,
        flow: BatchFlow,
        date: str,
        *,
        polls: int = 120,
        interval_s: int = 1,
        outage: OutageBackoff | None = None,
    ) -> dict[str, Any]:
        """Run the day under the SDK's local runner in real time; the handler's result."""
        handler = build_durable_handler(lambda: flow, interval_s, polls, outage=outage)
        return run_durable_locally(
            handler, {"date": date}, skip_time=False, timeout_seconds=polls * interval_s + 120
        )

    def run_day_virtual(
        self,
        flow: BatchFlow,
        date: str,
        *,
        polls: int = 5,
        interval_s: int = 60,
        outage: OutageBackoff | None = None,
        timeout_s: int = 120,
    ) -> VirtualRun:
        """Run the day under the local runner with waits and retry backoffs in virtual time."""
        handler = build_durable_handler(lambda: flow, interval_s, polls, outage=outage)
        with DurableFunctionTestRunner(handler=handler, skip_time=True) as runner:
            arn = runner.run_async(input=json.dumps({"date": date}), execution_timeout=timeout_s)
            outcome = runner.wait_for_result(arn, timeout=timeout_s + 5)
        return VirtualRun(outcome, arn)

    def service(
        self,
        stub: StubProvider | None,
        *,
        lease_seconds: int,
        clients: AwsClients | None = None,
        tuning: TransferTuning = THREAD_TUNING,
        stop: threading.Event | None = None,
        provider: Callable[[], ProviderClient] | None = None,
    ) -> DownloadService:
        """A download service on this rig; it re-signs URLs through `stub` (fast client)."""
        clients = clients or self.clients
        if provider is None and stub is not None:
            provider = lambda: fast_client(stub)  # noqa: E731
        return DownloadService(
            ServiceDeps(
                jobs=self.jobs(clients),
                destination=S3Destination(clients.s3, self.bucket),
                source=HttpSource(),
                decryption=KeyDecryption(self.private_key),
                provider=provider,
                lease_seconds=lease_seconds,
                url_policy=LOOPBACK_URLS,
                tuning=tuning,
                stop=stop or threading.Event(),
            )
        )

    @contextmanager
    def thread_workers(
        self,
        services: Sequence[DownloadService],
        *,
        concurrency: int = 1,
        sqs: Any = None,
    ) -> Iterator[list[Worker]]:
        """One long-poll Worker per service, each on its own thread; stopped and joined on exit."""
        workers = [
            Worker(
                service,
                DownloadQueue(sqs or self.clients.sqs, self.queues.url),
                WorkerOptions(concurrency=concurrency, wait_seconds=1, grace_s=5.0),
            )
            for service in services
        ]
        threads = [
            threading.Thread(target=w.run, name=f"rel-worker-{n}", daemon=True)
            for n, w in enumerate(workers)
        ]
        for thread in threads:
            thread.start()
        try:
            yield workers
        finally:
            for worker in workers:
                worker.request_stop("test finished")
            for thread in threads:
                thread.join(timeout=45)
        assert not any(t.is_alive() for t in threads), "a worker thread did not stop"

    def worker_process(
        self, stub: StubProvider, name: str, *args: str, lease_seconds: int, **extra: str
    ) -> WorkerProcess:
        """A `dlpipe worker` child process on this rig's queue; its stderr goes to a file."""
        env = worker_env(
            self.aws_env,
            self.provisioned,
            self.queues.url,
            self.key_file,
            stub=stub,
            lease_seconds=lease_seconds,
            **extra,
        )
        return WorkerProcess(env, self.workdir / f"{name}.log", *args)

    def queue_empty(self) -> bool:
        """True when the download queue holds no message: visible, in flight or delayed."""
        attributes = self.clients.sqs.get_queue_attributes(
            QueueUrl=self.queues.url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return all(int(v) == 0 for v in attributes.values())

    def wait_queue_empty(self, timeout_s: float) -> None:
        """Wait (polling, bounded) until every message was consumed."""
        wait_until(self.queue_empty, timeout_s, "the download queue to drain")


@dataclass(frozen=True)
class VirtualRun:
    """A durable run in virtual time: the runner's outcome and the execution ARN (jitter seed)."""

    outcome: DurableFunctionTestResult
    arn: str

    @property
    def result(self) -> dict[str, Any]:
        """The handler's result; AssertionError unless the execution succeeded."""
        status = self.outcome.execution_status
        assert status is ExecutionStatus.SUCCEEDED, (status, self.outcome.error)
        assert self.outcome.result is not None
        result: dict[str, Any] = json.loads(self.outcome.result)
        return result

    def attempts(self, step: str) -> int:
        """How many times the step ran."""
        return self.outcome.get_step(step).attempt

    def virtual_seconds(self, step: str) -> float:
        """Virtual time from the step's first attempt to its end (its retry backoffs included)."""
        op = self.outcome.get_step(step)
        assert op.start_timestamp is not None
        assert op.end_timestamp is not None
        return (op.end_timestamp - op.start_timestamp).total_seconds()


class RecordingQueue(JobQueue):
    """The flow's queue, counting per FileID the messages SQS accepted (per SendMessageBatch)."""

    def __init__(self, sqs: Any, queue_url: str, copies: int = 1) -> None:
        super().__init__(sqs, queue_url)
        self.copies = copies
        self.sent: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _send_to(self, queue_url: str, messages: Sequence[JobMessage]) -> int:
        """Send each message `copies` times, the copies side by side so workers race for them."""
        super()._send_to(queue_url, [m for m in messages for _ in range(self.copies)])
        return len(messages)

    def _send_chunk(self, queue_url: str, chunk: list[JobMessage]) -> None:
        super()._send_chunk(queue_url, chunk)
        with self._lock:
            self.sent.update(m.file_id for m in chunk)


class CrashOnce:
    """Replaces `owner.method`: its `at_call`-th call crashes the durable invocation once,
    before the real call or right after it (its work done, its checkpoint not written)."""

    def __init__(
        self,
        owner: object,
        method: str,
        *,
        at_call: int = 1,
        after: bool = False,
        only_if: Callable[[Any], bool] | None = None,
    ) -> None:
        self._real = getattr(owner, method)
        self._at_call, self._after, self._only_if = at_call, after, only_if
        self.calls = 0
        self.crashed = False
        setattr(owner, method, self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        due = not self.crashed and self.calls >= self._at_call
        if due and not self._after:
            self._crash()
        result = self._real(*args, **kwargs)
        if due and self._after and (self._only_if is None or self._only_if(result)):
            self._crash()
        return result

    def _crash(self) -> None:
        self.crashed = True
        raise RetryableSerDesError("injected crash: the invocation dies before its checkpoint")


@dataclass
class CallCounter:
    """Counts AWS calls made through a client set, by service and operation."""

    calls: Counter[str] = field(default_factory=Counter)
    published: Counter[str] = field(default_factory=Counter)  # S3 keys made visible
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, clients: AwsClients) -> AwsClients:
        """Register the hooks on the DynamoDB, SQS and S3 clients of `clients`; returns it."""
        for service, client in (
            ("dynamodb", clients.dynamodb),
            ("sqs", clients.sqs),
            ("s3", clients.s3),
        ):
            client.meta.events.register(f"after-call.{service}", self._after_call)
        for operation in ("PutObject", "CompleteMultipartUpload"):
            clients.s3.meta.events.register(
                f"before-parameter-build.s3.{operation}", self._remember_key
            )
        return clients

    def _remember_key(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["rel_key"] = params.get("Key")

    def _after_call(
        self, http_response: Any, model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        ok = 200 <= http_response.status_code < 300
        with self._lock:
            self.calls[f"{model.service_model.service_name}.{model.name}"] += 1
            if ok and context.get("rel_key"):
                self.published[context["rel_key"]] += 1

    def total(self, service: str) -> int:
        """Calls made to `service` so far."""
        with self._lock:
            return sum(n for k, n in self.calls.items() if k.startswith(f"{service}."))


def counted_clients(counter: CallCounter) -> AwsClients:
    """A fresh client set (its own session) whose calls `counter` counts."""
    return counter.attach(AwsClients(Settings.from_env()))


class LogTap:
    """dlpipe's real logging pipeline (JSON + redaction), sent to memory while the block runs."""

    def __init__(self, level: str = "DEBUG") -> None:
        self.level = level
        self.buffer = io.StringIO()

    @contextmanager
    def tapping(self) -> Iterator[LogTap]:
        """Configure dlpipe.log to write here; restore the previous structlog config after."""
        saved = structlog.get_config()
        configure_logging(self.level, stream=self.buffer)
        try:
            yield self
        finally:
            structlog.configure(**saved)

    @property
    def text(self) -> str:
        """Everything logged so far."""
        return self.buffer.getvalue()

    def events(self) -> list[dict[str, Any]]:
        """The JSON events logged so far."""
        return [json.loads(x) for x in self.text.splitlines() if x.startswith("{")]


def events_of(processes: Sequence[WorkerProcess]) -> list[dict[str, Any]]:
    """The JSON log events of worker processes (a killed one may have left half a line)."""
    events = []
    for process in processes:
        for line in process.log_path.read_text(errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return [e for e in events if isinstance(e, dict)]


def owner_pid(lease_owner: str | None) -> int | None:
    """The PID in a claim owner id `host:pid:suffix`, if it is one."""
    if not lease_owner:
        return None
    parts = lease_owner.rsplit(":", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def claim_holders(jobs: JobsTable, batch_id: str) -> dict[int, str]:
    """PID -> FileID of each `downloading` job of the batch whose claim a process holds."""
    holders: dict[int, str] = {}
    for job in jobs.query_by_batch(batch_id, JobStatus.DOWNLOADING):
        pid = owner_pid(job.lease_owner)
        if pid is not None:
            holders[pid] = job.file_id
    return holders


@dataclass
class Stopwatch:
    """Monotonic seconds since creation."""

    started: float = field(default_factory=time.monotonic)

    @property
    def seconds(self) -> float:
        """Elapsed seconds, rounded to ms."""
        return round(time.monotonic() - self.started, 3)


@contextmanager
def stopping_all(processes: list[WorkerProcess]) -> Iterator[list[WorkerProcess]]:
    """Kill (by PID) every process in the list, including ones appended later, on exit."""
    with ExitStack() as stack:
        stack.callback(lambda: [p.stop() for p in processes])
        yield processes


class SlowRelay:
    """One local HTTP server relaying many presigned URLs at a bounded rate per download, so
    transfers last long enough for faults to land in the middle of them."""

    def __init__(self, bytes_per_s: int) -> None:
        self.bytes_per_s = bytes_per_s
        self._targets: list[str] = []
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index = int(self.path.lstrip("/").split("?")[0])
                relay.forward(relay._targets[index], self)

            def log_message(self, format: str, *args: object) -> None:
                """Silent: the workers' logs say what happened."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url_for(self, target: str) -> str:
        """A relay URL for `target` (with a fake signature, as a presigned URL would have)."""
        self._targets.append(target)
        port = self._server.server_port
        return f"http://127.0.0.1:{port}/{len(self._targets) - 1}?X-Amz-Signature=relay0000"

    def forward(self, target: str, handler: BaseHTTPRequestHandler) -> None:
        """Stream `target` to the client in 64 KiB chunks at `bytes_per_s`."""
        with requests.get(target, stream=True, timeout=30) as upstream:
            handler.send_response(upstream.status_code)
            handler.send_header("Content-Length", upstream.headers.get("Content-Length", "0"))
            handler.end_headers()
            for chunk in upstream.iter_content(chunk_size=64 * 1024):
                try:
                    handler.wfile.write(chunk)
                except OSError:
                    return  # the worker went away (killed)
                time.sleep(len(chunk) / self.bytes_per_s)

    @contextmanager
    def running(self) -> Iterator[SlowRelay]:
        """Serve while the block runs."""
        self._thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=10)


def point_at(jobs: JobsTable, file_id: str, url: str) -> None:
    """Store `url` on an available job, as if the provider had handed it out (a setup claim)."""
    job = jobs.require(file_id)
    jobs.claim(file_id, "setup", 1)
    jobs.update_url(file_id, "setup", url, job.url_expires_at)
    jobs.release(file_id, "setup")


def day_queued(batches: BatchesTable, day: str) -> bool:
    """True once the day's batch exists and its fetch-and-queue step has written every job."""
    found = batches.query_by_date(day)
    return bool(found) and found[-1].status is not BatchStatus.INITIATED


def takeover_only(flow: BatchFlowService) -> BatchFlowService:
    """The flow with its sweeper reporting only: a dead worker's file then recovers solely by a
    takeover on the message's next delivery, the path the crash scenarios 1 and 1b measure
    (test_chaos.py runs the defaults, sweeper included)."""
    return dataclasses.replace(flow, sweep_requeue=False)

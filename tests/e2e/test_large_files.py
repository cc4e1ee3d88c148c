"""Large files go where they can finish: the long-poll worker takes what the Lambda cannot.

The orchestrator's real fetch-and-queue routes the stub's files by size onto two queues of
this test's own; the Lambda handler is fed the main queue's messages only, the long-poll
worker polls the large queue; each service publishes through an S3 client of its own, so
the test sees which component published which object.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.download_queue import DownloadQueue, EventQueues
from dlpipe.adapters.queue import JobQueue
from dlpipe.config import ENV_LARGE_FILE_THRESHOLD_BYTES, ENV_LARGE_QUEUE_URL, Settings
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.model import JobStatus, make_file_id
from dlpipe.entrypoints import lambda_batch as lambda_handler
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.download.service import DownloadService
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.e2e.test_worker_kit import WorkerProcess, worker_env
from tests.integration.test_downloader_kit import StubFactory, make_service, wall_clock_jobs
from tests.provider_support import fast_client
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory

THRESHOLD_BYTES = 50_000
SMALL_BYTES, LARGE_BYTES = 1_000, 300_000


@pytest.fixture
def queues(clients: AwsClients) -> Iterator[tuple[str, str]]:
    """(main, large): two queues of this test's own, deleted afterwards."""
    tag = uuid.uuid4().hex[:10]
    urls = tuple(
        clients.sqs.create_queue(QueueName=f"dl-{kind}-{tag}")["QueueUrl"]
        for kind in ("main", "large")
    )
    yield urls[0], urls[1]
    for url in urls:
        clients.sqs.delete_queue(QueueUrl=url)


class Publisher:
    """An S3 client of its own that records the keys it published (multipart or single PUT)."""

    def __init__(self) -> None:
        self.client: Any = AwsClients(Settings.from_env()).s3
        self.keys: list[str] = []
        for operation in ("CompleteMultipartUpload", "PutObject"):
            self.client.meta.events.register(f"provide-client-params.s3.{operation}", self._record)

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.keys.append(params["Key"])


def queue_day(
    clients: AwsClients,
    provisioned: Provisioned,
    stub: StubProvider,
    queue: JobQueue,
) -> str:
    """The orchestrator's create-batch and fetch-and-queue for a day of its own; the day."""
    day = unique_day()
    flow = BatchFlowService(
        jobs=wall_clock_jobs(clients, provisioned),
        batches=BatchesTable(clients.dynamodb, provisioned.batches_table),
        provider=fast_client(stub),
        queue=queue,
        clock=SystemClock(),
        new_uuid=lambda: str(uuid.uuid4()),
    )
    flow.fetch_and_queue(flow.create_batch(day), day)
    return day


def event_of(clients: AwsClients, queue_url: str) -> dict[str, Any]:
    """Everything on `queue_url`, received as the Lambda event source would hand it over."""
    arn = clients.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    messages = clients.sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
    ).get("Messages", [])
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "eventSourceARN": arn["Attributes"]["QueueArn"],
            }
            for m in messages
        ]
    }


def lambda_context(remaining_ms: int) -> Any:
    """A Lambda context whose remaining time stands still at `remaining_ms`."""
    return SimpleNamespace(get_remaining_time_in_millis=lambda: remaining_ms)


def messages_left(clients: AwsClients, queue_url: str) -> int:
    """Visible plus in-flight messages on `queue_url`."""
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = clients.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)
    return sum(int(attributes["Attributes"][n]) for n in names)  # type: ignore[literal-required]


def run_worker(
    service: DownloadService, clients: AwsClients, queue_url: str, **options: Any
) -> None:
    """The long-poll worker on `queue_url` until it has been idle for a second."""
    worker_options = WorkerOptions(wait_seconds=1, exit_when_idle_s=1.0, grace_s=5.0, **options)
    worker = Worker(service, DownloadQueue(clients.sqs, queue_url), worker_options)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()


def test_a_file_above_the_threshold_is_downloaded_by_the_worker_never_by_the_lambda(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    queues: tuple[str, str],
) -> None:
    """fetch-and-queue routes the large file to the large queue; only the worker publishes it."""
    main_url, large_url = queues
    small, large = f"{entity}s", f"{entity}l"
    stub = stub_factory(
        [StubFileSpec(small, SMALL_BYTES, CIPHER_CBC), StubFileSpec(large, LARGE_BYTES, CIPHER_GCM)]
    )
    router = JobQueue(
        clients.sqs, main_url, large_queue_url=large_url, large_file_threshold_bytes=THRESHOLD_BYTES
    )
    day = queue_day(clients, provisioned, stub, router)
    small_id, large_id = make_file_id(small, day), make_file_id(large, day)

    by_lambda, by_worker = Publisher(), Publisher()
    runtime = lambda_handler.Runtime(
        make_service(clients, provisioned, private_key, s3=by_lambda.client),
        EventQueues(clients.sqs, main_url, lambda size, _body: router.queue_url_for(size)),
    )
    event = event_of(clients, main_url)
    assert [large_id in r["body"] for r in event["Records"]] == [False]  # only the small one
    result = lambda_handler.handle_event(event, runtime, lambda_context(900_000))
    assert result == {"batchItemFailures": []}
    worker_service = make_service(clients, provisioned, private_key, s3=by_worker.client)
    run_worker(worker_service, clients, large_url)

    jobs = wall_clock_jobs(clients, provisioned)
    assert jobs.require(small_id).status is JobStatus.COMPLETED
    assert jobs.require(large_id).status is JobStatus.COMPLETED
    assert [k.rsplit("/", 1)[-1] for k in by_lambda.keys] == [small_id]
    assert [k.rsplit("/", 1)[-1] for k in by_worker.keys] == [large_id]
    assert messages_left(clients, large_url) == 0


def test_a_file_that_fits_no_worker_ends_failed_with_the_code_and_is_not_redelivered(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    queues: tuple[str, str],
) -> None:
    """No large queue, and a Lambda with 0.9 s after its margin: claimed, failed, acknowledged."""
    main_url, _ = queues
    stub = stub_factory([StubFileSpec(entity, SMALL_BYTES, CIPHER_CBC)])
    day = queue_day(clients, provisioned, stub, JobQueue(clients.sqs, main_url))
    file_id = make_file_id(entity, day)
    publisher = Publisher()
    service = make_service(clients, provisioned, private_key, s3=publisher.client)
    runtime = lambda_handler.Runtime(service, EventQueues(clients.sqs, main_url))
    event = event_of(clients, main_url)

    remaining_ms = int((lambda_handler.DEADLINE_MARGIN_S + 0.9) * 1000)
    result = lambda_handler.handle_event(event, runtime, lambda_context(remaining_ms))

    assert result == {"batchItemFailures": []}  # acknowledged: the event source deletes it
    job = wall_clock_jobs(clients, provisioned).require(file_id)
    assert job.status is JobStatus.FAILED
    assert job.error_message == (
        f"too_large_for_worker: {SMALL_BYTES} bytes needs ~1 s at the minimum throughput, "
        "this worker has 0 s"
    )
    assert job.attempts == 1  # claimed once, so it is visible and counted
    assert publisher.keys == []


def test_a_worker_with_a_time_budget_fails_what_it_cannot_finish_and_deletes_the_message(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    queues: tuple[str, str],
) -> None:
    """The long-poll worker, given a tiny per-file budget, fails the file instead of looping."""
    main_url, large_url = queues
    stub = stub_factory([StubFileSpec(entity, LARGE_BYTES, CIPHER_GCM)])
    router = JobQueue(
        clients.sqs, main_url, large_queue_url=large_url, large_file_threshold_bytes=THRESHOLD_BYTES
    )
    day = queue_day(clients, provisioned, stub, router)
    file_id = make_file_id(entity, day)

    service = make_service(clients, provisioned, private_key)
    run_worker(service, clients, large_url, time_budget_s=0.5)

    job = wall_clock_jobs(clients, provisioned).require(file_id)
    assert job.status is JobStatus.FAILED
    assert job.error_message is not None
    assert job.error_message.startswith(f"too_large_for_worker: {LARGE_BYTES} bytes needs ~1 s")
    assert messages_left(clients, large_url) == 0


def test_the_dlpipe_worker_process_consumes_the_main_and_the_large_queue(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    rsa_keypair: tuple[bytes, bytes],
    stub_factory: StubFactory,
    entity: str,
    queues: tuple[str, str],
    tmp_path: Path,
) -> None:
    """`dlpipe worker` with DLPIPE_LARGE_QUEUE_URL set drains both queues, then exits when idle."""
    main_url, large_url = queues
    stub = stub_factory(
        [
            StubFileSpec(f"{entity}s", SMALL_BYTES, CIPHER_CBC),
            StubFileSpec(f"{entity}l", LARGE_BYTES, CIPHER_GCM),
        ]
    )
    router = JobQueue(
        clients.sqs, main_url, large_queue_url=large_url, large_file_threshold_bytes=THRESHOLD_BYTES
    )
    day = queue_day(clients, provisioned, stub, router)
    key_file = tmp_path / "private.pem"
    key_file.write_bytes(rsa_keypair[0])
    extra = {ENV_LARGE_QUEUE_URL: large_url, ENV_LARGE_FILE_THRESHOLD_BYTES: str(THRESHOLD_BYTES)}
    env = worker_env(aws_env, provisioned, main_url, key_file, stub=stub, **extra)
    worker = WorkerProcess(env, tmp_path / "w.log", "--exit-when-idle", "1.5")
    try:
        assert worker.wait(60) == 0
    finally:
        worker.stop()
    jobs = wall_clock_jobs(clients, provisioned)
    for name in (f"{entity}s", f"{entity}l"):
        assert jobs.require(make_file_id(name, day)).status is JobStatus.COMPLETED
    assert messages_left(clients, main_url) == messages_left(clients, large_url) == 0
    assert worker.event_names().count("job.completed") == 2

"""The Lambda handler on real SQS records: partial batch failures, lazy wiring from the environment."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.download_queue import EventQueues
from dlpipe.config import (
    ENV_DEST_BUCKET,
    ENV_JOBS_TABLE,
    ENV_PRIVATE_KEY_FILE,
    ENV_QUEUE_URL,
)
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import JobStatus
from dlpipe.entrypoints import lambda_batch as lambda_handler
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from downloader import handler as lambda_entry
from tests.integration.test_downloader_kit import (
    DAY,
    StubFactory,
    make_service,
    queue_files,
    wall_clock_jobs,
)

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory


@pytest.fixture
def queue(clients: AwsClients) -> Iterator[str]:
    """A queue of this test's own."""
    url = clients.sqs.create_queue(QueueName=f"dl-handler-{uuid.uuid4().hex[:10]}")["QueueUrl"]
    yield url
    clients.sqs.delete_queue(QueueUrl=url)


@pytest.fixture
def saved_logging() -> Iterator[None]:
    """Restore structlog's configuration: the handler configures JSON logging for itself."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def sqs_event(clients: AwsClients, queue_url: str, file_ids: list[str]) -> dict[str, Any]:
    """Send one message per FileID and receive them as the event source would hand them over."""
    for file_id in file_ids:
        body = encode_message(JobMessage(file_id, f"batch-{DAY}-{uuid.uuid4()}"))
        clients.sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    received = clients.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
    arn = clients.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    records = [
        {
            "messageId": m["MessageId"],
            "receiptHandle": m["ReceiptHandle"],
            "body": m["Body"],
            "eventSourceARN": arn["Attributes"]["QueueArn"],
        }
        for m in received["Messages"]
    ]
    by_file = {r["body"]: r for r in records}
    ordered = [next(r for b, r in by_file.items() if f'"{f}"' in b) for f in file_ids]
    return {"Records": ordered}


def test_a_batch_reports_exactly_the_record_that_did_not_finish(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    queue: str,
) -> None:
    """A good file completes; a file under another worker's live claim is deferred, not failed."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory(
        [StubFileSpec(f"{entity}a", 100, CIPHER_CBC), StubFileSpec(f"{entity}b", 100, CIPHER_GCM)]
    )
    good, busy = sorted(queue_files(stub, table))
    table.claim(busy, "another-worker", 30)
    event = sqs_event(clients, queue, [good, busy])
    runtime = lambda_handler.Runtime(
        make_service(clients, provisioned, private_key), EventQueues(clients.sqs, queue)
    )
    result = lambda_handler.handle_event(event, runtime)
    assert result == {"batchItemFailures": []}
    assert table.require(good).status is JobStatus.COMPLETED
    assert table.require(busy).lease_owner == "another-worker"
    delayed = clients.sqs.get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    assert delayed["ApproximateNumberOfMessagesDelayed"] == "1"  # the copy, back after the lease


def test_the_handler_builds_itself_from_the_environment_on_first_call(
    clients: AwsClients,
    provisioned: Provisioned,
    rsa_keypair: tuple[bytes, bytes],
    stub_factory: StubFactory,
    entity: str,
    queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    saved_logging: None,
) -> None:
    """handler(event, context) wires itself lazily; the queue URL is found from the record's ARN."""
    key_file = tmp_path / "private.pem"
    key_file.write_bytes(rsa_keypair[0])
    monkeypatch.setenv(ENV_JOBS_TABLE, provisioned.jobs_table)
    monkeypatch.setenv(ENV_DEST_BUCKET, str(provisioned.destination_bucket))
    monkeypatch.setenv(ENV_PRIVATE_KEY_FILE, str(key_file))
    monkeypatch.delenv(ENV_QUEUE_URL, raising=False)
    monkeypatch.setattr(lambda_entry, "_runtime", None)
    stub = stub_factory([StubFileSpec(entity, 100, CIPHER_GCM)])
    (file_id,) = queue_files(stub, wall_clock_jobs(clients, provisioned))
    assert lambda_entry.handler(sqs_event(clients, queue, [file_id]), None) == {
        "batchItemFailures": []
    }
    assert wall_clock_jobs(clients, provisioned).require(file_id).status is JobStatus.COMPLETED
    monkeypatch.setattr(lambda_entry, "_runtime", None)  # forget this test's wiring

"""A worker's DynamoDB write lands but its response is lost, and botocore sends it again.

A botocore `needs-retry` hook on the service's own DynamoDB client tells botocore, once, to
retry an UpdateItem that succeeded, exactly as it does when the connection drops after the
request reached DynamoDB: the same request goes out again and is refused by the change its
first send made. The file must still be reported as what happened to it: one metrics
document, no false `job.lease_lost`, no `job.busy` for the worker's own claim.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from structlog.testing import capture_logs

from dlpipe import metrics
from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.config import Settings
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.model import JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.download.service import Outcome
from tests.integration.test_downloader_kit import StubFactory, make_service, queue_files

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory
CLAIM, COMPLETE, END = (
    "SET #status = :downloading",
    "SET #status = :completed",
    "SET #status = :final",
)


class LostOnce:
    """Retries the first successful `operation` (an UpdateItem: whose expression starts with
    `marker`): its response counts as lost, so botocore re-sends the request (after 0 s)."""

    def __init__(self, client: Any, marker: str, operation: str = "UpdateItem") -> None:
        self._marker, self.fired = marker, 0
        client.meta.events.register(f"needs-retry.dynamodb.{operation}", self._retry)

    def _retry(
        self, response: tuple[Any, Any] | None, request_dict: dict[str, Any], **_: Any
    ) -> int | None:
        if self.fired or response is None or response[0].status_code != 200:
            return None
        expression = str(json.loads(request_dict["body"]).get("UpdateExpression", ""))
        if not expression.startswith(self._marker):
            return None
        self.fired += 1
        return 0


@pytest.fixture
def own_dynamodb(aws_env: dict[str, str]) -> Any:
    """A DynamoDB client of the test's own: its hooks touch no other test."""
    return AwsClients(Settings.from_env()).dynamodb


@pytest.fixture
def own_jobs(own_dynamodb: Any, provisioned: Provisioned) -> JobsTable:
    """The jobs table on `own_dynamodb`, on the wall clock."""
    return JobsTable(own_dynamodb, provisioned.jobs_table, SystemClock())


@pytest.fixture
def emf() -> Iterator[list[str]]:
    """The EMF lines the service writes."""
    lines: list[str] = []
    metrics.set_sink(lines.append)
    try:
        yield lines
    finally:
        metrics.set_sink(metrics.stdout_line)


def per_file(lines: list[str]) -> list[dict[str, Any]]:
    """The per-file metrics documents among EMF lines."""
    return [d for d in map(json.loads, lines) if "FileDownloads" in d]


def _run(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    jobs: JobsTable,
    file_id: str,
) -> tuple[Outcome, list[str]]:
    service = make_service(clients, provisioned, private_key, jobs=jobs)
    with capture_logs() as logs:
        result = service.process(file_id)
    return result.outcome, [str(e["event"]) for e in logs]


def test_a_completion_whose_response_was_lost_is_reported_once_as_completed(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    own_jobs: JobsTable,
    own_dynamodb: Any,
    emf: list[str],
    entity: str,
) -> None:
    """The completion is retried and refused by itself: completed, one FileDownloads document
    with its FileBytes, no lease_lost."""
    stub = stub_factory([StubFileSpec(entity, 3000, CIPHER_CBC)])
    ((file_id, expected),) = queue_files(stub, own_jobs).items()
    lost = LostOnce(own_dynamodb, COMPLETE)
    outcome, events = _run(clients, provisioned, private_key, own_jobs, file_id)
    documents = per_file(emf)
    assert lost.fired == 1
    assert (outcome, own_jobs.require(file_id).status) == (Outcome.COMPLETED, JobStatus.COMPLETED)
    assert "job.lease_lost" not in events
    assert [(d["FileID"], d["Outcome"], d["FileBytes"]) for d in documents] == [
        (file_id, "completed", [expected.size])
    ]


def test_a_claim_whose_response_was_lost_goes_on_under_that_claim(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    own_jobs: JobsTable,
    own_dynamodb: Any,
    emf: list[str],
    entity: str,
) -> None:
    """The claim is retried and refused by its own live lease: the worker runs the file now
    (no job.busy, no lease-long wait), claimed once."""
    stub = stub_factory([StubFileSpec(entity, 2000, CIPHER_GCM)])
    ((file_id, _),) = queue_files(stub, own_jobs).items()
    lost = LostOnce(own_dynamodb, CLAIM)
    outcome, events = _run(clients, provisioned, private_key, own_jobs, file_id)
    job = own_jobs.require(file_id)
    assert lost.fired == 1
    assert (outcome, job.status, job.attempts) == (Outcome.COMPLETED, JobStatus.COMPLETED, 1)
    assert "job.busy" not in events
    assert len(per_file(emf)) == 1


def test_an_error_write_whose_response_was_lost_is_reported_once_as_error(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    own_jobs: JobsTable,
    own_dynamodb: Any,
    emf: list[str],
    entity: str,
) -> None:
    """A tampered file's error write is retried and refused by itself: error, one document."""
    stub = stub_factory(
        [StubFileSpec(entity, 2000, CIPHER_GCM)], Faults(tampered_entities={entity})
    )
    ((file_id, _),) = queue_files(stub, own_jobs).items()
    lost = LostOnce(own_dynamodb, END)
    outcome, events = _run(clients, provisioned, private_key, own_jobs, file_id)
    documents = per_file(emf)
    assert lost.fired == 1
    assert (outcome, own_jobs.require(file_id).status) == (Outcome.ERROR, JobStatus.ERROR)
    assert "job.lease_lost" not in events
    assert [(d["Outcome"], d["ErrorCode"]) for d in documents] == [("error", "tag_mismatch")]

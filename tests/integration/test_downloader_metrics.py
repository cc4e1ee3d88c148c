"""The downloader's per-file EMF metrics, from a real `dlpipe worker` and from the Lambda handler.

Each finished file (completed, failed, error) yields exactly one Embedded Metric Format
document on stdout; the JSON logs stay on stderr, unbroken. The documents are checked as
CloudWatch reads them: the directive's names and dimensions must exist as root keys.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import structlog
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe import metrics
from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.download_queue import EventQueues
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from downloader import handler as lambda_handler
from tests.e2e.test_worker_kit import WORKER, queues, send, worker_env
from tests.integration.test_downloader_handler import sqs_event
from tests.integration.test_downloader_kit import (
    StubFactory,
    make_service,
    queue_files,
    wall_clock_jobs,
)

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory

# Per-file metric names and the dimension values an operator filters on.
PER_FILE = "FileDownloads"
DIMENSION_KEYS = {"Component", "Outcome", "ErrorCode", "Feed"}


@pytest.fixture
def key_file(rsa_keypair: tuple[bytes, bytes], tmp_path: Path) -> Path:
    """Our private key as the worker reads it locally (DLPIPE_PRIVATE_KEY_FILE)."""
    path = tmp_path / "private.pem"
    path.write_bytes(rsa_keypair[0])
    return path


def emf_documents(lines: list[str]) -> list[dict[str, Any]]:
    """The EMF documents among JSON lines, each checked against the EMF specification."""
    documents = []
    for line in lines:
        document = json.loads(line)
        if "_aws" in document:
            assert_valid_emf(document)
            documents.append(document)
    return documents


def assert_valid_emf(document: dict[str, Any]) -> None:
    """What CloudWatch needs to extract metrics: namespace, dimension and metric keys at root."""
    meta = document["_aws"]
    assert isinstance(meta["Timestamp"], int)
    for directive in meta["CloudWatchMetrics"]:
        assert directive["Namespace"] == metrics.NAMESPACE
        for dimension_set in directive["Dimensions"]:
            assert len(dimension_set) <= 30
            for key in dimension_set:
                assert isinstance(document[key], str), key
        for definition in directive["Metrics"]:
            value(document, definition["Name"])
            assert definition["Unit"]


def value(document: dict[str, Any], name: str) -> float:
    """A metric's one value: EMF allows a number or an array of numbers."""
    found = document[name]
    values = found if isinstance(found, list) else [found]
    assert len(values) == 1, (name, found)
    assert isinstance(values[0], int | float), (name, found)
    return float(values[0])


def dimensions_of(document: dict[str, Any]) -> set[str]:
    """Every dimension name any metric of the document is published under."""
    return {
        key
        for directive in document["_aws"]["CloudWatchMetrics"]
        for dimension_set in directive["Dimensions"]
        for key in dimension_set
    }


def by_file(documents: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The per-file documents by their FileID property; one document per file."""
    files = [d for d in documents if PER_FILE in d]
    found = {d["FileID"]: d for d in files}
    assert len(found) == len(files), "a file had more than one metrics document"
    return found


def test_a_worker_writes_one_valid_emf_document_per_finished_file(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    key_file: Path,
    entity: str,
) -> None:
    """Completed, error (tampered GCM) and failed (URL always expired): one EMF line each on
    stdout with its outcome, error code, bytes and timing; FileID is never a dimension."""
    table = wall_clock_jobs(clients, provisioned)
    good, tampered, expired = f"{entity}g", f"{entity}t", f"{entity}x"
    specs = [
        StubFileSpec(good, 5000, CIPHER_CBC),
        StubFileSpec(tampered, 3000, CIPHER_GCM),
        StubFileSpec(expired, 2000, CIPHER_CBC),
    ]
    faults = Faults(tampered_entities={tampered}, always_expired_entities={expired})
    stub = stub_factory(specs, faults)
    expected = queue_files(stub, table)
    ids = {
        spec.entity: next(f for f in expected if f.startswith(f"{spec.entity}-")) for spec in specs
    }
    with queues(clients) as q:
        for file_id in expected:
            send(clients, q.url, file_id)
        env = worker_env(aws_env, provisioned, q.url, key_file, stub=stub)
        done = subprocess.run(
            [*WORKER, "--wait-seconds", "1", "--exit-when-idle", "1.5"],
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    statuses = {f: table.require(f).status for f in expected}
    assert statuses == {
        ids[good]: JobStatus.COMPLETED,
        ids[tampered]: JobStatus.ERROR,
        ids[expired]: JobStatus.FAILED,
    }
    # stdout holds EMF only, stderr the JSON logs only: neither stream breaks the other.
    out_lines = done.stdout.splitlines()
    assert out_lines
    assert all(json.loads(line).get("_aws") for line in out_lines)
    log_events = [json.loads(line) for line in done.stderr.splitlines()]
    assert all("event" in e and "_aws" not in e for e in log_events)
    assert "job.completed" in {e["event"] for e in log_events}

    files = by_file(emf_documents(out_lines))
    assert set(files) == set(expected)
    for document in files.values():
        assert "FileID" not in dimensions_of(document)
        assert dimensions_of(document) <= DIMENSION_KEYS
        assert (document["Component"], document["Feed"]) == ("worker", "default")
        assert value(document, PER_FILE) == 1
        assert value(document, "FileAttempts") == 1

    completed = files[ids[good]]
    assert (completed["Outcome"], completed["ErrorCode"]) == ("completed", "none")
    assert completed["Cipher"] == CIPHER_CBC
    size = expected[ids[good]].size
    assert value(completed, "FileBytes") == size == table.require(ids[good]).byte_count
    assert value(completed, "FileTransferAttempts") == 1
    seconds = value(completed, "FileDownloadSeconds")
    assert seconds > 0
    assert value(completed, "FileThroughput") == pytest.approx(size / seconds, rel=0.01)

    error = files[ids[tampered]]
    assert (error["Outcome"], error["ErrorCode"], error["Cipher"]) == (
        "error",
        "tag_mismatch",
        CIPHER_GCM,
    )
    failed = files[ids[expired]]
    assert (failed["Outcome"], failed["ErrorCode"]) == ("failed", "url_expired")
    for unsuccessful in (error, failed):
        assert "FileBytes" not in unsuccessful
        assert "FileThroughput" not in unsuccessful


@pytest.fixture
def restored_logging_and_metrics() -> Any:
    """Restore structlog (the handler configures it) and the metrics sink after the test."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)
    metrics.set_sink(metrics.stdout_line)


@pytest.mark.usefixtures("restored_logging_and_metrics")
def test_the_lambda_handler_emits_the_same_document_as_component_lambda(
    clients: AwsClients,
    provisioned: Provisioned,
    private_key: RSAPrivateKey,
    stub_factory: StubFactory,
    entity: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under the Lambda runtime (AWS_LAMBDA_FUNCTION_NAME set) a completed file's document
    says Component=lambda."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(f"{entity}l", 4000, CIPHER_GCM)])
    (file_id,) = queue_files(stub, table)
    queue_url = clients.sqs.create_queue(QueueName=f"dl-metrics-{entity}")["QueueUrl"]
    lines: list[str] = []
    metrics.set_sink(lines.append)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "dlpipe-downloader")
    try:
        event = sqs_event(clients, queue_url, [file_id])
        runtime = lambda_handler.Runtime(
            make_service(clients, provisioned, private_key, stub=stub),
            EventQueues(clients.sqs, queue_url),
        )
        assert lambda_handler.handle_event(event, runtime) == {"batchItemFailures": []}
    finally:
        clients.sqs.delete_queue(QueueUrl=queue_url)
    (document,) = by_file(emf_documents(lines)).values()
    assert (document["Component"], document["Outcome"]) == ("lambda", "completed")
    assert value(document, "FileBytes") == 4000

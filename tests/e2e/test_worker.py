"""`dlpipe worker` processes end to end: a queue drained, duplicates harmless, poison dead-lettered."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import ENV_ENDPOINT_URL, ENV_ENDPOINT_URL_SQS
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_worker_kit import WorkerProcess, queues, send, wait_until, worker_env
from tests.faults.proxy import FaultProxy
from tests.faults.rules import FaultPlan
from tests.integration.test_downloader_kit import (
    MULTIPART_SIZE,
    StubFactory,
    destination_key,
    queue_files,
    uploads_in_progress,
    wall_clock_jobs,
)

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory


@pytest.fixture
def key_file(rsa_keypair: tuple[bytes, bytes], tmp_path: Path) -> Path:
    """Our private key as the worker reads it locally (DLPIPE_PRIVATE_KEY_FILE)."""
    path = tmp_path / "private.pem"
    path.write_bytes(rsa_keypair[0])
    return path


def test_a_worker_drains_its_queue_and_exits_when_idle(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    key_file: Path,
    entity: str,
    tmp_path: Path,
) -> None:
    """Three files, two threads: all completed with the stub's SHA-256, queue empty, exit 0."""
    table = wall_clock_jobs(clients, provisioned)
    specs = [
        StubFileSpec(f"{entity}a", MULTIPART_SIZE, CIPHER_CBC),
        StubFileSpec(f"{entity}b", 3000, CIPHER_GCM),
        StubFileSpec(f"{entity}c", 0, CIPHER_CBC),
    ]
    stub = stub_factory(specs)
    expected = queue_files(stub, table)
    with queues(clients) as q:
        for file_id in expected:
            send(clients, q.url, file_id)
        env = worker_env(aws_env, provisioned, q.url, key_file, stub=stub)
        worker = WorkerProcess(
            env, tmp_path / "w.log", "--concurrency", "2", "--exit-when-idle", "1.5"
        )
        try:
            assert worker.wait(60) == 0
        finally:
            worker.stop()
        left = clients.sqs.get_queue_attributes(
            QueueUrl=q.url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
    assert left == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "0",
    }
    for file_id, file in expected.items():
        job = table.require(file_id)
        assert (job.status, job.sha256) == (JobStatus.COMPLETED, file.sha256)
        body = clients.s3.get_object(
            Bucket=str(provisioned.destination_bucket), Key=job.destination_key
        )
        assert hashlib.sha256(body["Body"].read()).hexdigest() == file.sha256
    assert worker.event_names().count("job.completed") == 3


def test_one_message_delivered_to_three_worker_processes_publishes_once(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    key_file: Path,
    entity: str,
    tmp_path: Path,
) -> None:
    """Three copies, three processes at once: one publish, one completion, no error anywhere."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(entity, MULTIPART_SIZE, CIPHER_GCM)])
    ((file_id, file),) = queue_files(stub, table).items()
    with queues(clients) as q:
        env = worker_env(aws_env, provisioned, q.url, key_file, stub=stub, lease_seconds=5)
        workers = [
            WorkerProcess(env, tmp_path / f"w{n}.log", "--exit-when-idle", "2") for n in range(3)
        ]
        try:
            # All three long-polling before the copies arrive, so each may get one.
            for worker in workers:
                wait_until(lambda w=worker: "worker.started" in w.event_names(), 60, "startup")
            send(clients, q.url, file_id, copies=3)
            assert [w.wait(60) for w in workers] == [0, 0, 0]
        finally:
            for worker in workers:
                worker.stop()
    names = [name for w in workers for name in w.event_names()]
    assert names.count("job.published") == 1
    assert names.count("job.completed") == 1
    assert names.count("job.busy") == 2  # the copies met the live claim and were hidden
    assert not {"job.error", "job.failed", "message.failed", "job.lease_lost"} & set(names)
    job = table.require(file_id)
    assert (job.status, job.sha256, job.attempts) == (JobStatus.COMPLETED, file.sha256, 1)
    assert (
        uploads_in_progress(clients, str(provisioned.destination_bucket), destination_key(file_id))
        == []
    )


def test_a_message_that_keeps_failing_reaches_the_dead_letter_queue(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    key_file: Path,
    entity: str,
    tmp_path: Path,
) -> None:
    """An exception is never an ack: after maxReceiveCount receives the message is dead-lettered."""
    with queues(clients, visibility_s=1, max_receive=2) as q:
        send(clients, q.url, f"{entity}-2026-02-28")
        # A table that does not exist: every attempt fails before anything is claimed.
        # A failed message comes back after lease + margin (2 s here), not the queue's timeout.
        env = worker_env(
            aws_env,
            provisioned,
            q.url,
            key_file,
            lease_seconds=1,
            DLPIPE_JOBS_TABLE="no-such-table",
        )
        worker = WorkerProcess(env, tmp_path / "w.log", "--exit-when-idle", "5")
        try:
            assert worker.wait(60) == 0
        finally:
            worker.stop()
        dead = clients.sqs.receive_message(QueueUrl=q.dlq_url, WaitTimeSeconds=1)["Messages"]
    assert len(dead) == 1
    assert entity in dead[0]["Body"]
    assert worker.event_names().count("message.failed") == 2


def test_an_idle_worker_exits_soon_after_its_idle_time_not_a_long_poll_later(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    key_file: Path,
    tmp_path: Path,
) -> None:
    """--exit-when-idle 1 with 20 s long polls on an empty queue: exit 0 for being idle, and
    every receive it sent (read at a proxy in front of SQS) asked to wait at most the 1 s of
    idle time it had left, never the 20 s that would keep it a whole long poll past idle."""
    receives = "sqs.ReceiveMessage"
    proxy = FaultProxy(aws_env[ENV_ENDPOINT_URL], FaultPlan([]), keep=frozenset({receives}))
    with queues(clients) as q, proxy.running():
        env = worker_env({**aws_env, ENV_ENDPOINT_URL_SQS: proxy.url}, provisioned, q.url, key_file)
        worker = WorkerProcess(
            env, tmp_path / "w.log", "--wait-seconds", "20", "--exit-when-idle", "1"
        )
        try:
            assert worker.wait(120) == 0
        finally:
            worker.stop()
        waits = [_wait_time_s(body) for body in proxy.bodies(receives)]
    stopping = [e for e in worker.events() if e["event"] == "worker.stopping"]
    assert [e["reason"] for e in stopping] == ["idle"]
    assert waits, "the worker sent no receive"
    assert set(waits) == {1}, waits


def _wait_time_s(body: bytes) -> int:
    """WaitTimeSeconds of a ReceiveMessage request, in SQS's JSON or query protocol."""
    text = body.decode()
    if text.startswith("{"):
        return int(json.loads(text)["WaitTimeSeconds"])
    return int(parse_qs(text)["WaitTimeSeconds"][0])

"""Workers that die or are told to stop mid-file: no operator action, one correct object."""

from __future__ import annotations

import hashlib
import os
import signal
from pathlib import Path

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_worker_kit import WorkerProcess, queues, send, wait_until, worker_env
from tests.integration.test_downloader_kit import (
    MIB,
    Relay,
    StubFactory,
    destination_key,
    queue_files,
    uploads_in_progress,
    wall_clock_jobs,
)

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, private_key, stub_factory
FILE_SIZE = 12 * MIB  # more than one 8 MiB part of the worker's default tuning
SLOW, FAST = 3 * MIB, 6 * MIB  # bytes per second through the relay


@pytest.fixture
def key_file(rsa_keypair: tuple[bytes, bytes], tmp_path: Path) -> Path:
    """Our private key as the worker reads it locally (DLPIPE_PRIVATE_KEY_FILE)."""
    path = tmp_path / "private.pem"
    path.write_bytes(rsa_keypair[0])
    return path


def point_at(table: JobsTable, file_id: str, url: str) -> None:
    """Store the relay's URL on the job, as if the provider had handed it out."""
    job = table.require(file_id)
    table.claim(file_id, "setup", 1)
    table.update_url(file_id, "setup", url, job.url_expires_at)
    table.release(file_id, "setup")


def test_a_worker_killed_mid_download_is_replaced_after_its_lease(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    key_file: Path,
    entity: str,
    tmp_path: Path,
) -> None:
    """SIGKILL with a part uploading: a second worker takes over once the 3 s lease runs out."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(entity, FILE_SIZE, CIPHER_CBC)])
    ((file_id, file),) = queue_files(stub, table).items()
    bucket, key = str(provisioned.destination_bucket), destination_key(file_id)
    relay = Relay(table.require(file_id).presigned_url, bytes_per_s=FAST, slow_requests=1)
    with relay.running(), queues(clients) as q:
        point_at(table, file_id, relay.url)
        send(clients, q.url, file_id)
        env = worker_env(aws_env, provisioned, q.url, key_file, stub=stub, lease_seconds=3)
        doomed = WorkerProcess(env, tmp_path / "doomed.log")
        try:
            wait_until(lambda: uploads_in_progress(clients, bucket, key) != [], 60, "a part upload")
            os.kill(doomed.pid, signal.SIGKILL)
            doomed.wait(10)
        finally:
            doomed.stop()
        assert table.require(file_id).status is JobStatus.DOWNLOADING  # its claim outlives it
        successor = WorkerProcess(env, tmp_path / "successor.log")
        try:
            # The message reappears lease + margin after the dead worker's last heartbeat.
            wait_until(lambda: table.require(file_id).is_terminal, 60, "the successor to finish")
            os.kill(successor.pid, signal.SIGTERM)
            assert successor.wait(10) == 0
        finally:
            successor.stop()
    job = table.require(file_id)
    assert (job.status, job.sha256) == (JobStatus.COMPLETED, file.sha256)
    body = clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == file.sha256
    assert uploads_in_progress(clients, bucket, key) == []  # the dead worker's upload was aborted
    claims = [e for e in successor.events() if e["event"] == "job.claimed"]
    assert [c["decision"] for c in claims] == ["take_over"]
    assert "job.completed" in successor.event_names()


def test_sigterm_mid_file_releases_the_job_and_exits_zero_promptly(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    key_file: Path,
    entity: str,
    tmp_path: Path,
) -> None:
    """SIGTERM with a 1 s grace: the worker exits 0 mid-file (the slow relay had not sent the
    whole file), the claim is released and the message is visible again."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(entity, FILE_SIZE, CIPHER_GCM)])
    ((file_id, _),) = queue_files(stub, table).items()
    relay = Relay(table.require(file_id).presigned_url, bytes_per_s=SLOW)
    with relay.running(), queues(clients) as q:
        point_at(table, file_id, relay.url)
        send(clients, q.url, file_id)
        env = worker_env(aws_env, provisioned, q.url, key_file, stub=stub)
        worker = WorkerProcess(env, tmp_path / "w.log", "--grace-seconds", "1")
        try:
            wait_until(lambda: relay.bytes_sent > 2 * MIB, 60, "the download to be under way")
            os.kill(worker.pid, signal.SIGTERM)
            assert worker.wait(60) == 0
            assert relay.bytes_sent < FILE_SIZE, "the worker finished the file before it exited"
        finally:
            worker.stop()
        returned = clients.sqs.receive_message(QueueUrl=q.url, WaitTimeSeconds=1).get(
            "Messages", []
        )
    job = table.require(file_id)
    assert (job.status, job.lease_owner) == (JobStatus.AVAILABLE, None)
    assert len(returned) == 1
    assert file_id in returned[0]["Body"]
    assert not uploads_in_progress(
        clients, str(provisioned.destination_bucket), destination_key(file_id)
    )
    assert {"worker.grace_expired", "job.released", "worker.stopped"} <= set(worker.event_names())


def test_sigterm_lets_the_current_file_finish_within_the_grace_period(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    key_file: Path,
    entity: str,
    tmp_path: Path,
) -> None:
    """SIGTERM with time to spare: no new message is taken, the file completes, exit 0."""
    table = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(entity, FILE_SIZE, CIPHER_CBC)])
    ((file_id, file),) = queue_files(stub, table).items()
    relay = Relay(table.require(file_id).presigned_url, bytes_per_s=FAST)
    with relay.running(), queues(clients) as q:
        point_at(table, file_id, relay.url)
        send(clients, q.url, file_id)
        env = worker_env(aws_env, provisioned, q.url, key_file, stub=stub)
        worker = WorkerProcess(env, tmp_path / "w.log", "--grace-seconds", "20")
        try:
            wait_until(lambda: relay.bytes_sent > 2 * MIB, 60, "the download to be under way")
            os.kill(worker.pid, signal.SIGTERM)
            send(clients, q.url, f"{entity}x-2026-02-28")  # must not be taken after the signal
            assert worker.wait(20) == 0
        finally:
            worker.stop()
        left = clients.sqs.receive_message(QueueUrl=q.url, WaitTimeSeconds=1).get("Messages", [])
    job = table.require(file_id)
    assert (job.status, job.sha256) == (JobStatus.COMPLETED, file.sha256)
    assert [m["Body"] for m in left if file_id in m["Body"]] == []
    assert len(left) == 1
    assert "job.released" not in worker.event_names()

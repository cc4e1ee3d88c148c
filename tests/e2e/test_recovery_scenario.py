"""The operator's recovery path end to end: a worker dies mid-file, the CLI finds and requeues
the job, a new worker completes it, and the batch ends completed."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.model import JobStatus
from dlpipe.domain.transitions import lease_live
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.e2e.test_worker_kit import WorkerProcess, queues, wait_until, worker_env
from tests.integration.test_downloader_kit import MIB, Relay, StubFactory, wall_clock_jobs
from tests.provider_support import fast_client
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures"]
LEASE_S = 3


def dlpipe(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real `dlpipe` console script."""
    cli = str(Path(sys.executable).with_name("dlpipe"))
    return subprocess.run(
        [cli, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_killed_worker_is_found_by_jobs_stuck_requeued_and_the_batch_completes(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    rsa_keypair: tuple[bytes, bytes],
    entity: str,
    tmp_path: Path,
) -> None:
    """SIGKILL mid-download -> `jobs stuck` lists it -> `jobs requeue` -> completed, batch completed."""
    key_file = tmp_path / "private.pem"
    key_file.write_bytes(rsa_keypair[0])
    day = unique_day()
    jobs = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(entity, 12 * MIB, CIPHER_GCM)])
    # No worker runs between the kill and the requeue, so the job stays `downloading` under
    # an expired lease until the operator acts (the dead worker's message may also return;
    # its duplicate is harmless, and the requeue's state change is asserted directly).
    with queues(clients) as q:
        flow = BatchFlowService(
            jobs=jobs,
            batches=BatchesTable(clients.dynamodb, provisioned.batches_table, SystemClock()),
            provider=fast_client(stub),
            queue=JobQueue(clients.sqs, q.url),
            clock=SystemClock(),
            new_uuid=lambda: str(uuid.uuid4()),
        )
        batch_id = flow.create_batch(day)
        flow.fetch_and_queue(batch_id, day)
        file_id = f"{entity}-{day}"
        relay = Relay(jobs.require(file_id).presigned_url, bytes_per_s=2 * MIB)
        with relay.running():
            owner = jobs.claim(file_id, "setup", 1).lease_owner
            jobs.update_url(file_id, str(owner), relay.url, None)
            jobs.release(file_id, str(owner))
            env = worker_env(
                aws_env, provisioned, q.url, key_file, stub=stub, lease_seconds=LEASE_S
            )
            env["DLPIPE_BATCHES_TABLE"] = provisioned.batches_table
            doomed = WorkerProcess(env, tmp_path / "doomed.log")
            try:
                wait_until(lambda: relay.bytes_sent > MIB, 30, "the download to be under way")
                os.kill(doomed.pid, signal.SIGKILL)
                doomed.wait(10)
            finally:
                doomed.stop()
            wait_until(
                lambda: not lease_live(jobs.require(file_id), SystemClock().now_ms()),
                15,
                "the lease to expire",
            )

            stuck = dlpipe(
                env, "jobs", "stuck", "--status", "downloading", "--older-than", "1s", "--json"
            )
            assert stuck.returncode == 0, stuck.stderr
            listed = {j["file_id"]: j for j in json.loads(stuck.stdout)["jobs"]}
            assert file_id in listed

            requeued = dlpipe(env, "jobs", "requeue", file_id)
            assert requeued.returncode == 0, requeued.stderr
            assert jobs.require(file_id).status is JobStatus.AVAILABLE

            successor = WorkerProcess(env, tmp_path / "successor.log")
            try:
                wait_until(lambda: jobs.require(file_id).is_terminal, 60, "the successor to finish")
            finally:
                os.kill(successor.pid, signal.SIGTERM)
                successor.wait(15)
                successor.stop()
        check = flow.check_completion(batch_id, 1, False)
    job = jobs.require(file_id)
    assert job.status is JobStatus.COMPLETED
    assert check.status == "completed"
    body = clients.s3.get_object(
        Bucket=str(provisioned.destination_bucket), Key=str(job.destination_key)
    )["Body"].read()
    assert hashlib.sha256(body).hexdigest() == stub.expected(day)[file_id].sha256

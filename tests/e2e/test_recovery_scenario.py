"""The operator's recovery path end to end: a worker dies mid-file, the CLI finds and requeues
the job, a new worker completes it, and the batch ends completed."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.model import JobStatus
from dlpipe.domain.transitions import lease_live
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_repair_kit import Stack, queued_day, run_dlpipe, write_key
from tests.e2e.test_worker_kit import WorkerProcess, queues, wait_until, worker_env
from tests.integration.test_downloader_kit import MIB, Relay, wall_clock_jobs
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack
LEASE_S = 3


def dlpipe(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real `dlpipe` console script."""
    return run_dlpipe(env, None, *args, columns=None)


def test_killed_worker_is_found_by_jobs_stuck_requeued_and_the_batch_completes(
    stack: Stack, entity: str, tmp_path: Path
) -> None:
    """SIGKILL mid-download -> `jobs stuck` lists it -> `jobs requeue` -> completed, batch completed."""
    key_file = write_key(tmp_path, "private.pem", stack.rsa_keypair[0])
    day = unique_day()
    clients, provisioned = stack.clients, stack.provisioned
    jobs = wall_clock_jobs(clients, provisioned)
    stub = stack.stub_factory([StubFileSpec(entity, 12 * MIB, CIPHER_GCM)])
    # No worker runs between the kill and the requeue, so the job stays `downloading` under
    # an expired lease until the operator acts (the dead worker's message may also return;
    # its duplicate is harmless, and the requeue's state change is asserted directly).
    with queues(clients) as q:
        flow, batch_id = queued_day(stack, jobs, stub, q.url, day)
        file_id = f"{entity}-{day}"
        # Only the doomed worker's GET trickles (it is killed 1 MiB in); the successor's runs
        # at full speed instead of taking the 12 MiB at 2 MiB/s again.
        relay = Relay(jobs.require(file_id).presigned_url, bytes_per_s=2 * MIB, slow_requests=1)
        with relay.running():
            owner = jobs.claim(file_id, "setup", 1).lease_owner
            jobs.update_url(file_id, str(owner), relay.url, None)
            jobs.release(file_id, str(owner))
            env = worker_env(
                stack.aws_env, provisioned, q.url, key_file, stub=stub, lease_seconds=LEASE_S
            )
            env["DLPIPE_BATCHES_TABLE"] = provisioned.batches_table
            doomed = WorkerProcess(env, tmp_path / "doomed.log")
            try:
                wait_until(lambda: relay.bytes_sent > MIB, 60, "the download to be under way")
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

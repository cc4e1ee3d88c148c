"""The whole day through the entry points: `dlpipe run --local`, and the real flow under the
SDK's local runner with real workers, the emulator and the stub provider."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python.exceptions import RetryableSerDesError
from aws_durable_execution_sdk_python_testing.executor import Executor

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.config import Settings
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.local.day import running_workers
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.local.provision import Provisioned
from dlpipe.local.stack import LocalStack, settings_for
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_inline
from tests.provider_support import TEST_PROVIDER_TOKEN, StubFactory, back_after
from tests.support import unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e


def specs(entity: str, n: int) -> list[StubFileSpec]:
    """n files of a few KiB to a little over 1 MiB, CBC and GCM alternating."""
    return [
        StubFileSpec(
            f"{entity}{i}",
            4096 * (i + 1) + (1 << 20) * (i % 2),
            CIPHER_CBC if i % 2 else CIPHER_GCM,
        )
        for i in range(n)
    ]


@pytest.fixture
def stack(
    clients: AwsClients, provisioned: Provisioned, emulator: Any, rsa_keypair: tuple[bytes, bytes]
) -> Iterator[LocalStack]:
    """The session emulator as a LocalStack with its own queue, the test key pair and token."""
    queue_url = clients.sqs.create_queue(
        QueueName=f"e2e-{uuid.uuid4().hex[:16]}", Attributes={"VisibilityTimeout": "30"}
    )["QueueUrl"]
    for secret_id, value in (
        (provisioned.private_key_secret, rsa_keypair[0].decode()),
        (provisioned.provider_token_secret, TEST_PROVIDER_TOKEN),
    ):
        assert secret_id is not None
        clients.secretsmanager.put_secret_value(SecretId=secret_id, SecretString=value)
    settings = replace(
        settings_for(provisioned, Settings.from_env(os.environ)),
        queue_url=queue_url,
        lease_seconds=30,
    )
    yield LocalStack(emulator, clients, provisioned, settings, rsa_keypair[1], TEST_PROVIDER_TOKEN)
    clients.sqs.delete_queue(QueueUrl=queue_url)


def _flow(stack: LocalStack, stub: StubProvider) -> BatchFlowService:
    return build_flow(replace(stack.settings, provider_base_url=stub.base_url), stack.clients)


def _published_sha256(stack: LocalStack, key: str) -> str:
    body = stack.clients.s3.get_object(
        Bucket=stack.settings.require("destination_bucket"), Key=key
    )["Body"].read()
    return hashlib.sha256(body).hexdigest()


def _run(
    stack: LocalStack,
    flow_factory: Any,
    day: str,
    *,
    polls: int = 40,
    interval: int = 1,
    skip_time: bool = False,
) -> dict[str, Any]:
    handler = build_durable_handler(flow_factory, interval, polls)
    return run_durable_locally(
        handler, {"date": day}, skip_time=skip_time, timeout_seconds=polls * interval + 120
    )


def test_make_run_command_completes_a_day_and_verifies_every_file(tmp_path: Path) -> None:
    """`dlpipe run --local` runs both shipped feeds' days, exits 0 and reports every file of
    each verified by SHA-256 and one line on both days, no traceback,
    in a shell whose provider token, provider URL and AWS endpoint point elsewhere: it names
    them as ignored and uses its own."""
    cli = Path(sys.executable).with_name("dlpipe")
    nonsense = {
        "DLPIPE_PROVIDER_TOKEN": "not-the-stubs-token",
        "DLPIPE_PROVIDER_URL": "http://nonsense.invalid",
        "AWS_ENDPOINT_URL": "nonsense",
    }
    done = subprocess.run(
        [str(cli), "run", "--local", "--files", "6", "--workers", "2"],
        cwd=tmp_path,
        env={**os.environ, **nonsense},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # The shipped feeds file's two feeds, each on its own stub provider, key and token.
    for feed in ("default", "vendor-b"):
        assert f"feed {feed}: batch status: completed; 6/6 files verified by SHA-256" in done.stdout
    *_, verdict, default_wait, vendor_b_wait = done.stdout.strip().splitlines()
    assert verdict == "all 2 feeds' days completed, every file verified: default, vendor-b"
    manifests = re.findall(
        r"^day manifest: (s3://\S+/_dlpipe/manifests/(\S+)/(\S+)/\S*batch-\S+\.json)$",
        done.stdout,
        re.M,
    )
    assert [feed for _, feed, _ in manifests] == ["default", "vendor-b"], done.stdout[-3000:]
    # It ends with `dlpipe handoff wait` answering each day completed, naming its manifest.
    for wait, (uri, feed, day) in zip((default_wait, vendor_b_wait), manifests, strict=True):
        command = f"dlpipe handoff wait --feed {feed} --date {day}"
        assert wait.startswith(f"{command}: exit 0, feed {feed}'s day {day} completed: "), wait
        assert f"manifest {uri}" in wait, wait
    lists = re.findall(
        r"^file list \(JSON Lines\): s3://\S+/_dlpipe/manifests/(\S+)/\S+/files/\S*batch-\S+\.jsonl$",
        done.stdout,
        re.M,
    )
    assert lists == ["default", "vendor-b"], done.stdout[-3000:]
    # The hand-off: the downstream stand-in received each day's event through EventBridge.
    received = [line for line in done.stdout.splitlines() if "downstream queue received" in line]
    assert len(received) == 2, done.stdout[-2000:]
    for line in received:
        assert line.startswith("downstream queue received Day Completed: {"), line
        assert '"status":"completed"' in line, line
    assert sorted(json.loads(line.split(": ", 1)[1])["feed"] for line in received) == [
        "default",
        "vendor-b",
    ]
    assert "Traceback" not in done.stderr
    ignored = next(line for line in done.stderr.splitlines() if "ignores" in line)
    assert all(name in ignored for name in nonsense), ignored


def test_run_local_with_a_feed_runs_that_feeds_day_alone(tmp_path: Path) -> None:
    """`dlpipe run --local --feed vendor-b`: the template's vendor-b day runs and completes,
    the default feed's is never started."""
    cli = Path(sys.executable).with_name("dlpipe")
    done = subprocess.run(
        [str(cli), "run", "--local", "--feed", "vendor-b", "--files", "2", "--workers", "2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "feed vendor-b: batch status: completed; 2/2 files verified by SHA-256" in done.stdout
    assert "feed default:" not in done.stdout
    *_, verdict, wait = done.stdout.strip().splitlines()
    assert verdict == "all 1 feeds' days completed, every file verified: vendor-b"
    assert wait.startswith("dlpipe handoff wait --feed vendor-b --date "), wait
    assert ": exit 0, feed vendor-b's day " in wait, wait


def test_published_objects_match_the_providers_plaintext(
    stack: LocalStack, stub_factory: StubFactory, entity: str
) -> None:
    """Under the durable runner with real workers, each object's bytes hash to the provider's SHA-256."""
    day, stub = unique_day(), stub_factory(specs(entity, 4))
    with running_workers(stack, 2):
        result = _run(stack, lambda: _flow(stack, stub), day)
    assert result["status"] == "completed"
    jobs = JobsTable(stack.clients.dynamodb, stack.settings.jobs_table)
    for file_id, expected in stub.expected(day).items():
        job = jobs.require(file_id)
        assert job.status is JobStatus.COMPLETED
        assert job.destination_key is not None
        assert _published_sha256(stack, job.destination_key) == expected.sha256


def test_one_bad_file_ends_the_batch_failed_and_publishes_nothing_for_it(
    stack: LocalStack, stub_factory: StubFactory, entity: str
) -> None:
    """A tampered GCM file ends `error`; the batch ends failed with it in FailedFiles."""
    day = unique_day()
    stub = stub_factory(specs(entity, 3), faults=Faults(tampered_entities={f"{entity}0"}))
    with running_workers(stack, 2):
        result = _run(stack, lambda: _flow(stack, stub), day)
    bad = f"{entity}0-{day}"
    batch = BatchesTable(stack.clients.dynamodb, stack.settings.batches_table).require(
        result["batch_id"]
    )
    assert (result["status"], batch.failed_files) == ("failed", {bad})
    assert (
        JobsTable(stack.clients.dynamodb, stack.settings.jobs_table).require(bad).status
        is JobStatus.ERROR
    )
    listed = stack.clients.s3.list_objects_v2(
        Bucket=stack.settings.require("destination_bucket"), Prefix=f"{entity}0/"
    )
    assert listed.get("KeyCount", 0) == 0


def test_batch_whose_workers_never_run_times_out_with_timeout_at(
    stack: LocalStack, stub_factory: StubFactory, entity: str
) -> None:
    """No workers: after the last poll the batch is `timeout` and TimeoutAt is set."""
    day, stub = unique_day(), stub_factory(specs(entity, 2))
    result = _run(stack, lambda: _flow(stack, stub), day, polls=3, interval=60, skip_time=True)
    batch = BatchesTable(stack.clients.dynamodb, stack.settings.batches_table).require(
        result["batch_id"]
    )
    assert (result["status"], result["polls"], batch.status) == ("timeout", 3, BatchStatus.TIMEOUT)
    assert batch.timeout_at is not None


def test_provider_outage_at_first_is_retried_and_the_batch_completes(
    stack: LocalStack, stub_factory: StubFactory, entity: str
) -> None:
    """The provider answers 5xx until it has refused one call (not for a span of time: on a
    busy machine the first call may come late); the client's retries carry the day."""
    day = unique_day()
    stub = stub_factory(specs(entity, 2), faults=Faults(error_rate=1.0))
    stop = threading.Event()
    back = back_after(stub, 1, stop)
    try:
        with running_workers(stack, 2):
            result = _run(stack, lambda: _flow(stack, stub), day)
    finally:
        stop.set()
    assert result["status"] == "completed"
    assert back.is_set()
    assert stub.request_count >= 2


class CrashingFlow:
    """The real flow, made to crash once right after `method` has done its work."""

    def __init__(self, inner: BatchFlowService, method: str) -> None:
        self._inner, self._method, self.crashed = inner, method, False

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if name != self._method:
            return target

        def crash_after(*args: Any, **kwargs: Any) -> Any:
            result = target(*args, **kwargs)
            if not self.crashed:
                self.crashed = True
                raise RetryableSerDesError(
                    "simulated crash after the step's work, before its checkpoint"
                )
            return result

        return crash_after


@pytest.mark.parametrize("method", ["create_batch", "fetch_and_queue", "check_completion"])
def test_crash_at_each_step_boundary_replays_to_one_job_per_file_and_completes(
    stack: LocalStack,
    stub_factory: StubFactory,
    entity: str,
    method: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A crash after a step's work but before its checkpoint: one batch, one job per file, all done."""
    monkeypatch.setattr(Executor, "RETRY_BACKOFF_SECONDS", 0)
    day, stub = unique_day(), stub_factory(specs(entity, 3))
    flow = CrashingFlow(_flow(stack, stub), method)
    with running_workers(stack, 2):
        result = _run(stack, lambda: flow, day)
    assert flow.crashed
    assert result["status"] == "completed"
    batches = BatchesTable(stack.clients.dynamodb, stack.settings.batches_table).query_by_date(day)
    assert [b.batch_id for b in batches] == [result["batch_id"]]
    jobs = list(
        JobsTable(stack.clients.dynamodb, stack.settings.jobs_table).query_by_batch(
            result["batch_id"]
        )
    )
    assert sorted(j.file_id for j in jobs) == sorted(stub.expected(day))
    assert all(j.status is JobStatus.COMPLETED for j in jobs)


def test_same_flow_runs_inline_without_the_sdk(
    stack: LocalStack, stub_factory: StubFactory, entity: str
) -> None:
    """run_inline drives the real flow to the same completed result as the durable runner."""
    day, stub = unique_day(), stub_factory(specs(entity, 2))
    with running_workers(stack, 2):
        result = run_inline(
            _flow(stack, stub),
            {"date": day},
            PollingPlan(poll_interval_seconds=1, max_polls=40),
            steps=InlineSteps(sleep=time.sleep),  # real waits, as on Lambda
        )
    assert (result["status"], result["completed"], result["failed"]) == ("completed", 2, 0)

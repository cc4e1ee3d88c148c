"""Helpers of the worker e2e tests: real `dlpipe worker` processes on the session emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import (
    ENV_DEST_BUCKET,
    ENV_JOBS_TABLE,
    ENV_LEASE_SECONDS,
    ENV_PRIVATE_KEY_FILE,
    ENV_PROVIDER_TOKEN,
    ENV_PROVIDER_URL,
    ENV_QUEUE_URL,
    ENV_URL_ALLOWED_HOSTS,
)
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.server import StubProvider
from tests.provider_support import TEST_PROVIDER_TOKEN
from tests.support import new_batch_id

WORKER = [sys.executable, "-m", "dlpipe.cli.worker"]


@dataclass(frozen=True)
class Queues:
    """A download queue of the test's own, dead-lettering to its own DLQ."""

    url: str
    dlq_url: str


@contextmanager
def queues(
    clients: AwsClients, *, visibility_s: int = 30, max_receive: int = 5
) -> Iterator[Queues]:
    """Create the pair, delete them after."""
    name = f"dl-e2e-{uuid.uuid4().hex[:10]}"
    dlq = clients.sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dlq_arn = clients.sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])
    redrive = {
        "deadLetterTargetArn": dlq_arn["Attributes"]["QueueArn"],
        "maxReceiveCount": max_receive,
    }
    attributes: Any = {"VisibilityTimeout": str(visibility_s), "RedrivePolicy": json.dumps(redrive)}
    url = clients.sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    try:
        yield Queues(url, dlq)
    finally:
        clients.sqs.delete_queue(QueueUrl=url)
        clients.sqs.delete_queue(QueueUrl=dlq)


def send(clients: AwsClients, queue_url: str, file_id: str, copies: int = 1) -> None:
    """Queue a job message for `file_id`, `copies` times (duplicates, as at-least-once allows)."""
    body = encode_message(JobMessage(file_id, new_batch_id(file_id[-10:])))
    for _ in range(copies):
        clients.sqs.send_message(QueueUrl=queue_url, MessageBody=body)


def worker_env(
    aws_env: dict[str, str],
    provisioned: Provisioned,
    queue_url: str,
    key_file: Path,
    *,
    stub: StubProvider | None = None,
    lease_seconds: int = 30,
    **extra: str,
) -> dict[str, str]:
    """The environment of a worker process pointed at the emulator, the queue and the stub."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLPIPE_")}
    env.update(aws_env)
    env.update(
        {
            ENV_QUEUE_URL: queue_url,
            ENV_JOBS_TABLE: provisioned.jobs_table,
            ENV_DEST_BUCKET: str(provisioned.destination_bucket),
            ENV_PRIVATE_KEY_FILE: str(key_file),
            ENV_LEASE_SECONDS: str(lease_seconds),
            ENV_PROVIDER_TOKEN: TEST_PROVIDER_TOKEN,
            **({ENV_PROVIDER_URL: stub.base_url} if stub else {}),
            # Fault relays stand between worker and emulator on loopback ports of their own.
            ENV_URL_ALLOWED_HOSTS: "127.0.0.1:*",
            **extra,
        }
    )
    return env


class WorkerProcess:
    """One `dlpipe worker` child process; its JSON log lines go to a file. One thread unless
    `args` say otherwise: the scenarios count processes, each one file at a time."""

    def __init__(self, env: dict[str, str], log_path: Path, *args: str) -> None:
        self.log_path = log_path
        threads = [] if "--concurrency" in args else ["--concurrency", "1"]
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(  # stopped by PID in stop()
                [*WORKER, "--wait-seconds", "1", *threads, *args],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )

    @property
    def pid(self) -> int:
        """The child's PID."""
        return self.process.pid

    def wait(self, timeout_s: float) -> int:
        """Wait for the exit code."""
        return self.process.wait(timeout_s)

    def stop(self) -> None:
        """Kill the child by PID if it still runs."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def events(self) -> list[dict[str, Any]]:
        """The JSON log events written so far."""
        lines = self.log_path.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def event_names(self) -> list[str]:
        """Just the event names."""
        return [e["event"] for e in self.events()]


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll `condition` every 50 ms until it holds; AssertionError naming `what` on timeout."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)

"""Scenario 3: the durable poller's invocation dies after each step, and inside
fetch-and-queue-files between its writes; every replay ends in the invariant, one batch, and
each file sent at least once (and twice at most, only when its first send may have landed)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.executor import Executor

from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.errors import QueueSendError
from dlpipe.domain.messages import JobMessage
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.local.durable_runner import LocalRunError, run_durable_locally
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import CompletionCheck
from tests.provider_support import StubFactory
from tests.reliability.rig import (
    CrashOnce,
    RecordingQueue,
    Rig,
    Stopwatch,
    unique_day,
    unique_entity,
)

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
FILES = 14  # more than one SendMessageBatch of 10
LEASE_S = 10


@dataclass(frozen=True)
class CrashPoint:
    """Where the invocation dies, and how often a file may be sent because of it."""

    inject: Callable[[BatchFlowService, RecordingQueue], CrashOnce]
    max_sends: int  # 2 where the first send may have landed before the crash


def _final(result: Any) -> bool:
    return CompletionCheck.to_dict(result)["status"] is not None


CRASH_POINTS = {
    "after-create-batch": CrashPoint(lambda f, q: CrashOnce(f, "create_batch", after=True), 1),
    "after-3-job-puts": CrashPoint(lambda f, q: CrashOnce(f.jobs, "create", at_call=4), 1),
    "after-puts-before-send": CrashPoint(lambda f, q: CrashOnce(q, "_send_to"), 1),
    "between-send-batches": CrashPoint(lambda f, q: CrashOnce(q, "_send_chunk", at_call=2), 2),
    "after-send-before-mark-queued": CrashPoint(
        lambda f, q: CrashOnce(f.batches, "mark_queued"), 2
    ),
    "after-fetch-and-queue": CrashPoint(
        lambda f, q: CrashOnce(f, "fetch_and_queue", after=True), 2
    ),
    "after-first-check": CrashPoint(lambda f, q: CrashOnce(f, "check_completion", after=True), 1),
    "after-final-check": CrashPoint(
        lambda f, q: CrashOnce(f, "check_completion", after=True, only_if=_final), 1
    ),
}


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_a_poller_crash_replays_to_the_invariant_with_at_least_once_sends(
    rig: Rig,
    stub_factory: StubFactory,
    figures: Any,
    point: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The crashed invocation is replayed: one batch, every file completed, sent 1..max times."""
    monkeypatch.setattr(Executor, "RETRY_BACKOFF_SECONDS", 0)
    entity = unique_entity()
    files = [
        StubFileSpec(f"{entity}{i}", 500 * i, CIPHER_GCM if i % 2 else CIPHER_CBC)
        for i in range(FILES)
    ]
    day, stub = unique_day(), stub_factory(files)
    queue = RecordingQueue(rig.clients.sqs, rig.queues.url)
    flow = rig.flow(stub, queue=queue)
    crash = CRASH_POINTS[point].inject(flow, queue)
    clock = Stopwatch()
    services = [rig.service(stub, lease_seconds=LEASE_S) for _ in range(2)]
    with rig.thread_workers(services, concurrency=2):
        result = rig.run_day(flow, day)
    facts = rig.check_day(
        day,
        result["batch_id"],
        stub.expected(day),
    )
    sends = sorted(queue.sent.values())
    figures(
        point=point,
        sends_min=sends[0],
        sends_max=sends[-1],
        resent=sum(n > 1 for n in sends),
        seconds=clock.seconds,
    )
    assert crash.crashed
    assert result["status"] == "completed"
    assert facts.by_status(JobStatus.COMPLETED) == set(stub.expected(day))
    assert set(queue.sent) == set(stub.expected(day))
    assert sends[0] >= 1
    assert sends[-1] <= CRASH_POINTS[point].max_sends


class DeadQueue(RecordingQueue):
    """SQS refusing every send, after the queue's own retries (an outage, a deleted queue)."""

    def _send_to(self, queue_url: str, messages: Sequence[JobMessage]) -> int:
        raise QueueSendError("SQS refused every send", [m.file_id for m in messages])


def test_a_queue_that_refuses_every_send_ends_the_batch_failed_saying_why(
    rig: Rig, stub_factory: StubFactory
) -> None:
    """fetch-and-queue fails for good: the batch ends `failed` with an ErrorMessage about SQS."""
    stub, day = stub_factory([StubFileSpec(unique_entity(), 100, CIPHER_GCM)]), unique_day()
    flow = rig.flow(stub, queue=DeadQueue(rig.clients.sqs, rig.queues.url))
    handler = build_durable_handler(lambda: flow, 1, 3)
    with contextlib.suppress(LocalRunError):  # how the run ends is not the point
        run_durable_locally(handler, {"date": day}, skip_time=True, timeout_seconds=60)
    (batch,) = rig.batches().query_by_date(day)
    assert batch.status is BatchStatus.FAILED
    assert "queue" in (batch.error_message or "")

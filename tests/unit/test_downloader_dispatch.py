"""What an entry point does with a message, given the service's outcome (fake service and SQS)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError
from structlog.testing import capture_logs

from dlpipe.adapters.download_queue import EventQueues, MessageVisibility
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.entrypoints.dispatch import dispatch
from dlpipe.entrypoints.lambda_batch import Runtime, handle_event
from dlpipe.services.download.service import Outcome, ProcessResult
from dlpipe.services.download.transfer import TransferTuning
from tests.support import new_batch_id

QUEUE_URL = "http://127.0.0.1:1/000000000000/q"
LEASE_S = 300


class FakeSqs:
    """Records visibility changes; can be told to fail."""

    def __init__(self, fail: bool = False) -> None:
        self.visibility: list[tuple[str, int]] = []
        self.sent: list[tuple[str, int]] = []
        self.batches: list[list[tuple[str, int]]] = []
        self.fail = fail

    def send_message(self, QueueUrl: str, MessageBody: str, DelaySeconds: int) -> None:
        if self.fail:
            raise EndpointConnectionError(endpoint_url=QueueUrl)
        self.sent.append((MessageBody, DelaySeconds))

    def change_message_visibility(
        self, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int
    ) -> None:
        if self.fail:
            raise EndpointConnectionError(endpoint_url=QueueUrl)
        self.visibility.append((ReceiptHandle, VisibilityTimeout))

    def change_message_visibility_batch(
        self, QueueUrl: str, Entries: list[dict[str, Any]]
    ) -> dict[str, Any]:
        if self.fail:
            raise EndpointConnectionError(endpoint_url=QueueUrl)
        self.batches.append([(e["ReceiptHandle"], e["VisibilityTimeout"]) for e in Entries])
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


class FakeService:
    """Answers each FileID with a fixed result, or raises."""

    def __init__(self, results: dict[str, ProcessResult | Exception]) -> None:
        self.results = results
        self.deps = SimpleNamespace(
            stop=threading.Event(), lease_seconds=LEASE_S, tuning=TransferTuning()
        )
        self.calls: list[str] = []
        self.receive_counts: list[int | None] = []

    def process(
        self,
        file_id: str,
        *,
        on_heartbeat: Callable[[int], None] | None = None,
        budget: object = None,
        receive_count: int | None = None,
    ) -> ProcessResult:
        self.calls.append(file_id)
        self.receive_counts.append(receive_count)
        result = self.results[file_id]
        if isinstance(result, Exception):
            raise result
        return result


def body(file_id: str) -> str:
    return encode_message(JobMessage(file_id, new_batch_id()))


def run(result: ProcessResult | Exception, sqs: FakeSqs | None = None) -> tuple[bool, FakeSqs]:
    sqs = sqs or FakeSqs()
    service: Any = FakeService({"acme-2026-02-28": result})
    acked = dispatch(service, body("acme-2026-02-28"), MessageVisibility(sqs, QUEUE_URL, "rh"))  # type: ignore[arg-type]
    return acked, sqs


@pytest.mark.parametrize(
    "outcome",
    [
        Outcome.COMPLETED,
        Outcome.ALREADY_DONE,
        Outcome.FAILED,
        Outcome.ERROR,
        Outcome.LEASE_LOST,
        Outcome.NOT_FOUND,
    ],
)
def test_finished_outcomes_acknowledge_the_message(outcome: Outcome) -> None:
    """Completed, terminal, failed, error, lease lost and missing jobs all delete the message."""
    acked, sqs = run(ProcessResult(outcome))
    assert acked
    assert sqs.visibility == []


def test_unavailable_replaces_the_message_with_a_copy_delayed_by_the_backoff() -> None:
    """A fresh copy (its receive count at zero) delayed retry_after_s, the received one
    acknowledged: waiting out an outage never walks a file towards the DLQ."""
    acked, sqs = run(ProcessResult(Outcome.UNAVAILABLE, retry_after_s=4, dependency="DynamoDB"))
    assert acked
    assert [delay for _, delay in sqs.sent] == [4]
    assert sqs.visibility == []


def test_busy_replaces_the_message_with_a_copy_delayed_until_the_claim_ends() -> None:
    """BUSY: a fresh copy delayed retry_after_s is sent and the received one acknowledged."""
    acked, sqs = run(ProcessResult(Outcome.BUSY, retry_after_s=42))
    assert acked
    assert [delay for _, delay in sqs.sent] == [42]
    assert '"file_id": "acme-2026-02-28"' in sqs.sent[0][0]
    assert sqs.visibility == []


def test_busy_delay_is_capped_at_what_sqs_allows() -> None:
    """A claim with 40 minutes left is deferred by SQS's maximum of 900 s."""
    _, sqs = run(ProcessResult(Outcome.BUSY, retry_after_s=2400))
    assert sqs.sent[0][1] == 900


def test_released_makes_the_message_visible_at_once() -> None:
    """RELEASED (shutdown): not acknowledged, visibility 0 so another worker takes it now."""
    acked, sqs = run(ProcessResult(Outcome.RELEASED))
    assert not acked
    assert sqs.visibility == [("rh", 0)]


def test_an_unknown_feed_keeps_the_message_hidden_for_the_backoff_not_acknowledged() -> None:
    """FEED_UNKNOWN: the same message (its receive count kept) returns after retry_after_s."""
    service: Any = FakeService({"acme-2026-02-28": ProcessResult(Outcome.FEED_UNKNOWN, 60)})
    sqs = FakeSqs()
    visibility = MessageVisibility(sqs, QUEUE_URL, "rh")  # type: ignore[arg-type]
    assert not dispatch(service, body("acme-2026-02-28"), visibility, receive_count=2)
    assert (sqs.visibility, sqs.sent, service.receive_counts) == ([("rh", 60)], [], [2])


def test_an_exception_is_never_an_acknowledgement() -> None:
    """A crash leaves the message for redelivery (and the DLQ after maxReceiveCount)."""
    with capture_logs() as logs:
        acked, _ = run(RuntimeError("boom"))
    assert not acked
    assert [e["event"] for e in logs] == ["message.failed"]


def test_a_failing_sqs_is_logged_not_raised_and_the_busy_message_is_kept() -> None:
    """SQS refusing the copy and the visibility change: no crash, the message is not acked."""
    with capture_logs() as logs:
        acked, _ = run(ProcessResult(Outcome.BUSY, retry_after_s=5), FakeSqs(fail=True))
    assert not acked
    assert {"message.defer_failed", "message.visibility_failed"} <= {e["event"] for e in logs}


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "[]",
        '{"file_id": "../../etc-2026-02-28", "batch_id": "x"}',
        '{"batch_id": "b"}',
        "",
    ],
)
def test_a_malformed_body_is_acknowledged_and_logged_as_rejected(raw: str) -> None:
    """A body that is no job message can never succeed: acknowledged, `message.rejected`."""
    service: Any = FakeService({})
    with capture_logs() as logs:
        acked = dispatch(service, raw, MessageVisibility(FakeSqs(), QUEUE_URL, "rh"))  # type: ignore[arg-type]
    assert acked
    assert service.calls == []
    assert [e["event"] for e in logs] == ["message.rejected"]


def record(message_id: str, file_id: str) -> dict[str, str]:
    return {
        "messageId": message_id,
        "receiptHandle": f"rh-{message_id}",
        "body": body(file_id),
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q",
    }


def test_handler_reports_exactly_the_failing_record() -> None:
    """One good and one crashing record: only the crashing one is in batchItemFailures."""
    service: Any = FakeService(
        {"good-2026-02-28": ProcessResult(Outcome.COMPLETED), "bad-2026-02-28": RuntimeError("x")}
    )
    runtime = Runtime(service, EventQueues(FakeSqs(), QUEUE_URL))  # type: ignore[arg-type]
    event = {"Records": [record("m1", "good-2026-02-28"), record("m2", "bad-2026-02-28")]}
    assert handle_event(event, runtime) == {"batchItemFailures": [{"itemIdentifier": "m2"}]}


def test_handler_stops_taking_records_when_the_invocation_runs_out_of_time() -> None:
    """Past the deadline margin, records are left (reported) for a later invocation."""
    service: Any = FakeService({"a-2026-02-28": ProcessResult(Outcome.COMPLETED)})
    runtime = Runtime(service, EventQueues(FakeSqs(), QUEUE_URL))  # type: ignore[arg-type]
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 1000)
    result = handle_event({"Records": [record("m1", "a-2026-02-28")]}, runtime, context)
    assert result == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert service.calls == []


def test_handler_hides_its_records_for_lease_plus_margin_not_the_queue_default() -> None:
    """Every record of an invocation is hidden lease + margin before work, the rest again per record."""
    service: Any = FakeService(
        {"a-2026-02-28": ProcessResult(Outcome.COMPLETED), "b-2026-02-28": RuntimeError("x")}
    )
    sqs = FakeSqs()
    runtime = Runtime(service, EventQueues(sqs, QUEUE_URL))  # type: ignore[arg-type]
    event = {"Records": [record("m1", "a-2026-02-28"), record("m2", "b-2026-02-28")]}
    handle_event(event, runtime)
    visibility_s = LEASE_S + TransferTuning().margin_s(LEASE_S)
    assert sqs.batches == [
        [("rh-m1", visibility_s), ("rh-m2", visibility_s)],
        [("rh-m2", visibility_s)],
    ]


def test_handler_goes_on_when_hiding_its_records_fails() -> None:
    """SQS refusing the visibility change is logged; the records are still processed."""
    service: Any = FakeService({"a-2026-02-28": ProcessResult(Outcome.COMPLETED)})
    runtime = Runtime(service, EventQueues(FakeSqs(fail=True), QUEUE_URL))  # type: ignore[arg-type]
    with capture_logs() as logs:
        result = handle_event({"Records": [record("m1", "a-2026-02-28")]}, runtime)
    assert result == {"batchItemFailures": []}
    assert service.calls == ["a-2026-02-28"]
    assert any(e["event"] == "message.visibility_failed" for e in logs)


def test_a_record_of_a_feed_s_own_queue_is_answered_on_that_queue_not_the_main_one() -> None:
    """The downloader Lambda has one event source per feed's queue and DLPIPE_QUEUE_URL set
    to the main one: a feed queue's record is found by its ARN (GetQueueUrl, once)."""
    asked: list[tuple[str, str]] = []
    feed_url = "http://127.0.0.1:1/000000000000/dlpipe-downloads-feed-vendor-b"

    def get_queue_url(QueueName: str, QueueOwnerAWSAccountId: str) -> dict[str, str]:
        asked.append((QueueName, QueueOwnerAWSAccountId))
        return {"QueueUrl": feed_url}

    sqs = SimpleNamespace(get_queue_url=get_queue_url)
    queues = EventQueues(sqs, QUEUE_URL)  # type: ignore[arg-type]
    main_arn = "arn:aws:sqs:eu-west-1:000000000000:q"
    feed_arn = "arn:aws:sqs:eu-west-1:000000000000:dlpipe-downloads-feed-vendor-b"
    assert queues.queue_for(main_arn).queue_url == QUEUE_URL
    assert queues.queue_for(feed_arn).queue_url == feed_url
    assert queues.queue_for(feed_arn).queue_url == feed_url
    assert asked == [("dlpipe-downloads-feed-vendor-b", "000000000000")]

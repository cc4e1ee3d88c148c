"""moto's SQS with dlpipe's fixes (dlpipe/local/moto_sqs.py) answers as plain moto does: the same
scenario, over HTTP with boto3, against the session's emulator and against moto without them."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from dlpipe.local.emulator import LocalAws
from dlpipe.local.processes import stop_child, wait_until_answers

pytestmark = pytest.mark.integration

_PLAIN_MOTO = """
import logging
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

logging.getLogger("werkzeug").setLevel(logging.ERROR)
app = DomainDispatcherApplication(create_backend_app)
server = make_server("127.0.0.1", 0, app, threaded=True)
print(server.port, flush=True)
server.serve_forever()
"""


@pytest.fixture(scope="module")
def plain_moto() -> Iterator[str]:
    """moto's own server, without dlpipe's fixes, in a child process stopped by PID."""
    process = subprocess.Popen(
        [sys.executable, "-c", _PLAIN_MOTO], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        url = f"http://127.0.0.1:{int(process.stdout.readline())}"
        wait_until_answers(f"{url}/moto-api/data.json", 30, require_ok=True)
        yield url
    finally:
        stop_child(process, 10)
        if process.stdout:
            process.stdout.close()


def _sqs(endpoint_url: str) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _counts(sqs: Any, url: str) -> tuple[int, int, int]:
    """(visible, not visible, delayed), as GetQueueAttributes All gives them."""
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        int(got["ApproximateNumberOfMessages"]),
        int(got["ApproximateNumberOfMessagesNotVisible"]),
        int(got["ApproximateNumberOfMessagesDelayed"]),
    )


def _received(sqs: Any, url: str, **kwargs: Any) -> list[dict[str, Any]]:
    return sqs.receive_message(  # type: ignore[no-any-return]
        QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"], **kwargs
    ).get("Messages", [])


def _bodies(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in messages)


def _standard_queue(sqs: Any, name: str) -> dict[str, Any]:
    """Counts, receive, delete, visibility, delay and long polling on a standard queue."""
    seen: dict[str, Any] = {}
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)]
    )
    sqs.send_message(QueueUrl=url, MessageBody="late", DelaySeconds=1)
    seen["sent"] = _counts(sqs, url)
    seen["asked for one count"] = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    seen["asked for no count"] = sorted(
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout", "QueueArn"])[
            "Attributes"
        ]
    )
    two = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, VisibilityTimeout=30)
    handles = [m["ReceiptHandle"] for m in two["Messages"]]
    seen["received two"] = _counts(sqs, url)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=handles[0])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=handles[0])  # again: accepted
    seen["deleted one"] = _counts(sqs, url)
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handles[1], VisibilityTimeout=0)
    seen["made one visible"] = _counts(sqs, url)
    try:
        sqs.delete_message(QueueUrl=url, ReceiptHandle="x" * 185)
    except ClientError as exc:
        seen["bogus handle"] = exc.response["Error"]["Code"]
    time.sleep(1.2)
    seen["delay over"] = _counts(sqs, url)
    seen["first receive"] = _bodies(_received(sqs, url, VisibilityTimeout=1))
    seen["in flight"] = _counts(sqs, url)
    time.sleep(1.2)
    again = _received(sqs, url, VisibilityTimeout=30)
    seen["visibility over"] = _bodies(again)
    done = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(again)],
    )
    seen["batch delete"] = (len(done.get("Successful", [])), len(done.get("Failed", [])))
    seen["empty"] = _counts(sqs, url)
    sender = threading.Timer(0.5, lambda: sqs.send_message(QueueUrl=url, MessageBody="waited"))
    waited_out = threading.Timer(20, lambda: None)  # ends when the poll's 20 s wait would
    waited_out.start()
    sender.start()
    try:
        polled = _received(sqs, url, WaitTimeSeconds=20)
        returned_early = not waited_out.finished.is_set()
    finally:
        sender.join()
        waited_out.cancel()
    seen["long poll"] = (_bodies(polled), returned_early)
    sqs.send_message(QueueUrl=url, MessageBody="purged")
    sqs.purge_queue(QueueUrl=url)
    seen["purged"] = _counts(sqs, url)
    return seen


def _fifo_and_dead_letters(sqs: Any, name: str) -> dict[str, Any]:
    """Content-based deduplication on a FIFO queue; a redrive to the dead-letter queue."""
    seen: dict[str, Any] = {}
    fifo = sqs.create_queue(
        QueueName=f"{name}.fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
    )["QueueUrl"]
    for body in ("a", "a", "b"):
        sqs.send_message(QueueUrl=fifo, MessageBody=body, MessageGroupId="g")
    sqs.send_message_batch(
        QueueUrl=fifo,
        Entries=[{"Id": b, "MessageBody": b, "MessageGroupId": "g"} for b in ("b", "c")],
    )
    seen["fifo deduplicated"] = _counts(sqs, fifo)
    seen["fifo order"] = [m["Body"] for m in _received(sqs, fifo, VisibilityTimeout=30)]
    dlq = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1})
    source = sqs.create_queue(QueueName=f"{name}-src", Attributes={"RedrivePolicy": policy})[
        "QueueUrl"
    ]
    sqs.send_message(QueueUrl=source, MessageBody="poison")
    seen["first delivery"] = _bodies(_received(sqs, source, VisibilityTimeout=0))
    seen["second delivery"] = _bodies(_received(sqs, source, VisibilityTimeout=0))
    seen["source after redrive"] = _counts(sqs, source)
    seen["dead letters"] = _counts(sqs, dlq)
    return seen


EXPECTED_STANDARD = {
    "sent": (3, 0, 1),
    "asked for one count": {"ApproximateNumberOfMessagesDelayed": "1"},
    "asked for no count": ["QueueArn", "VisibilityTimeout"],
    "received two": (1, 2, 1),
    "deleted one": (1, 1, 1),
    "made one visible": (2, 0, 1),
    "bogus handle": "ReceiptHandleIsInvalid",
    "delay over": (3, 0, 0),
    "first receive": [("late", "1"), ("m1", "2"), ("m2", "1")],
    "in flight": (0, 3, 0),
    "visibility over": [("late", "2"), ("m1", "3"), ("m2", "2")],
    "batch delete": (3, 0),
    "empty": (0, 0, 0),
    "long poll": ([("waited", "1")], True),
    "purged": (0, 0, 0),
}

EXPECTED_FIFO_AND_DEAD_LETTERS = {
    "fifo deduplicated": (3, 0, 0),
    "fifo order": ["a", "b", "c"],
    "first delivery": [("poison", "1")],
    "second delivery": [],
    "source after redrive": (0, 0, 0),
    "dead letters": (1, 0, 0),
}


@pytest.fixture(params=["dlpipe emulator", "plain moto"])
def endpoint(request: pytest.FixtureRequest) -> str:
    """The fixed emulator of the session, then moto without the fixes (the reference)."""
    if request.param == "plain moto":
        return str(request.getfixturevalue("plain_moto"))
    emulator: LocalAws = request.getfixturevalue("emulator")
    return emulator.endpoint_url


def test_standard_queue_answers_as_plain_moto_does(endpoint: str) -> None:
    """Counts after send, delayed send, receive, delete (twice), visibility change, delay and
    visibility expiry; receive counts; a bogus handle refused; a long poll woken by a send."""
    assert _standard_queue(_sqs(endpoint), f"sem{uuid.uuid4().hex[:12]}") == EXPECTED_STANDARD


def test_fifo_deduplication_and_redrive_answer_as_plain_moto_does(endpoint: str) -> None:
    """A FIFO queue still drops a duplicate body, and a message past maxReceiveCount moves to
    the dead-letter queue (moto's receive moves it while holding the queue's lock now)."""
    got = _fifo_and_dead_letters(_sqs(endpoint), f"sem{uuid.uuid4().hex[:12]}")
    assert got == EXPECTED_FIFO_AND_DEAD_LETTERS

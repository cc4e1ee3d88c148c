"""Outage or refusal: botocore's errors are classified once, at the adapter edge, by type."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)

from dlpipe.adapters import aws_errors
from dlpipe.adapters.dynamo import raise_store_error
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.errors import AwsRequestError, QueueSendError, StoreUnavailableError
from tests.support import make_job

URL = "http://127.0.0.1:1/000000000000/q"


def client_error(code: str, status: int, operation: str = "SendMessageBatch") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": f"{code}!"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        operation,
    )


OUTAGES = [
    client_error("InternalError", 500),
    client_error("ServiceUnavailableException", 503),  # a 5xx whatever its code
    client_error("ThrottlingException", 400),
    client_error("ProvisionedThroughputExceededException", 400),
    client_error("RequestThrottled", 403),
    client_error("SlowDown", 429),
    EndpointConnectionError(endpoint_url=URL),
    ConnectTimeoutError(endpoint_url=URL),
    ReadTimeoutError(endpoint_url=URL),
    ConnectionClosedError(endpoint_url=URL),
]
REFUSALS = [
    client_error("AccessDenied", 403),
    client_error("AWS.SimpleQueueService.NonExistentQueue", 400),
    client_error("ResourceNotFoundException", 400, "GetItem"),
    client_error("ValidationException", 400, "GetItem"),
    NoCredentialsError(),
    ParamValidationError(report="missing QueueUrl"),
]


@pytest.mark.parametrize("exc", OUTAGES, ids=lambda e: type(e).__name__ + str(e)[:40])
def test_throttling_5xx_timeouts_and_lost_connections_are_outages(exc: Exception) -> None:
    assert aws_errors.is_transient(exc)


@pytest.mark.parametrize("exc", REFUSALS, ids=lambda e: type(e).__name__ + str(e)[:40])
def test_missing_resources_denials_and_bad_requests_are_not(exc: Exception) -> None:
    assert not aws_errors.is_transient(exc)


def test_a_dynamodb_5xx_of_any_code_is_store_unavailable_and_names_dynamodb() -> None:
    """A 503 with a code outside the old list was an AwsRequestError (a refusal): not retried."""
    with pytest.raises(StoreUnavailableError) as caught:
        raise_store_error(client_error("ServiceUnavailableException", 503, "Query"), "jobs")
    assert caught.value.dependency == "DynamoDB"


def test_a_dynamodb_refusal_stays_a_one_line_request_error() -> None:
    with pytest.raises(AwsRequestError, match="AccessDenied"):
        raise_store_error(client_error("AccessDenied", 403, "Query"), "jobs")


class Sqs:
    """SendMessageBatch answering `answer` (a response, or an error to raise)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def send_message_batch(self, **_: Any) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def refused_send(answer: Any) -> QueueSendError:
    queue = JobQueue(Sqs(answer), URL, max_attempts=1)  # type: ignore[arg-type]
    with pytest.raises(QueueSendError) as caught:
        queue.send_jobs([make_job("accounts")])
    return caught.value


@pytest.mark.parametrize(
    ("answer", "outage"),
    [
        (client_error("InternalError", 500), True),
        (EndpointConnectionError(endpoint_url=URL), True),
        ({"Failed": [{"Id": "0", "Code": "InternalError", "SenderFault": False}]}, True),
        ({"Failed": [{"Id": "0", "Code": "KMS.AccessDenied", "SenderFault": True}]}, False),
        (client_error("AWS.SimpleQueueService.NonExistentQueue", 400), False),
        (client_error("AccessDenied", 403), False),
    ],
    ids=["500", "connection", "server-side entry", "sender entry", "no queue", "denied"],
)
def test_a_send_refused_by_an_outage_carries_sqs_unavailable(answer: Any, outage: bool) -> None:
    """Only an outage (SQS's fault, not ours) makes the send error carry the domain's
    DependencyUnavailableError, naming SQS; a refusal carries none."""
    unavailable = refused_send(answer).unavailable
    assert (unavailable is not None) is outage
    if unavailable is not None:
        assert unavailable.dependency == "SQS"
        assert "SendMessageBatch on 'q'" in str(unavailable)

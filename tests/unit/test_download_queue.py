"""The download queue's edge: SQS faults on receive become the domain's QueueUnavailableError,
and the worker that meets one logs the SQS error's type and keeps running."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from structlog.testing import capture_logs

from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.domain.download_errors import QueueUnavailableError, TransientError
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from tests.unit.test_downloader_dispatch import QUEUE_URL, FakeService


class RefusingSqs:
    """Every receive fails with `error`."""

    def __init__(self, error: Exception) -> None:
        self.error, self.receives = error, 0

    def receive_message(self, **_: Any) -> dict[str, Any]:
        self.receives += 1
        raise self.error


DENIED = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "ReceiveMessage")


@pytest.mark.parametrize("error", [EndpointConnectionError(endpoint_url=QUEUE_URL), DENIED])
def test_a_refused_receive_is_a_transient_queue_error(error: Exception) -> None:
    """No botocore type leaves the adapter: callers catch the domain's error."""
    queue = DownloadQueue(RefusingSqs(error), QUEUE_URL)  # type: ignore[arg-type]
    with pytest.raises(QueueUnavailableError, match="ReceiveMessage failed") as caught:
        queue.receive(max_messages=1, wait_s=0, visibility_s=30)
    assert isinstance(caught.value, TransientError)
    assert caught.value.__cause__ is error


def test_the_worker_logs_a_failed_receive_and_keeps_polling() -> None:
    """The outage's one log line names the SQS error's type; the thread lives on."""
    sqs = RefusingSqs(EndpointConnectionError(endpoint_url=QUEUE_URL))
    options = WorkerOptions(wait_seconds=0, exit_when_idle_s=0.5)
    worker = Worker(FakeService({}), DownloadQueue(sqs, QUEUE_URL), options)  # type: ignore[arg-type]
    with capture_logs() as logs:
        assert worker.run() == 0
    failed = [e for e in logs if e["event"] == "worker.dependency_down"]
    assert [e["error_type"] for e in failed[:1]] == ["EndpointConnectionError"]
    assert not [e for e in logs if e["event"] == "worker.poll_failed"]

"""A stopping worker processes what a long poll still open at the stop returns; only a file
past its grace period is released (its message handed back once)."""

from __future__ import annotations

import threading
import time
from typing import Any

from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.services.download.service import Outcome, ProcessResult
from tests.e2e.test_worker_kit import wait_until
from tests.unit.test_downloader_dispatch import QUEUE_URL, FakeService, FakeSqs
from tests.unit.test_worker_visibility import message

FILE_ID = "a-2026-02-28"


class OpenPollSqs(FakeSqs):
    """The first receive is a long poll that answers once `deliver` is set; later ones are empty."""

    def __init__(self, messages: list[dict[str, str]]) -> None:
        super().__init__()
        self.messages, self.deliver = messages, threading.Event()
        self.receives, self.deleted = 0, []  # type: ignore[var-annotated]

    def receive_message(self, **_: Any) -> dict[str, Any]:
        self.receives += 1
        if self.receives > 1:
            return {}
        self.deliver.wait(10)
        return {"Messages": self.messages}

    def delete_message(self, QueueUrl: str, ReceiptHandle: str) -> None:
        self.deleted.append(ReceiptHandle)


class SlowService(FakeService):
    """Takes `seconds` per file, or until the worker releases its files (stop set): RELEASED."""

    def __init__(self, seconds: float, result: ProcessResult) -> None:
        super().__init__({FILE_ID: result})
        self.seconds = seconds

    def process(self, file_id: str, **kwargs: Any) -> ProcessResult:
        if self.deps.stop.wait(self.seconds):
            self.calls.append(file_id)
            return ProcessResult(Outcome.RELEASED)
        return super().process(file_id, **kwargs)


def stop_then_deliver(worker: Worker, sqs: OpenPollSqs, late_s: float) -> threading.Thread:
    """Run the worker; stop it while its poll is open; the poll answers `late_s` later."""
    running = threading.Thread(target=worker.run, daemon=True)
    running.start()
    wait_until(lambda: sqs.receives == 1, 60, "the long poll to open")
    worker.request_stop("test")
    time.sleep(late_s)
    sqs.deliver.set()
    running.join(timeout=10)
    assert not running.is_alive()
    return running


def test_a_message_received_after_the_stop_is_processed_with_a_whole_grace_period() -> None:
    """The poll answers 0.5 s after the stop, grace 0.3 s, the file takes 0.2 s: it completes
    and is deleted, never handed back (which would be one more receive)."""
    service: Any = SlowService(0.2, ProcessResult(Outcome.COMPLETED))
    sqs = OpenPollSqs([message(1, FILE_ID)])
    worker = Worker(service, DownloadQueue(sqs, QUEUE_URL), WorkerOptions(grace_s=0.3))  # type: ignore[arg-type]
    stop_then_deliver(worker, sqs, late_s=0.5)
    assert (service.calls, sqs.deleted, sqs.visibility) == ([FILE_ID], ["rh1"], [])
    assert not service.deps.stop.is_set()


def test_past_its_grace_a_late_file_is_released_and_the_rest_handed_back_once() -> None:
    """Two messages in the late answer, grace 0.3 s, a file that would take 5 s: the first is
    released (visible again), the second handed back unprocessed; each one visibility change."""
    service: Any = SlowService(5.0, ProcessResult(Outcome.COMPLETED))
    sqs = OpenPollSqs([message(1, FILE_ID), message(2, FILE_ID)])
    options = WorkerOptions(grace_s=0.3, max_messages=2)
    worker = Worker(service, DownloadQueue(sqs, QUEUE_URL), options)  # type: ignore[arg-type]
    stop_then_deliver(worker, sqs, late_s=0.1)
    assert service.calls == [FILE_ID]
    assert sqs.visibility == [("rh1", 0), ("rh2", 0)]
    assert sqs.deleted == []

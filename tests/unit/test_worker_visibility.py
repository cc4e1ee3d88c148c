"""The long-poll worker hides what it receives for lease + margin, never the queue's default."""

from __future__ import annotations

from typing import Any

from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.services.download.service import Outcome, ProcessResult
from dlpipe.services.download.transfer import TransferTuning
from tests.support import new_batch_id
from tests.unit.test_downloader_dispatch import LEASE_S, QUEUE_URL, FakeService, FakeSqs


class ReceivingSqs(FakeSqs):
    """Hands out the given messages on the first receive, records every call's arguments."""

    def __init__(self, messages: list[dict[str, str]]) -> None:
        super().__init__()
        self.messages, self.receives, self.deleted = messages, [], []  # type: ignore[var-annotated]
        self.calls: list[str] = []

    def receive_message(self, **kwargs: Any) -> dict[str, Any]:
        self.receives.append(kwargs)
        messages, self.messages = self.messages, []
        return {"Messages": messages}

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        self.calls.append("hide " + ",".join(e["ReceiptHandle"] for e in Entries))
        return super().change_message_visibility_batch(QueueUrl, Entries)

    def delete_message(self, QueueUrl: str, ReceiptHandle: str) -> None:
        self.calls.append(f"delete {ReceiptHandle}")


def message(n: int, file_id: str) -> dict[str, str]:
    body = encode_message(JobMessage(file_id, new_batch_id()))
    return {"MessageId": f"m{n}", "ReceiptHandle": f"rh{n}", "Body": body}


def test_a_receive_asks_for_lease_plus_margin_and_rehides_messages_still_waiting() -> None:
    """ReceiveMessage carries VisibilityTimeout = lease + margin; a later message is re-hidden first."""
    service: Any = FakeService(
        {
            "a-2026-02-28": ProcessResult(Outcome.COMPLETED),
            "b-2026-02-28": ProcessResult(Outcome.COMPLETED),
        }
    )
    sqs = ReceivingSqs([message(1, "a-2026-02-28"), message(2, "b-2026-02-28")])
    worker = Worker(service, DownloadQueue(sqs, QUEUE_URL), WorkerOptions(max_messages=2))  # type: ignore[arg-type]
    worker._poll_once()
    visibility_s = LEASE_S + TransferTuning().margin_s(LEASE_S)
    assert sqs.receives[0]["VisibilityTimeout"] == visibility_s
    assert sqs.calls == ["delete rh1", "hide rh2", "delete rh2"]
    assert sqs.batches == [[("rh2", visibility_s)]]

"""The long-poll worker hides what it receives for a short receive window, renewed until the
job's claim sets lease + margin (dlpipe.entrypoints.receive_window); never the queue's default."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.download_queue import DownloadQueue, MessageVisibility, Received
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.entrypoints.receive_window import (
    RECEIVE_WINDOW_S,
    TICK_S,
    UnclaimedMessages,
    receive_window_s,
    renew_every_s,
)
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.services.download.service import Outcome, ProcessResult
from dlpipe.services.download.transfer import TransferTuning
from tests.support import new_batch_id
from tests.unit.services.test_download_service import keypair, make_rig
from tests.unit.test_downloader_dispatch import LEASE_S, QUEUE_URL, FakeService, FakeSqs

__all__ = ["keypair"]  # the fixture, used here by name
EVERY_S = renew_every_s(RECEIVE_WINDOW_S)


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

    def change_message_visibility(
        self, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int
    ) -> None:
        self.calls.append(f"visibility {ReceiptHandle} {VisibilityTimeout}")
        super().change_message_visibility(QueueUrl, ReceiptHandle, VisibilityTimeout)

    def delete_message(self, QueueUrl: str, ReceiptHandle: str) -> None:
        self.calls.append(f"delete {ReceiptHandle}")


def message(n: int, file_id: str) -> dict[str, str]:
    body = encode_message(JobMessage(file_id, new_batch_id()))
    return {"MessageId": f"m{n}", "ReceiptHandle": f"rh{n}", "Body": body}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_receive_asks_for_the_short_window_not_lease_plus_margin() -> None:
    """ReceiveMessage carries VisibilityTimeout = the receive window, well under lease + margin;
    a message waiting behind another is not hidden for lease + margin either."""
    service: Any = FakeService(
        {
            "a-2026-02-28": ProcessResult(Outcome.COMPLETED),
            "b-2026-02-28": ProcessResult(Outcome.COMPLETED),
        }
    )
    sqs = ReceivingSqs([message(1, "a-2026-02-28"), message(2, "b-2026-02-28")])
    worker = Worker(service, DownloadQueue(sqs, QUEUE_URL), WorkerOptions(max_messages=2))  # type: ignore[arg-type]
    worker._poll_once()
    assert sqs.receives[0]["VisibilityTimeout"] == RECEIVE_WINDOW_S
    assert LEASE_S + TransferTuning().margin_s(LEASE_S) > RECEIVE_WINDOW_S
    assert sqs.calls == ["delete rh1", "delete rh2"]
    assert sqs.batches == []


def test_the_window_is_renewed_before_it_runs_out() -> None:
    """A renewal is due every third of the window, on a tick of TICK_S: at least half the
    window is still left when one is due (the lanes' waiting messages and the taken ones)."""
    assert RECEIVE_WINDOW_S - renew_every_s(RECEIVE_WINDOW_S) - TICK_S >= RECEIVE_WINDOW_S / 2


def test_the_window_is_never_longer_than_lease_plus_margin() -> None:
    """A short lease (1 s + 1 s of margin) shortens the window: a message whose handling
    raised is back no later than it was before the window existed."""
    tuning = TransferTuning()
    short: Any = SimpleNamespace(deps=SimpleNamespace(lease_seconds=1, tuning=tuning))
    default: Any = SimpleNamespace(deps=SimpleNamespace(lease_seconds=300, tuning=tuning))
    assert (receive_window_s(short), receive_window_s(default)) == (2, RECEIVE_WINDOW_S)


def test_an_unclaimed_message_is_renewed_until_the_service_sets_its_visibility() -> None:
    """Renewed to the window every EVERY_S of a virtual clock; once the claim's
    heartbeat sets lease + margin, never again (a renewal would shorten it)."""
    clock, sqs = Clock(), FakeSqs()
    unclaimed = UnclaimedMessages(RECEIVE_WINDOW_S, clock)
    received = Received("m1", "rh1", "{}")
    visibility = unclaimed.watch(received, MessageVisibility(sqs, QUEUE_URL, "rh1"))  # type: ignore[arg-type]
    clock.now += EVERY_S - 1
    assert unclaimed.tick() == 0
    clock.now += 1
    assert unclaimed.tick() == 1
    clock.now += EVERY_S
    assert unclaimed.tick() == 1
    visibility(330)  # the claim's heartbeat
    clock.now += 5 * EVERY_S
    assert unclaimed.tick() == 0
    assert sqs.visibility == [("rh1", RECEIVE_WINDOW_S), ("rh1", RECEIVE_WINDOW_S), ("rh1", 330)]
    unclaimed.done(received)
    assert unclaimed.tick() == 0


def test_a_claim_extends_the_message_to_lease_plus_margin_before_any_byte_is_fetched(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """The order the window relies on: receive (window) -> claim -> lease + margin -> fetch.
    Before the claim nothing but the window hides the message: a renewal then is the only
    extension; after it, the heartbeat's."""
    rig = make_rig(keypair)
    events: list[str] = []
    claim, open_source = rig.jobs.claim, rig.source.open

    def claiming(file_id: str, owner: str, lease_seconds: int) -> Any:
        events.append("claim")
        return claim(file_id, owner, lease_seconds)

    def opening(url: str, **kwargs: Any) -> Any:
        events.append("fetch")
        return open_source(url, **kwargs)

    rig.jobs.claim = claiming  # type: ignore[method-assign]
    rig.source.open = opening  # type: ignore[method-assign]
    clock, sqs = Clock(), FakeSqs()
    unclaimed = UnclaimedMessages(RECEIVE_WINDOW_S, clock)
    received = Received("m1", "rh1", "{}")
    visibility = unclaimed.watch(received, MessageVisibility(sqs, QUEUE_URL, "rh1"))  # type: ignore[arg-type]

    def on_heartbeat(seconds: int) -> None:
        events.append(f"visibility {seconds}")
        visibility(seconds)

    result = rig.service.process(rig.job.file_id, on_heartbeat=on_heartbeat)
    assert result.outcome is Outcome.COMPLETED
    deps = rig.service.deps
    held_s = deps.lease_seconds + deps.tuning.margin_s(deps.lease_seconds)
    assert events[:3] == ["claim", f"visibility {held_s}", "fetch"]
    clock.now += EVERY_S
    assert unclaimed.tick() == 0  # the claim owns the visibility: no renewal to the window

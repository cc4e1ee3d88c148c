"""A lease fence DynamoDB throttles, on in-memory fakes: its extension tried again while the
lease still has more than lease/3 to run, so a transfer that holds its lease is neither thrown
away nor downloaded twice; past that margin the error is raised as before. A throttled claim
or completion backs off as tests/unit/services/test_store_outage.py shows."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.domain.errors import StoreUnavailableError
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.services.download.lease import Heartbeat, LeaseLost
from dlpipe.services.download.service import Outcome
from tests.unit.services.test_download_service import URL, keypair, make_rig

__all__ = ["keypair"]  # the module-scoped fixture, shared

LEASE_S = 30
THROTTLED = "DynamoDB kept refusing (ThrottlingException) on 'data-download-jobs'"


class ThrottledLeases:
    """JobLeases whose extend_lease is throttled its first `times` calls; `get` answers the
    job as `holder` holds it (its read throttled `read_times` times)."""

    def __init__(self, times: int, holder: str = "w1", read_times: int = 0) -> None:
        self.times, self.calls = times, 0
        self.holder, self.read_times, self.reads = holder, read_times, 0

    def extend_lease(self, file_id: str, owner: str, lease_seconds: int) -> FileJob:
        self.calls += 1
        if self.calls <= self.times:
            raise StoreUnavailableError(THROTTLED)
        return None  # type: ignore[return-value]  # the heartbeat reads nothing back

    def get(self, file_id: str, *, consistent: bool = True) -> FileJob | None:
        assert consistent, "the fence must read the claim strongly consistently"
        self.reads += 1
        if self.reads <= self.read_times:
            raise StoreUnavailableError(THROTTLED)
        # The fence reads the claim's two fields only.
        return SimpleNamespace(status=JobStatus.DOWNLOADING, lease_owner=self.holder)  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the heartbeat called {name}")


class VirtualTime:
    """A monotonic clock that only a sleep moves."""

    def __init__(self) -> None:
        self.now, self.slept = 0.0, list[float]()

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _heartbeat(leases: ThrottledLeases, time: VirtualTime) -> Heartbeat:
    return Heartbeat(
        leases,  # type: ignore[arg-type]
        "accounts-2026-02-28",
        "w1",
        LEASE_S,
        on_beat=None,
        visibility_s=LEASE_S + 10,
        stop=threading.Event(),
        clock=lambda: time.now,
        sleep=time.sleep,
    )


def test_a_throttled_fence_is_tried_again_and_holds_the_lease() -> None:
    """Throttled twice: tried again after 1 s and 2 s, then extended; nothing raised."""
    leases, time = ThrottledLeases(times=2), VirtualTime()
    heartbeat = _heartbeat(leases, time)
    heartbeat.renew()
    assert (leases.calls, time.slept) == (3, [1, 2])
    assert not heartbeat.lost.is_set()


def test_throttling_past_the_lease_margin_is_raised() -> None:
    """A 30 s lease: retries while the next try starts with over 10 s of lease left (after
    1, 2, 4 and 8 s); the fifth refusal (at 15 s, the next try due at 31 s) is raised."""
    leases, time = ThrottledLeases(times=100), VirtualTime()
    with pytest.raises(StoreUnavailableError):
        _heartbeat(leases, time).renew()
    assert (leases.calls, time.slept) == (5, [1, 2, 4, 8])


def test_an_extended_lease_gives_the_next_fence_its_full_margin() -> None:
    """After a fence at 15 s succeeds, the lease runs to 45 s: a later throttled fence at
    20 s still retries (it would not with the first lease's end, 30 s)."""
    leases, time = ThrottledLeases(times=0), VirtualTime()
    heartbeat = _heartbeat(leases, time)
    time.now = 15.0
    heartbeat.renew()
    leases.times, leases.calls, time.now = 3, 0, 20.0
    heartbeat.renew()
    assert time.slept == [1, 2, 4]


def test_a_fence_within_a_third_of_the_lease_reads_and_writes_nothing() -> None:
    """Claimed at 0 s with a 30 s lease: a fence at 9.9 s reads the claim and extends
    nothing; at 10 s, and after a beat's extension only once 10 s have passed again, it
    extends the lease (and reads nothing)."""
    leases, time = ThrottledLeases(times=0), VirtualTime()
    heartbeat = _heartbeat(leases, time)
    time.now = 9.9
    heartbeat.fence()
    assert (leases.reads, leases.calls) == (1, 0)
    time.now = 10.0
    heartbeat.fence()
    assert (leases.reads, leases.calls) == (1, 1)
    time.now = 19.9
    heartbeat.fence()
    assert (leases.reads, leases.calls) == (2, 1)
    time.now = 20.0
    heartbeat.fence()
    assert (leases.reads, leases.calls) == (2, 2)


def test_a_recent_fence_that_reads_another_owner_loses_the_lease() -> None:
    """A worker whose clock runs ahead took the claim while ours was recent: the read shows
    it, the fence raises LeaseLost and the heartbeat knows the lease is lost."""
    leases, time = ThrottledLeases(times=0, holder="usurper"), VirtualTime()
    heartbeat = _heartbeat(leases, time)
    time.now = 1.0
    with pytest.raises(LeaseLost, match="usurper"):
        heartbeat.fence()
    assert heartbeat.lost.is_set()
    assert leases.calls == 0


def test_a_recent_fence_whose_read_is_throttled_extends_the_lease() -> None:
    """The read refused: the fence falls back on the extension, which is taken."""
    leases, time = ThrottledLeases(times=0, read_times=1), VirtualTime()
    heartbeat = _heartbeat(leases, time)
    time.now = 1.0
    heartbeat.fence()
    assert (leases.reads, leases.calls) == (1, 1)
    assert not heartbeat.lost.is_set()


def test_a_recent_fence_still_stops_a_lost_or_stopping_transfer() -> None:
    """The heartbeat's own news stops the publish before any read or write."""
    leases, time = ThrottledLeases(times=0), VirtualTime()
    heartbeat = _heartbeat(leases, time)
    heartbeat.lost.set()
    with pytest.raises(LeaseLost):
        heartbeat.fence()
    assert (leases.reads, leases.calls) == (0, 0)


def test_a_transfer_whose_pre_publish_fence_is_throttled_completes_with_one_download(
    keypair: tuple[RSAPrivateKey, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fence before the publish of a transfer longer than lease/3 (stood in for: the
    fence always renews here) is throttled once: tried again (1 s, the stop event's wait),
    the downloaded file published and completed; the source is opened once."""
    monkeypatch.setattr(Heartbeat, "fence", Heartbeat.renew)
    rig = make_rig(keypair)
    real = rig.jobs.extend_lease
    calls: list[int] = []

    def throttled_once(*args: Any, **kwargs: Any) -> FileJob:
        calls.append(1)
        if len(calls) == 1:
            raise StoreUnavailableError(THROTTLED)
        return real(*args, **kwargs)

    rig.jobs.extend_lease = throttled_once  # type: ignore[method-assign]
    waited: list[float] = []
    monkeypatch.setattr(rig.service.deps.stop, "wait", lambda s=None: waited.append(s) or False)
    assert rig.service.process(rig.job.file_id).outcome is Outcome.COMPLETED
    assert rig.stored().status is JobStatus.COMPLETED
    assert (rig.source.opened, len(calls), waited) == ([URL], 2, [1])

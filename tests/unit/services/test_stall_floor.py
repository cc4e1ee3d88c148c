"""A transfer below the stall floor is abandoned as provider_slow: the claim goes back with a
growing delay, and the job ends `failed` on its last attempt; a large file that keeps moving
is never cut."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.domain.download_errors import ProviderSlowError
from dlpipe.domain.model import JobStatus
from dlpipe.domain.stall import SLOW_ATTEMPTS, StallFloor, StallWatch, slow_retry_s
from dlpipe.services.download.service import Outcome
from tests.fakes.download import FakeSource
from tests.unit.services.test_download_service import TUNING, Rig, keypair, make_rig

__all__ = ["keypair"]  # the fixture, shared as is
FLOOR = StallFloor(min_bytes=1000, window_s=30.0)


def test_a_window_below_the_floor_raises_and_one_at_the_floor_passes() -> None:
    """999 bytes in 30 s is a stall; 1000 bytes is not, and each window starts afresh."""
    watch = StallWatch(FLOOR, now_s=0.0)
    watch.observe(999, now_s=29.0)
    watch.observe(1, now_s=30.0)  # 1000 in the first window: on to the next
    watch.observe(500, now_s=45.0)
    with pytest.raises(ProviderSlowError, match="below the floor of 1000 bytes per 30 s"):
        watch.observe(0, now_s=60.0)


def test_a_silent_first_window_is_a_stall() -> None:
    """No byte at all in the first window is below any floor."""
    with pytest.raises(ProviderSlowError):
        StallWatch(FLOOR, now_s=100.0).observe(0, now_s=131.0)


def test_the_slow_retries_grow_then_the_last_attempt_ends_the_job() -> None:
    """60 s after the first slow claim, 120 s after the second, none after the third."""
    assert [slow_retry_s(n) for n in range(1, SLOW_ATTEMPTS + 1)] == [60, 120, None]
    assert [slow_retry_s(n, 5) for n in range(1, SLOW_ATTEMPTS + 1)] == [10, 20, None]


@dataclass
class PacedSource(FakeSource):
    """Serves the body `chunk` bytes at a time, the rig's clock advancing `every_s` per chunk."""

    rig: Rig | None = None
    chunk: int = 1
    every_s: int = 10

    @contextmanager
    def open(self, url: str, **kwargs: Any) -> Iterator[Iterator[bytes]]:
        assert self.rig is not None
        rig, body = self.rig, self.bodies[url]
        assert isinstance(body, bytes)
        self.opened.append(url)

        def paced() -> Iterator[bytes]:
            for start in range(0, len(body), self.chunk):
                rig.clock.advance(self.every_s)
                yield body[start : start + self.chunk]

        yield paced()


def _rig(keypair: tuple[RSAPrivateKey, bytes], source: PacedSource) -> Rig:
    rig = make_rig(keypair, source=source, tuning=replace(TUNING, stall_floor=FLOOR))
    source.rig = rig
    return rig


def test_a_trickling_source_gives_the_claim_back_then_ends_the_job_provider_slow(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """1 byte every 10 s: SLOW (60 s, then 120 s), the job `available` in between (its last
    error provider_slow, which the operator's views count) and fetched once per claim, never
    retried in the same claim; the third claim ends it `failed`."""
    rig = _rig(keypair, PacedSource())
    for attempt, delay_s in ((1, 60), (2, 120)):
        result = rig.service.process(rig.job.file_id)
        assert (result.outcome, result.retry_after_s) == (Outcome.SLOW, delay_s)
        job = rig.stored()
        assert (job.status, job.attempts, job.lease_owner) == (JobStatus.AVAILABLE, attempt, None)
        assert (job.error_message or "").startswith("provider_slow: "), job.error_message
        assert len(rig.source.opened) == attempt
    assert rig.service.process(rig.job.file_id).outcome is Outcome.FAILED
    job = rig.stored()
    assert job.status is JobStatus.FAILED
    assert (job.error_message or "").startswith("provider_slow: 3 bytes in 30 s")
    assert rig.destination.objects == {}


def test_a_large_file_that_keeps_moving_is_never_cut(
    keypair: tuple[RSAPrivateKey, bytes],
) -> None:
    """1,000 bytes every 10 s, well above 1,000 per 30 s, for minutes: completed."""
    rig = _rig(keypair, PacedSource(chunk=1000, every_s=10))
    assert rig.service.process(rig.job.file_id).outcome is Outcome.COMPLETED
    assert rig.stored().status is JobStatus.COMPLETED

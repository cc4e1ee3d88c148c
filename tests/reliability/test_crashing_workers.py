"""Scenario 1: worker processes are SIGKILLed at random moments while they hold claims; each
is replaced, and the day still completes with nothing lost and no operator action.

Every download goes through a rate-limited relay (a slow network), so a transfer lasts a
second or two and the kills land in the middle of one, not between files."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from tests.e2e.test_worker_kit import WorkerProcess, wait_until
from tests.provider_support import StubFactory
from tests.reliability.rig import (
    Rig,
    SlowRelay,
    Stopwatch,
    claim_holders,
    day_queued,
    events_of,
    point_at,
    stopping_all,
    takeover_only,
    unique_day,
    unique_entity,
)

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
MIB = 1024 * 1024
LEASE_S = 3
# Plaintext sizes: 2 MiB to a little over one 8 MiB part of the worker's tuning.
SIZES = (2 * MIB + 5, 4 * MIB + 1, 6 * MIB + 3, 9 * MIB + 7)


@dataclass(frozen=True)
class CrashPlan:
    """How many files, worker processes and SIGKILLs, and the seed of the kill schedule."""

    files: int
    workers: int
    kills: int
    seed: int
    bytes_per_s: int  # each download's rate through the relay: kills land mid-transfer
    gap_s: tuple[float, float] = (0.2, 1.2)  # random pause before looking for the next victim


SHORT = CrashPlan(files=12, workers=3, kills=4, seed=20260228, bytes_per_s=4 * MIB)
SOAK = CrashPlan(files=80, workers=4, kills=20, seed=20260301, bytes_per_s=6 * MIB)


@dataclass(frozen=True)
class Kill:
    """One SIGKILL: whom, when (seconds into the run) and which claim it held."""

    pid: int
    at_s: float
    file_id: str | None


class Chaos:
    """Kills a claim-holding worker after each random pause and starts a replacement."""

    def __init__(
        self, rig: Rig, stub: StubProvider, plan: CrashPlan, day: str, pool: list[WorkerProcess]
    ) -> None:
        self._rig, self._stub, self._plan, self._day, self._pool = rig, stub, plan, day, pool
        self._rng = random.Random(plan.seed)
        self._done = threading.Event()
        self._clock = Stopwatch()
        self.kills: list[Kill] = []
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="chaos", daemon=True)

    def start_worker(self) -> WorkerProcess:
        """Start one more `dlpipe worker` process into the pool."""
        process = self._rig.worker_process(
            self._stub, f"worker{len(self._pool)}", lease_seconds=LEASE_S
        )
        self._pool.append(process)
        return process

    def __enter__(self) -> Chaos:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=60)
        if self.errors:
            raise self.errors[0]

    def _run(self) -> None:
        try:
            while len(self.kills) < self._plan.kills:
                if self._done.wait(self._rng.uniform(*self._plan.gap_s)):
                    return
                victim = self._find_victim()
                if victim is None:
                    return
                self._kill(*victim)
        except BaseException as exc:  # surfaced by __exit__ in the test's thread
            self.errors.append(exc)

    def _find_victim(self) -> tuple[WorkerProcess, str | None] | None:
        """A live worker that holds a claim (waiting up to 20 s for one), else None."""
        batches, jobs = self._rig.batches(), self._rig.jobs()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not self._done.is_set():
            day_batches = batches.query_by_date(self._day)
            if day_batches:
                holders = claim_holders(jobs, day_batches[-1].batch_id)
                live = [p for p in self._pool if p.process.poll() is None and p.pid in holders]
                if live:
                    victim = self._rng.choice(sorted(live, key=lambda p: p.pid))
                    return victim, holders[victim.pid]
            time.sleep(0.05)
        return None

    def _kill(self, victim: WorkerProcess, file_id: str | None) -> None:
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)
        self.kills.append(Kill(victim.pid, self._clock.seconds, file_id))
        self.start_worker()


def specs(entity: str, n: int) -> list[StubFileSpec]:
    """n files cycling through SIZES, CBC and GCM alternating."""
    return [
        StubFileSpec(f"{entity}{i}", SIZES[i % len(SIZES)], CIPHER_GCM if i % 2 else CIPHER_CBC)
        for i in range(n)
    ]


def run_crash_plan(
    make_rig: Any, stub_factory: StubFactory, plan: CrashPlan, figures: Any, polls: int
) -> None:
    """Run the day with `plan`'s workers and kills, then check the invariant and the kills."""
    rig = make_rig(visibility_s=5, max_receive=5)
    day, stub = unique_day(), stub_factory(specs(unique_entity(), plan.files))
    expected = stub.expected(day)  # published up front: the kills target downloads, not this
    jobs, batches, pool = rig.jobs(), rig.batches(), []
    relay = SlowRelay(plan.bytes_per_s)
    with relay.running(), ThreadPoolExecutor(1) as poller, stopping_all(pool):
        running = poller.submit(rig.run_day, takeover_only(rig.flow(stub)), day, polls=polls)
        wait_until(lambda: day_queued(batches, day), 60, "the poller to queue the day")
        for file_id in expected:  # before any worker runs: every download goes via the relay
            point_at(jobs, file_id, relay.url_for(jobs.require(file_id).presigned_url))
        clock = Stopwatch()
        with Chaos(rig, stub, plan, day, pool) as chaos:
            for _ in range(plan.workers):
                chaos.start_worker()
            result = running.result(timeout=polls + 120)
    facts = rig.check_day(
        day,
        result["batch_id"],
        expected,
    )
    events = events_of(pool)
    takeovers = [
        e for e in events if e.get("event") == "job.claimed" and e.get("decision") == "take_over"
    ]
    figures(
        files=plan.files,
        workers=plan.workers,
        kills=len(chaos.kills),
        kill_times_s=[k.at_s for k in chaos.kills],
        kills_holding_a_claim=sum(1 for k in chaos.kills if k.file_id),
        takeovers=len(takeovers),
        stale_uploads_aborted=sum(
            e.get("count", 0) for e in events if e.get("event") == "upload.stale_aborted"
        ),
        max_claims_of_a_file=max(j.attempts for j in facts.jobs.values()) - 1,  # - the setup
        seconds=clock.seconds,
        status=result["status"],
    )
    assert result["status"] == "completed"
    assert facts.by_status(JobStatus.COMPLETED) == set(expected)
    assert len(chaos.kills) == plan.kills
    assert takeovers, "no kill left a claim for another worker to take over"


def test_workers_killed_mid_file_are_replaced_and_the_day_completes(
    make_rig: Any, stub_factory: StubFactory, figures: Any
) -> None:
    """12 files, 3 processes, 4 SIGKILLs of claim holders: every file completed, verified, once."""
    run_crash_plan(make_rig, stub_factory, SHORT, figures, polls=180)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_many_kills_over_a_larger_day_lose_nothing(
    make_rig: Any, stub_factory: StubFactory, figures: Any
) -> None:
    """80 files, 4 processes, 20 SIGKILLs at random moments: the invariant holds, all completed."""
    run_crash_plan(make_rig, stub_factory, SOAK, figures, polls=1200)

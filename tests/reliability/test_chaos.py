"""Scenario 11: chaos with default settings. `dlpipe worker` processes are SIGKILLed at named
points (after receiving a message before claiming it, holding a claim, after publishing before
completing), one is frozen (SIGSTOP) across a takeover and thawed, one runs with its clock two
leases ahead (DLPIPE_TEST_CLOCK_OFFSET_SECONDS: it sees every live claim as expired and takes
it over; the owner's fenced writes then fail), and the poller's invocation
dies inside fetch-and-queue; every day still completes with no operator action, within the
documented recovery bound.

Only the time constants are scaled down, all by the same factor from production (60 in the
short run, 30 in the soak): lease 5 s (300 s), visibility margin 1 s (lease/10 rounded up, at
least 1 s; 30 s), poll interval 5 s (300 s), resend bound 30 s (1800 s), the queue's own
visibility timeout 60 s (3600 s); the number of polls is the default 12, so the polling window
is 60 s (3600 s). Soak: 10, 1, 10, 60 and 120 s.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from dlpipe.adapters.published import published_check
from dlpipe.config import ENV_TEST_CLOCK_OFFSET_SECONDS, Settings
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.domain.rules import recovery_bound_seconds
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.local.testpoints import ENV_TEST_PAUSE_AT
from dlpipe.services.download.transfer import TransferTuning
from tests.e2e.test_worker_kit import WorkerProcess, wait_until
from tests.provider_support import StubFactory
from tests.reliability.rig import (
    CrashOnce,
    RecordingQueue,
    Rig,
    Stopwatch,
    events_of,
    stopping_all,
    unique_day,
    unique_entity,
)

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e

DEFAULTS = Settings()


@dataclass(frozen=True)
class Timing:
    """The default time constants divided by `scale` (production seconds per test second)."""

    scale: int

    @property
    def lease_s(self) -> int:
        return DEFAULTS.lease_seconds // self.scale

    @property
    def poll_s(self) -> int:
        return DEFAULTS.poll_interval_seconds // self.scale

    @property
    def resend_s(self) -> int:
        return DEFAULTS.resend_after_seconds // self.scale

    @property
    def queue_visibility_s(self) -> int:
        return 3600 // self.scale  # terraform: 6 x the downloader Lambda's 600 s timeout

    @property
    def bound_s(self) -> int:
        margin_s = TransferTuning().margin_s(self.lease_s)
        return recovery_bound_seconds(self.lease_s, margin_s, self.poll_s, self.resend_s)


MAX_POLLS = DEFAULTS.max_polls
WINDOWS = ("received", "claimed", "published")
HOLD_S = 600  # a victim waits at its point until it is killed


@dataclass(frozen=True)
class ChaosPlan:
    """Files, live workers, SIGKILLs (spread over the three windows) and the frozen worker."""

    files: int
    workers: int
    kills: int
    timing: Timing
    # The bound is when a file is back in line; behind a backlog longer than it (the soak's
    # 300 files) a re-visible message then waits its turn, so only the short run asserts it.
    within_bound: bool = True
    freeze: bool = True
    skewed: bool = True  # one more worker whose clock runs 2 leases ahead


SHORT = ChaosPlan(files=60, workers=4, kills=12, timing=Timing(scale=60))
SOAK = ChaosPlan(files=300, workers=6, kills=60, timing=Timing(scale=30), within_bound=False)


@dataclass
class Injected:
    """What the chaos driver did, with monotonic times (seconds since the run started)."""

    kills: list[tuple[str, str, float]] = field(default_factory=list)  # window, FileID, at
    frozen: list[tuple[int, str, float, float]] = field(
        default_factory=list
    )  # pid, file, stop, cont
    errors: list[BaseException] = field(default_factory=list)


class ChaosDriver:
    """Watches the announce file: kills each announced victim and starts a replacement."""

    def __init__(self, rig: Rig, stub: StubProvider, plan: ChaosPlan, pool: list[WorkerProcess]):
        self._rig, self._stub, self._plan, self._pool = rig, stub, plan, pool
        self.announce = rig.workdir / "announce.txt"
        self.announce.touch()
        self.injected = Injected()
        self.clock = Stopwatch()
        self._started_victims = 0
        self._frozen_pid: int | None = None
        self.skewed_pid: int | None = None
        self._done = threading.Event()
        self._threads: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._run, name="chaos", daemon=True)

    def start(self) -> None:
        """Start the first workers (all of them victims, one of them the one to freeze)."""
        if self._plan.freeze:
            self._frozen_pid = self._start(pause_at="claimed", hold_s=2.0).pid
        if self._plan.skewed:
            self.skewed_pid = self._start(ahead_s=2 * self._plan.timing.lease_s).pid
        for _ in range(self._plan.workers):
            self._start_next()
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; raise what went wrong in the driver thread."""
        self._done.set()
        for thread in [self._thread, *self._threads]:
            thread.join(timeout=4 * self._plan.timing.bound_s)
        if self.injected.errors:
            raise self.injected.errors[0]

    def _start_next(self) -> WorkerProcess:
        if self._started_victims < self._plan.kills:
            window = WINDOWS[self._started_victims % len(WINDOWS)]
            self._started_victims += 1
            return self._start(pause_at=window, hold_s=HOLD_S)
        return self._start()

    def _start(
        self, *, pause_at: str | None = None, hold_s: float = 0, ahead_s: int = 0
    ) -> WorkerProcess:
        extra = {ENV_TEST_PAUSE_AT: f"{pause_at}:{hold_s}:{self.announce}"} if pause_at else {}
        if ahead_s:
            extra[ENV_TEST_CLOCK_OFFSET_SECONDS] = str(ahead_s)
        process = self._rig.worker_process(
            self._stub, f"worker{len(self._pool)}", lease_seconds=self._plan.timing.lease_s, **extra
        )
        self._pool.append(process)
        return process

    def _run(self) -> None:
        seen = 0
        try:
            while not self._done.wait(0.02):
                lines = self.announce.read_text().splitlines()
                for line in lines[seen:]:
                    self._on_announce(*line.split())
                seen = len(lines)
        except BaseException as exc:  # surfaced by stop() in the test's thread
            self.injected.errors.append(exc)

    def _on_announce(self, window: str, pid_text: str, file_id: str) -> None:
        pid = int(pid_text)
        if pid == self._frozen_pid:
            os.kill(pid, signal.SIGSTOP)  # at once; the thaw waits for a takeover elsewhere
            thaw = threading.Thread(target=self._thaw_after_takeover, args=(pid, file_id))
            self._threads.append(thaw)
            thaw.start()
            return
        os.kill(pid, signal.SIGKILL)
        next(p for p in self._pool if p.pid == pid).wait(10)
        self.injected.kills.append((window, file_id, self.clock.seconds))
        self._start_next()

    def _thaw_after_takeover(self, pid: int, file_id: str) -> None:
        try:
            self._thaw(pid, file_id, stopped_at=self.clock.seconds)
        except BaseException as exc:  # surfaced by stop() in the test's thread
            self.injected.errors.append(exc)

    def _thaw(self, pid: int, file_id: str, stopped_at: float) -> None:
        jobs = self._rig.jobs()
        frozen_owner = jobs.require(file_id).lease_owner

        def taken_over() -> bool:
            job = jobs.require(file_id)
            return job.status is JobStatus.COMPLETED or job.lease_owner != frozen_owner

        wait_until(
            taken_over,
            4 * self._plan.timing.bound_s,
            f"a takeover of {file_id} from the frozen worker",
        )
        os.kill(pid, signal.SIGCONT)
        self.injected.frozen.append((pid, file_id, stopped_at, self.clock.seconds))


def tiny_specs(entity: str, n: int) -> list[StubFileSpec]:
    """n tiny files (64 B-4 KiB), CBC and GCM alternating."""
    return [
        StubFileSpec(f"{entity}{i}", 64 + (i * 997) % 4096, CIPHER_GCM if i % 2 else CIPHER_CBC)
        for i in range(n)
    ]


def run_chaos(make_rig: Any, stub_factory: StubFactory, plan: ChaosPlan, figures: Any) -> None:
    """Run one day under `plan`; check the invariant, the injections and the recovery bound."""
    timing = plan.timing
    rig = make_rig(visibility_s=timing.queue_visibility_s, max_receive=5)
    day, stub = unique_day(), stub_factory(tiny_specs(unique_entity(), plan.files))
    expected = stub.expected(day)
    queue = RecordingQueue(rig.clients.sqs, rig.queues.url)
    # As build_flow wires it: the sweeper HEADs destination keys in the destination bucket.
    flow = dataclasses.replace(
        rig.flow(stub, queue=queue),
        resend_after_seconds=timing.resend_s,
        published=published_check(rig.clients.s3, rig.bucket),
    )
    poller_crash = CrashOnce(queue, "_send_chunk", at_call=3)  # 2 of 6 sends landed
    pool: list[WorkerProcess] = []
    driver = ChaosDriver(rig, stub, plan, pool)
    clock = Stopwatch()
    with capture_logs() as poller_logs, ThreadPoolExecutor(1) as poller, stopping_all(pool):
        driver.start()
        running = poller.submit(rig.run_day, flow, day, polls=MAX_POLLS, interval_s=timing.poll_s)
        try:
            result = running.result(timeout=MAX_POLLS * timing.poll_s + 120)
        finally:
            driver.stop()
        day_s = clock.seconds
    facts = rig.check_day(
        day,
        result["batch_id"],
        expected,
    )
    events = events_of(pool)
    recovery_s = _recovery_seconds(driver, facts.jobs, events)
    figures(
        files=plan.files,
        kills=len(driver.injected.kills),
        kills_by_window={w: sum(1 for k in driver.injected.kills if k[0] == w) for w in WINDOWS},
        frozen=[(f, round(c - s, 1)) for _, f, s, c in driver.injected.frozen],
        poller_crashed=poller_crash.crashed,
        takeovers=sum(
            1
            for e in events
            if e.get("event") == "job.claimed" and e.get("decision") == "take_over"
        ),
        sweeps=[
            {k: e[k] for k in ("stuck", "idle", "completed", "requeued")}
            for e in poller_logs
            if e.get("event") == "batch.swept"
        ],
        skewed_takeovers=sum(
            1
            for e in events_of([p for p in pool if p.pid == driver.skewed_pid])
            if e.get("event") == "job.claimed" and e.get("decision") == "take_over"
        ),
        max_recovery_s=max(recovery_s, default=0.0),
        bound_s=timing.bound_s,
        scale=timing.scale,
        day_s=day_s,
        status=result["status"],
    )
    assert result["status"] == "completed", (result, driver.injected.kills)
    assert facts.by_status(JobStatus.COMPLETED) == set(expected)
    assert len(driver.injected.kills) == plan.kills
    assert {k[0] for k in driver.injected.kills} == set(WINDOWS)
    assert poller_crash.crashed
    if plan.within_bound:
        assert max(recovery_s, default=0.0) <= timing.bound_s
    if plan.freeze:
        assert driver.injected.frozen, "the frozen worker never reached its point"
        frozen_pid = driver.injected.frozen[0][0]
        thawed = next(p for p in pool if p.pid == frozen_pid)
        assert "job.lease_lost" in thawed.event_names()


def _recovery_seconds(
    driver: ChaosDriver, jobs: dict[str, Any], events: list[dict[str, Any]]
) -> list[float]:
    """Per killed file: seconds from its (last) kill until another worker claimed it again, or
    until it was completed (the sweeper completes without a claim)."""
    run_started_wall = time.time() - driver.clock.seconds
    last_kill = {f: run_started_wall + at_s for _, f, at_s in driver.injected.kills}
    claims: dict[str, list[float]] = {}
    for event in events:
        if event.get("event") == "job.claimed" and event.get("file_id") in last_kill:
            at = datetime.fromisoformat(event["timestamp"]).timestamp()
            claims.setdefault(event["file_id"], []).append(at)
    out = []
    for file_id, killed_at in last_kill.items():
        later = [at for at in claims.get(file_id, []) if at > killed_at]
        back_at = min(later, default=jobs[file_id].status_updated_at_ms / 1000)
        out.append(max(0.0, round(back_at - killed_at, 1)))  # 0: done before this kill
    return out


def test_workers_killed_in_every_window_and_a_frozen_worker_need_no_operator(
    make_rig: Any, stub_factory: StubFactory, figures: Any, tmp_path: Path
) -> None:
    """60 tiny files, 12 SIGKILLs over three windows, a frozen and a clock-skewed worker, a poller crash: completed."""
    run_chaos(make_rig, stub_factory, SHORT, figures)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_chaos_over_a_larger_day_needs_no_operator(
    make_rig: Any, stub_factory: StubFactory, figures: Any
) -> None:
    """300 tiny files, 60 SIGKILLs over three windows, a frozen worker: completed within bound."""
    run_chaos(make_rig, stub_factory, SOAK, figures)

"""The worker's pause while its own dependency (SQS, DynamoDB, or Secrets Manager with a
feed's key or token) is down.

Polling threads ask `wait_turn` before each receive. While the dependency is down only one
thread at a time receives (the probe), and only once the pause is over: 1 s doubling to 30 s
per probe (failures of receives already open when the pause began do not lengthen it)
(dlpipe.domain.outage.worker_retry_s), so a long outage costs a receive every 30 s per worker,
not one per thread per second. The first call that succeeds ends the outage. One
`worker.dependency_down` line when an outage starts and one `worker.dependency_up` when it
ends, with how long it lasted and how many calls failed: never a line per attempt.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from dlpipe.domain.outage import worker_retry_s
from dlpipe.log import get_logger

log = get_logger()
_PROBE_WAIT_S = 0.2  # how often a thread held back looks again while another one probes


class DependencyGate:
    """Whether a polling thread may receive now; thread-safe."""

    def __init__(self, stop: threading.Event, clock: Callable[[], float] = time.monotonic) -> None:
        self._stop, self._clock = stop, clock
        self._lock = threading.Lock()
        self._down: str | None = None  # the dependency found unavailable, while it is
        self._down_since = 0.0
        self._failures = 0  # calls that failed in this outage (for the log)
        self._probes = 0  # of those, the ones made after a pause: the backoff grows with them
        self._resume_at = 0.0
        self._probing = False

    @property
    def down(self) -> str | None:
        """The dependency that is down, or None."""
        with self._lock:
            return self._down

    def try_turn(self) -> float:
        """0 when the caller may receive now (as the probe, while down); else seconds to wait."""
        with self._lock:
            if self._down is None:
                return 0.0
            if self._probing:
                return _PROBE_WAIT_S
            left_s = self._resume_at - self._clock()
            if left_s > 0:
                return left_s
            self._probing = True
            return 0.0

    def wait_turn(self) -> bool:
        """Block until the caller may receive; False when the stop came first."""
        while (wait_s := self.try_turn()) > 0:
            if self._stop.wait(min(wait_s, 1.0)):
                return False
        return not self._stop.is_set()

    def probe_done(self) -> None:
        """The caller's receive and its files are over, however they ended: another may probe."""
        with self._lock:
            self._probing = False

    def failed(self, dependency: str, error_type: str) -> float:
        """A call found `dependency` unavailable; returns the pause before the next probe."""
        with self._lock:
            now = self._clock()
            self._failures += 1
            self._probing = False
            if self._down is not None and now < self._resume_at:
                # A receive opened before the pause: the pause grows per probe, not per such
                # failure, so it stays near the outage's length so far.
                return self._resume_at - now
            self._probes += 1
            pause_s = float(worker_retry_s(self._probes))
            self._resume_at = now + pause_s
            if self._down is None:
                self._down, self._down_since = dependency, now
                log.warning(
                    "worker.dependency_down",
                    dependency=dependency,
                    error_type=error_type,
                    pause_s=pause_s,
                )
            return pause_s

    def succeeded(self, dependency: str | None = None) -> None:
        """A call went through: `dependency` (None: every one) is up again."""
        with self._lock:
            self._probing = False
            if self._down is None or dependency not in (None, self._down):
                return
            log.info(
                "worker.dependency_up",
                dependency=self._down,
                down_s=round(self._clock() - self._down_since, 1),
                failed_calls=self._failures,
            )
            self._down, self._failures, self._probes = None, 0, 0

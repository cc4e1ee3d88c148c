"""Keeping a claim alive while a file is worked on, and noticing when to stop.

The heartbeat extends the job's lease and its message's visibility every lease/3. When the
lease is lost (another worker took the file over) or a shutdown is requested, `checkpoint`
raises, so the transfer stops between two chunks and publishes nothing. A lease extension
DynamoDB throttles (or cannot take) is tried again while the lease we last extended still
has more than lease/3 to run: a transfer that holds its lease is never thrown away for it.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from types import TracebackType

from dlpipe.domain.errors import LeaseLostError, StoreUnavailableError
from dlpipe.domain.model import JobStatus
from dlpipe.domain.outage import worker_retry_s
from dlpipe.log import get_logger
from dlpipe.services.download.ports import JobLeases

log = get_logger()


class Cancelled(Exception):
    """The transfer must stop now; nothing may be published."""


class ShutdownRequested(Cancelled):
    """The process is shutting down: give the claim back."""


class LeaseLost(Cancelled):
    """Another worker owns the claim now: leave the job alone."""


class Heartbeat:
    """A thread that extends the lease (and calls `on_beat(visibility_s)`) until closed."""

    def __init__(
        self,
        jobs: JobLeases,
        file_id: str,
        owner: str,
        lease_seconds: int,
        *,
        on_beat: Callable[[int], None] | None,
        visibility_s: int,
        stop: threading.Event,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        self._jobs, self._file_id, self._owner = jobs, file_id, owner
        self._lease_seconds, self._visibility_s = lease_seconds, visibility_s
        self._on_beat, self._stop = on_beat, stop
        self._clock, self._sleep = clock, sleep or stop.wait
        # Made just after the claim: the lease runs to about now + lease_seconds.
        self._held_until = clock() + lease_seconds
        self.lost = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def checkpoint(self) -> None:
        """Raise ShutdownRequested or LeaseLost when the transfer must stop."""
        if self.lost.is_set():
            raise LeaseLost(f"the lease of {self._file_id} was taken over")
        if self._stop.is_set():
            raise ShutdownRequested("shutdown requested")

    def fence(self) -> None:
        """The check before a publish: is the claim still ours? A lease extended less than
        lease/3 ago is read, not written (a strongly consistent read of the job: 1 RCU, no
        WCU); an older one is extended (`renew`).

        A read shows a takeover that has happened (another owner, another status) as surely
        as a conditional write does; what neither can show is one that happens after it, so
        the fence is an early exit and no more (the publish is create-only and the completion
        conditional on the claim). A lease this recent has at least 2/3 of its time to run
        for the publish, as a renewed one has all of it. So a file done within a third of its
        lease writes its job item three times (claim, complete and the put before them), not
        four. A throttled read falls back on `renew`, which waits throttling out.
        """
        self.checkpoint()
        if self._clock() >= self._held_until - 2 * self._lease_seconds / 3:
            self.renew()
            return
        try:
            job = self._jobs.get(self._file_id, consistent=True)
        except StoreUnavailableError as exc:
            log.warning("lease.fence_read_failed", error=str(exc))
            self.renew()
            return
        if job is None or job.status is not JobStatus.DOWNLOADING or job.lease_owner != self._owner:
            self.lost.set()
            holder = "nobody" if job is None else f"{job.lease_owner or 'nobody'} ({job.status})"
            raise LeaseLost(f"the claim of {self._file_id} is held by {holder} now")

    def renew(self) -> None:
        """Extend the lease now; LeaseLost if someone else owns the claim. DynamoDB
        unavailable (throttling) is waited out, 1 s doubling, while the lease keeps more than
        lease/3 to run; past that, StoreUnavailableError."""
        failures = 0
        while True:
            sent = self._clock()
            try:
                self._jobs.extend_lease(self._file_id, self._owner, self._lease_seconds)
            except LeaseLostError as exc:
                self.lost.set()
                raise LeaseLost(str(exc)) from exc
            except StoreUnavailableError as exc:
                failures += 1
                delay_s = worker_retry_s(failures)
                margin_s = self._lease_seconds / 3
                if self._stop.is_set() or sent + delay_s > self._held_until - margin_s:
                    raise
                log.warning("lease.extend_retried", error=str(exc), retry_after_s=delay_s)
                self._sleep(delay_s)
                continue
            self._held_until = sent + self._lease_seconds
            break
        self._notify()

    def _beat(self) -> None:
        try:
            self.renew()
        except LeaseLost:
            log.warning("job.lease_lost", during="heartbeat")
            self._closed.set()
        except StoreUnavailableError as exc:
            # Keep beating: the lease has lease_seconds of slack, and complete() re-checks it.
            log.warning("heartbeat.failed", error=str(exc))
        except Exception:
            # Anything else must not end the heartbeat silently; the next beat tries again.
            log.exception("heartbeat.failed")

    def _notify(self) -> None:
        if self._on_beat is None:
            return
        try:
            self._on_beat(self._visibility_s)
        except Exception as exc:  # noqa: BLE001 - a failed visibility change must not stop the lease heartbeat
            log.warning("message.visibility_failed", error_type=type(exc).__name__)

    def _run(self) -> None:
        while not self._closed.wait(self._lease_seconds / 3):
            self._beat()

    def __enter__(self) -> Heartbeat:
        # The message's visibility is the queue default until now; bring it to lease + margin.
        self._notify()
        # Copy the context so the thread's log lines carry the job's bound FileID/BatchID.
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._run,), name=f"heartbeat-{self._file_id}", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closed.set()
        if self._thread is not None:
            self._thread.join()

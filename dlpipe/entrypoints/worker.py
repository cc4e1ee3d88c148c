"""The long-poll worker (ECS, EventBridge Pipes targets): N threads receiving from SQS.

On stop (SIGTERM/SIGINT) no new receive starts. A long poll already open can still return
a message: it is processed like any other, not handed back, because a hand-back is one more
receive and workers stopping together (a deploy, a scale-in) would pass it from one open poll
to the next until SQS dead-letters it. Each file gets `grace_s` from the stop, or from its
receive if that came later, to finish; then its claim is released and its message made
visible again (one receive, no more). A stop therefore takes at most `wait_seconds` +
`grace_s` (+ the release), 40 s with the defaults.

A message is received hidden for a short window (dlpipe.entrypoints.receive_window), renewed
until its job's claim sets it to lease + margin: a worker killed or frozen before that gives
its messages back within the window.

While SQS or DynamoDB is unavailable (a failed receive, or a file whose job could not be
read, claimed or settled: Outcome.UNAVAILABLE) the worker pauses receiving, one probe at a
time after a pause growing to 30 s (entrypoints/dependency_gate.py), and logs the outage
once when it starts (`worker.dependency_down`) and once when it ends (`worker.dependency_up`).
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from dataclasses import dataclass

from structlog.contextvars import bound_contextvars

from dlpipe.adapters.download_queue import DownloadQueue, Received
from dlpipe.domain.download_errors import QueueUnavailableError
from dlpipe.domain.routing import TimeBudget
from dlpipe.entrypoints.dependency_gate import DependencyGate
from dlpipe.entrypoints.dispatch import dispatch
from dlpipe.entrypoints.lanes import LaneInbox
from dlpipe.entrypoints.receive_window import ClaimVisibility, UnclaimedMessages, receive_window_s
from dlpipe.log import get_logger
from dlpipe.services.download.service import DownloadService, Outcome, ProcessResult

log = get_logger()
_RELEASE_TIMEOUT_S = 30.0  # after the grace period: time to abort uploads and release claims
_RECEIVE_BACKOFF_S = 2.0
_SQS = "SQS"
_RECEIVE_SLACK_S = 5.0  # a long poll's answer may come this much after its wait time


@dataclass(frozen=True)
class WorkerOptions:
    """How many threads, how they poll, when the worker stops by itself."""

    concurrency: int = 1
    wait_seconds: int = 20
    max_messages: int = 1
    exit_when_idle_s: float | None = None  # stop once the queue has been empty this long
    grace_s: float = 20.0
    time_budget_s: float | None = None  # per file; None: unlimited (files are never refused)


class _OneQueue:
    """One queue as the Worker's inbox: every thread long-polls it directly."""

    def __init__(self, queue: DownloadQueue) -> None:
        self._queue = queue
        self.receive, self.delete = queue.receive, queue.delete
        self.visibility = queue.visibility

    def settled(self, message: Received) -> None:
        """Nothing to count: the queue's threads are all the same."""

    def has_pending(self) -> bool:
        """Only the threads' own long polls are open: the drain waits for those."""
        return False

    def close(self) -> None:
        """Nothing of its own to stop."""

    def release_waiting(self) -> None:
        """Nothing waits outside a thread."""


class Worker:
    """Receives messages on `concurrency` threads and processes them until stopped: from one
    queue, or from several feeds' queues through a LaneInbox (dlpipe.entrypoints.lanes)."""

    def __init__(
        self,
        service: DownloadService,
        queue: DownloadQueue | LaneInbox,
        options: WorkerOptions,
        label: str = "downloads",
    ) -> None:
        # `label` names the queue in the worker's logs: a pool's workers (the download queue's,
        # the large-file queue's) each log worker.started, worker.stopping, worker.stopped and
        # worker.grace_expired, and two bare lines read as one event logged twice.
        self._service, self._options, self._label = service, options, label
        self._queue = queue if isinstance(queue, LaneInbox) else _OneQueue(queue)
        budget_s = options.time_budget_s
        self._budget = None if budget_s is None else TimeBudget(budget_s, lambda: budget_s)
        self._stopping = threading.Event()
        self._stop_reason = ""
        self._lock = threading.Lock()
        self._busy = 0  # files in progress
        self._polling = 0  # threads between the start of a receive and the end of its files
        self._receiving = 0  # of those, the ones still waiting on ReceiveMessage
        self._grace_end = 0.0  # monotonic; set at the stop, pushed back by later receives
        self._releasing = False  # the grace has run out: nothing more is started
        self._last_message_at = time.monotonic()
        self._window_s = receive_window_s(service)
        self._unclaimed = UnclaimedMessages(self._window_s)
        self._gate = DependencyGate(self._stopping)

    def request_stop(self, reason: str = "signal") -> None:
        """Start no new receive; files in progress, and what open long polls still return,
        finish within the grace period or are released."""
        # Safe in a signal handler: no logging here, `run` reports the reason.
        if not self._stopping.is_set():
            self._stop_reason = reason
            self._stopping.set()

    def run(self) -> int:
        """Run until stopped; returns the process exit code (0)."""
        self._unclaimed.start()
        threads = [self._start_thread(n) for n in range(self._options.concurrency)]
        log.info("worker.started", queue=self._label, concurrency=self._options.concurrency)
        while not self._stopping.wait(0.2):
            if self._idle_too_long():
                self.request_stop("idle")
        log.info("worker.stopping", queue=self._label, reason=self._stop_reason)
        self._queue.close()
        receives_end = time.monotonic() + self._options.wait_seconds + _RECEIVE_SLACK_S
        self._extend_grace()
        self._drain(receives_end)
        for thread in threads:
            thread.join(timeout=max(0.0, receives_end - time.monotonic()))
        self._queue.release_waiting()
        self._unclaimed.close()
        log.info("worker.stopped", queue=self._label)
        return 0

    def _start_thread(self, number: int) -> threading.Thread:
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run, args=(self._poll_loop,), name=f"poller-{number}", daemon=True
        )
        thread.start()
        return thread

    def _idle_too_long(self) -> bool:
        idle_s = self._options.exit_when_idle_s
        with self._lock:
            quiet_s = time.monotonic() - self._last_message_at
            return idle_s is not None and self._busy == 0 and quiet_s >= idle_s

    def _extend_grace(self) -> None:
        with self._lock:
            self._grace_end = max(self._grace_end, time.monotonic() + self._options.grace_s)

    def _drain(self, receives_end: float) -> None:
        """Wait for open long polls and the files they return; release files past their grace.

        A poll that outlives its wait time (plus slack) is not waited for: the process exits,
        and what it may still receive returns after the visibility timeout.
        """
        release_end: float | None = None
        while True:
            with self._lock:
                polling, processing, grace_end = self._polling, self._busy, self._grace_end
            now = time.monotonic()
            if polling == 0 or (processing == 0 and now >= receives_end):
                return
            if release_end is not None and now >= max(release_end, receives_end):
                return
            if processing and release_end is None and now >= grace_end:
                log.info("worker.grace_expired", queue=self._label, busy=processing)
                self._release()
                release_end = now + _RELEASE_TIMEOUT_S
            time.sleep(0.05)

    def _release(self) -> None:
        with self._lock:
            self._releasing = True
        self._service.deps.stop.set()  # in-progress files release their claims now

    def _poll_loop(self) -> None:
        while self._next_turn() and self._begin_poll():
            try:
                self._poll_once()
            except Exception:
                # A thread that died silently would leave the worker running at less capacity.
                log.exception("worker.poll_failed")
                self._stopping.wait(_RECEIVE_BACKOFF_S)
            finally:
                self._gate.probe_done()
                self._end_poll()

    def _next_turn(self) -> bool:
        """The gate's turn; after the stop, only for what the inbox's open polls still return."""
        return self._gate.wait_turn() or self._queue.has_pending()

    def _begin_poll(self) -> bool:
        # Checked and counted under one lock, so `_drain` never misses a receive just started.
        with self._lock:
            if self._stopping.is_set() and not self._queue.has_pending():
                return False
            self._polling += 1
            self._receiving += 1
            return True

    def _end_poll(self) -> None:
        with self._lock:
            self._polling -= 1

    def _poll_once(self) -> None:
        messages = self._receive()
        # Each is kept hidden for the short receive window until its claim takes it over
        # (dlpipe.entrypoints.receive_window): those waiting behind a long file included.
        guarded = [(m, self._unclaimed.watch(m, self._queue.visibility(m))) for m in messages]
        for message, visibility in guarded:
            try:
                if not self._enter():
                    visibility(0)  # past the grace period: hand it back
                    continue
                try:
                    self._handle(message, visibility)
                finally:
                    self._leave()
            finally:
                self._unclaimed.done(message)
                self._queue.settled(message)

    def _enter(self) -> bool:
        with self._lock:
            if self._releasing:
                return False
            self._busy += 1
            return True

    def _leave(self) -> None:
        with self._lock:
            self._busy -= 1
            self._last_message_at = time.monotonic()

    def _receive(self) -> list[Received]:
        messages: list[Received] = []
        try:
            messages = self._queue.receive(
                max_messages=self._options.max_messages,
                wait_s=self._wait_seconds(),
                # Not the queue's default (6x the Lambda timeout), nor lease + margin: if this
                # process dies before a claim takes the message, it is back within the window.
                visibility_s=self._window_s,
            )
        except QueueUnavailableError as exc:
            # One line per outage (the gate's), not per receive; the gate paces the probes.
            cause = exc.__cause__ or exc
            self._gate.failed(_SQS, type(cause).__name__)
        else:
            self._gate.succeeded(_SQS)
        finally:
            self._received(messages)
        return messages

    def _received(self, messages: list[Received]) -> None:
        with self._lock:
            self._receiving -= 1
            if not messages:
                return
            self._last_message_at = now = time.monotonic()
            if self._stopping.is_set():
                # Received after the stop: it gets a whole grace period from now.
                self._grace_end = max(self._grace_end, now + self._options.grace_s)

    def _wait_seconds(self) -> int:
        """The long-poll wait, cut short when an idle exit is due sooner: otherwise the worker
        would notice it is idle and then sit out a whole 20 s receive before it could exit."""
        idle_s = self._options.exit_when_idle_s
        if idle_s is None:
            return self._options.wait_seconds
        with self._lock:
            left_s = self._last_message_at + idle_s - time.monotonic()
        return min(self._options.wait_seconds, max(1, math.ceil(left_s)))

    def _handle(self, message: Received, visibility: ClaimVisibility) -> None:
        with bound_contextvars(message_id=message.message_id, receive_count=message.receive_count):
            if dispatch(
                self._service,
                message.body,
                visibility,
                self._budget,
                message.receive_count,
                on_result=self._on_result,
            ):
                self._queue.delete(message)

    def _on_result(self, result: ProcessResult) -> None:
        if result.outcome is Outcome.UNAVAILABLE:
            self._gate.failed(result.dependency or "AWS", "unavailable")
        else:
            self._gate.succeeded()

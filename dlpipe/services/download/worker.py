"""The long-poll worker (ECS, EventBridge Pipes targets): N threads receiving from SQS.

On stop (SIGTERM/SIGINT) no new message is taken; files in progress get `grace_s` to
finish, then their claims are released and their messages made visible again.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from structlog.contextvars import bound_contextvars

from dlpipe.domain.routing import TimeBudget
from dlpipe.log import get_logger
from dlpipe.services.download.dispatch import (
    MessageVisibility,
    dispatch,
    hide_messages,
    receive_visibility_s,
)
from dlpipe.services.download.service import DownloadService

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

log = get_logger()
_RELEASE_TIMEOUT_S = 30.0  # after the grace period: time to abort uploads and release claims
_RECEIVE_BACKOFF_S = 2.0


@dataclass(frozen=True)
class WorkerOptions:
    """How many threads, how they poll, when the worker stops by itself."""

    concurrency: int = 1
    wait_seconds: int = 20
    max_messages: int = 1
    exit_when_idle_s: float | None = None  # stop once the queue has been empty this long
    grace_s: float = 20.0
    time_budget_s: float | None = None  # per file; None: unlimited (files are never refused)


class Worker:
    """Receives messages on `concurrency` threads and processes them until stopped."""

    def __init__(
        self,
        service: DownloadService,
        sqs: SQSClient,
        queue_url: str,
        options: WorkerOptions,
        copy_to: Callable[[int | None], str] | None = None,
    ) -> None:
        self._service, self._sqs, self._queue_url, self._options = service, sqs, queue_url, options
        self._copy_to = copy_to  # routes a delayed copy of a message (JobQueue.queue_url_for)
        budget_s = options.time_budget_s
        self._budget = None if budget_s is None else TimeBudget(budget_s, lambda: budget_s)
        self._stopping = threading.Event()
        self._stop_reason = ""
        self._lock = threading.Lock()
        self._busy = 0
        self._last_message_at = time.monotonic()
        self._visibility_s = receive_visibility_s(service)

    def request_stop(self, reason: str = "signal") -> None:
        """Stop receiving; in-progress files finish within the grace period or are released."""
        # Safe in a signal handler: no logging here, `run` reports the reason.
        if not self._stopping.is_set():
            self._stop_reason = reason
            self._stopping.set()

    def run(self) -> int:
        """Run until stopped; returns the process exit code (0)."""
        threads = [self._start_thread(n) for n in range(self._options.concurrency)]
        log.info("worker.started", concurrency=self._options.concurrency)
        while not self._stopping.wait(0.2):
            if self._idle_too_long():
                self.request_stop("idle")
        log.info("worker.stopping", reason=self._stop_reason)
        # A receiver in a long poll hands back what it gets once the poll ends; waiting for
        # that keeps such a message from staying hidden for the queue's visibility timeout.
        deadline = time.monotonic() + self._options.wait_seconds + 2
        self._drain()
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        log.info("worker.stopped")
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

    def _drain(self) -> None:
        deadline = time.monotonic() + self._options.grace_s
        while self._busy_count() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._busy_count():
            log.info("worker.grace_expired", busy=self._busy_count())
            self._service.deps.stop.set()  # in-progress files release their claims now
            deadline = time.monotonic() + _RELEASE_TIMEOUT_S
            while self._busy_count() and time.monotonic() < deadline:
                time.sleep(0.05)

    def _busy_count(self) -> int:
        with self._lock:
            return self._busy

    def _poll_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self._poll_once()
            except Exception:
                # A thread that died silently would leave the worker running at less capacity.
                log.exception("worker.poll_failed")
                self._stopping.wait(_RECEIVE_BACKOFF_S)

    def _poll_once(self) -> None:
        messages = self._receive()
        for index, message in enumerate(messages):
            if index:
                # Those still waiting behind a long file would otherwise come back to others.
                handles = [m["ReceiptHandle"] for m in messages[index:]]
                hide_messages(self._sqs, self._queue_url, handles, self._visibility_s)
            if not self._enter():
                self._visibility(message)(0)  # taken too late: hand it straight back
                continue
            try:
                self._handle(message)
            finally:
                self._leave()

    def _enter(self) -> bool:
        # Checked and counted under one lock, so `_drain` never misses a file just started.
        with self._lock:
            if self._stopping.is_set():
                return False
            self._busy += 1
            return True

    def _leave(self) -> None:
        with self._lock:
            self._busy -= 1
            self._last_message_at = time.monotonic()

    def _receive(self) -> list[Any]:
        try:
            response = self._sqs.receive_message(
                QueueUrl=self._queue_url,
                MaxNumberOfMessages=self._options.max_messages,
                WaitTimeSeconds=self._wait_seconds(),
                # Not the queue's default (6x the Lambda timeout): if this process dies before
                # the heartbeat takes over, the message is back after lease + margin.
                VisibilityTimeout=self._visibility_s,
            )
        except (ClientError, BotoCoreError) as exc:
            log.warning("worker.receive_failed", error_type=type(exc).__name__)
            self._stopping.wait(_RECEIVE_BACKOFF_S)
            return []
        messages = list(response.get("Messages", []))
        if messages:
            with self._lock:
                self._last_message_at = time.monotonic()
        return messages

    def _wait_seconds(self) -> int:
        """The long-poll wait, cut short when an idle exit is due sooner: otherwise the worker
        would notice it is idle and then sit out a whole 20 s receive before it could exit."""
        idle_s = self._options.exit_when_idle_s
        if idle_s is None:
            return self._options.wait_seconds
        with self._lock:
            left_s = self._last_message_at + idle_s - time.monotonic()
        return min(self._options.wait_seconds, max(1, math.ceil(left_s)))

    def _handle(self, message: Any) -> None:
        with bound_contextvars(message_id=message["MessageId"]):
            visibility, body = self._visibility(message), message.get("Body", "")
            if dispatch(self._service, body, visibility, self._budget):
                self._delete(message)

    def _visibility(self, message: Any) -> MessageVisibility:
        receipt = message["ReceiptHandle"]
        return MessageVisibility(self._sqs, self._queue_url, receipt, self._copy_to)

    def _delete(self, message: Any) -> None:
        try:
            self._sqs.delete_message(
                QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"]
            )
        except (ClientError, BotoCoreError) as exc:
            # The message comes back; the job is terminal by then, so it is acknowledged again.
            log.warning("message.delete_failed", error_type=type(exc).__name__)

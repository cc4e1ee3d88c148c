"""One received message through the service, shared by the Lambda handler and the worker.

A copy that meets another worker's live claim (BUSY) is replaced by a fresh copy delayed
until that claim ends, so duplicates never climb towards maxReceiveCount.
A malformed body can never succeed, so it is acknowledged and logged (`message.rejected`,
with a short preview) rather than redelivered until the DLQ: retries would only burn
receives, and the log keeps the evidence. An exception, on the other hand, is never
acknowledged: SQS redelivers the message and, after maxReceiveCount, dead-letters it.
A message of a feed not known yet is hidden for the service's backoff and not acknowledged:
its next delivery (here or at another downloader) tries again, and the service ends the job
on the last delivery it allows, before the redrive policy would dead-letter it.
A message whose job DynamoDB could not read, claim or settle (UNAVAILABLE: an outage past
the client's retries) is replaced, like BUSY, by a fresh copy delayed by the service's short
backoff: it returns soon after the outage (never a lease + margin later), and the receives
spent waiting the outage out never walk it towards the DLQ. No traceback: an outage is expected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from dlpipe.domain.messages import MalformedMessageError, decode_message
from dlpipe.domain.redaction import redact
from dlpipe.domain.routing import TimeBudget
from dlpipe.log import get_logger
from dlpipe.services.download.service import DownloadService, Outcome, ProcessResult

log = get_logger()
_PREVIEW_CHARS = 200
_MAX_VISIBILITY_S = 43_200  # SQS's limit


class Visibility(Protocol):
    """One received message's visibility (adapters/download_queue.py's MessageVisibility, or
    the worker's ClaimVisibility over it)."""

    def __call__(self, seconds: int) -> None:
        """Hide the message for `seconds` from now (0: visible again at once)."""
        ...

    def send_copy_later(self, body: str, delay_s: int, size_bytes: int | None = None) -> bool:
        """Queue a fresh copy of the message's body, visible after `delay_s`."""
        ...


def receive_visibility_s(service: DownloadService) -> int:
    """Lease + margin: how long the Lambda hides its records before their heartbeat starts,
    and what a claim's heartbeat keeps a message hidden for (a long-poll worker's unclaimed
    message is hidden for its short receive window: receive_window.py).

    Never the queue's default (6x the Lambda timeout): a record of an invocation that then
    dies comes back after this, not after an hour.
    """
    lease_s = service.deps.lease_seconds
    return min(lease_s + service.deps.tuning.margin_s(lease_s), _MAX_VISIBILITY_S)


def dispatch(
    service: DownloadService,
    body: str,
    visibility: Visibility,
    budget: TimeBudget | None = None,
    receive_count: int | None = None,
    *,
    on_result: Callable[[ProcessResult], None] | None = None,
) -> bool:
    """Process one message body (delivered `receive_count` times: SQS's
    ApproximateReceiveCount); True when the message is done with and may be deleted.
    `on_result` sees the service's result (the worker pauses receiving on UNAVAILABLE)."""
    try:
        message = decode_message(body)
    except MalformedMessageError as exc:
        # Masked before the cut: a cut may leave less of a token than redaction recognises.
        preview = redact(body)[:_PREVIEW_CHARS]
        log.warning("message.rejected", reason=str(exc), body_preview=preview)
        return True
    try:
        result = service.process(
            message.file_id, on_heartbeat=visibility, budget=budget, receive_count=receive_count
        )
    except Exception as exc:  # any failure must become a redelivery, never an ack
        log.exception("message.failed", error_type=type(exc).__name__, error=str(exc))
        return False
    if on_result is not None:
        on_result(result)
    deferred = (Outcome.BUSY, Outcome.UNAVAILABLE)
    if result.outcome in deferred and result.retry_after_s is not None:
        # Every return of the same message is a new receive, so a duplicate of a long but
        # healthy download would reach the DLQ. A fresh copy, delayed until the claim ends,
        # comes back just the same with its receive count at zero; the old one is deleted.
        if visibility.send_copy_later(body, result.retry_after_s, result.size_bytes):
            log.info("message.deferred", delay_s=result.retry_after_s)
            return True
        visibility(result.retry_after_s)  # fallback: back when the claim ends or the backoff
    elif result.outcome in (Outcome.RELEASED, Outcome.NO_TIME):
        visibility(0)  # another worker (or a fresh invocation) may take it at once
    elif result.outcome is Outcome.FEED_UNKNOWN and result.retry_after_s is not None:
        visibility(result.retry_after_s)  # the same message, its receive count kept: bounded
    elif result.outcome is Outcome.SLOW and result.retry_after_s is not None:
        visibility(result.retry_after_s)  # bounded by the slow attempts (domain/stall.py)
    return result.acknowledge

"""A message received from a queue without being consumed (the DLQ's inspect and redrive)."""

from __future__ import annotations

from dataclasses import dataclass

from dlpipe.domain.messages import JobMessage


@dataclass(frozen=True)
class QueuedMessage:
    """One received message: its SQS facts and, if it is one, the job it names."""

    message_id: str
    receipt_handle: str
    receive_count: int
    sent_at_ms: int
    job: JobMessage | None
    problem: str | None  # why the body is not a job message

"""The records layer's errors: one base, subclasses that carry what the store held."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class RecordsError(Exception):
    """Base of every error raised by the records layer."""


class InvalidIdentifierError(RecordsError, ValueError):
    """A FileID, BatchID, entity or date is malformed; nothing was read or written."""


class NotFoundError(RecordsError):
    """The item does not exist (or has passed its TTL)."""


class CorruptRecordError(RecordsError):
    """A stored item is not a valid record (missing or mistyped attributes)."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


# What a read that skips an unreadable item calls with its error (to count or log it).
UnreadableHandler = Callable[[CorruptRecordError], None]


class DependencyUnavailableError(RecordsError):
    """Transient: one of our own AWS dependencies (DynamoDB, SQS, SSM, S3, EventBridge) kept
    throttling, failing with 5xx, timing out or refusing connections after the client's
    retries. Raised at the adapter edge from botocore's errors (dlpipe/adapters/aws_errors.py);
    the orchestrator waits it out within a budget (dlpipe/domain/outage.py). `dependency`
    names the service."""

    dependency = "AWS"

    def __init__(self, message: str, *, dependency: str | None = None) -> None:
        super().__init__(message)
        if dependency is not None:
            self.dependency = dependency


class StoreUnavailableError(DependencyUnavailableError):
    """DynamoDB could not be reached or kept throttling after retries: transient."""

    dependency = "DynamoDB"


class IndexNotReadyError(StoreUnavailableError):
    """A table's index is missing or still being built (an upgrade replaced it, and DynamoDB
    backfills it from the table): transient, like an outage; `dlpipe tables migrate` then
    indexes the jobs written before the upgrade."""


class TableMissingError(RecordsError):
    """A tracking table does not exist at this endpoint: provisioning has not run."""


class ConditionFailedError(RecordsError):
    """A conditional write lost; `condition` names the rule and `current` is what the item held."""

    def __init__(self, message: str, *, condition: str, current: Any = None) -> None:
        super().__init__(message)
        self.condition = condition
        self.current = current


class JobExistsError(ConditionFailedError):
    """A job with this FileID exists already (idempotent create lost)."""


class ClaimRefusedError(ConditionFailedError):
    """The job is not claimable: terminal, or held by a live lease."""


class LeaseLostError(ConditionFailedError):
    """The caller no longer owns the claim: another worker took over, or it finished."""


class RequeueRefusedError(ConditionFailedError):
    """The job may not go back to available (live claim, completed, or changed meanwhile)."""


class ListedTwiceError(ConditionFailedError):
    """Another entry of the same listing named this job already (a duplicate entity)."""


class BatchExistsError(ConditionFailedError):
    """A batch with this BatchID exists already."""


class BatchTransitionRefusedError(ConditionFailedError):
    """The batch was not in a status from which this change is legal."""


class AwsRequestError(RecordsError):
    """AWS refused a call for a reason that is neither a lost condition nor an outage (access
    denied, a queue or table that does not exist, a malformed request). The message names the
    service, the operation, what it was called on and AWS's error code, in one line."""

    def __init__(
        self, service: str, operation: str, code: str, detail: str, *, resource: str | None = None
    ) -> None:
        on = f" on {resource!r}" if resource else ""
        super().__init__(f"{service} {operation}{on} refused: {code}: {detail}")
        self.service = service
        self.operation = operation
        self.code = code


class QueueSendError(RuntimeError):
    """Some messages could not be sent after retries; `failed` lists their FileIDs.

    `unavailable` is set when every failure was transient (throttling, 5xx, a timeout, a lost
    connection): SQS is down for now, and sending again later may succeed."""

    def __init__(
        self,
        message: str,
        failed: Sequence[str],
        unavailable: DependencyUnavailableError | None = None,
    ) -> None:
        super().__init__(message)
        self.failed = list(failed)
        self.unavailable = unavailable


class NotReadyError(RuntimeError):
    """A run cannot start: the one-line message says what is missing or does not answer (the
    pre-run checks' probes raise it at the adapter edge for a fault that will not pass)."""

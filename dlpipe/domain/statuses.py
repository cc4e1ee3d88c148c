"""The job and batch status machines as one table each (docs/ARCHITECTURE.md, "Status machines").

Every status is a row: where it may go, whether the run of it has ended, whether it ended well,
whether it is held under a lease (jobs) and the metric a batch ending in it counts. Everything
else that knows about statuses is derived from these rows: the `may_*` guards and the
transitions (dlpipe/domain/transitions.py), the status lists of the ConditionExpressions
(dlpipe/adapters/jobs_table.py, batches_table.py), the final and open sets, the batch metrics
(dlpipe/metrics.py). A new status is a new enum member and a new row here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar


class JobStatus(StrEnum):
    """Status of one file's job; the stored Status strings (never change one)."""

    AVAILABLE = "available"
    DOWNLOADING = "downloading"
    COMPLETED = "completed"
    FAILED = "failed"  # transient faults, retries used up: an operator may requeue
    ERROR = "error"  # permanent: bad data, bad key, bad input


class BatchStatus(StrEnum):
    """Status of one daily batch; the stored Status strings (never change one)."""

    INITIATED = "initiated"
    QUEUED = "queued"
    COMPLETED = "completed"
    TIMEOUT = "timeout"
    FAILED = "failed"


_S = TypeVar("_S", JobStatus, BatchStatus)


@dataclass(frozen=True)
class StatusRow(Generic[_S]):
    """One status of a machine: its way out, and what it says about the job or batch."""

    to: frozenset[_S]  # the statuses a conditional write may move it to (empty: final)
    ended: bool = False  # the run ended (terminal), even if an operator may reopen it
    successful: bool = False  # ended as it should
    leased: bool = False  # held by a worker under a lease that may run out (jobs)
    metric: str | None = None  # the metric counted once when a batch ends in it


_J = JobStatus
JOB_STATUSES: Mapping[JobStatus, StatusRow[JobStatus]] = {
    # -> available: an operator's requeue or a rerun's adoption of a job nobody picked up.
    _J.AVAILABLE: StatusRow(frozenset({_J.DOWNLOADING, _J.AVAILABLE})),
    # -> downloading is a takeover of an expired lease; -> available is a release (clean
    # shutdown) or the requeue of an expired claim.
    _J.DOWNLOADING: StatusRow(
        frozenset({_J.DOWNLOADING, _J.COMPLETED, _J.FAILED, _J.ERROR, _J.AVAILABLE}), leased=True
    ),
    _J.COMPLETED: StatusRow(frozenset(), ended=True, successful=True),
    # An operator may requeue a failed or errored file once the cause is fixed.
    _J.FAILED: StatusRow(frozenset({_J.AVAILABLE}), ended=True),
    _J.ERROR: StatusRow(frozenset({_J.AVAILABLE}), ended=True),
}

_B = BatchStatus
BATCH_STATUSES: Mapping[BatchStatus, StatusRow[BatchStatus]] = {
    # -> failed: the provider stayed down before the listing was queued.
    _B.INITIATED: StatusRow(frozenset({_B.QUEUED, _B.FAILED})),
    _B.QUEUED: StatusRow(frozenset({_B.COMPLETED, _B.FAILED, _B.TIMEOUT})),
    _B.COMPLETED: StatusRow(frozenset(), ended=True, successful=True, metric="BatchCompleted"),
    _B.FAILED: StatusRow(frozenset(), ended=True, metric="BatchFailed"),
    # A timed-out batch may still finish when its files are repaired and re-checked.
    _B.TIMEOUT: StatusRow(frozenset({_B.COMPLETED, _B.FAILED}), ended=True, metric="BatchTimedOut"),
}

# ---- derived from the rows ------------------------------------------------------------------

TERMINAL_JOB_STATUSES = frozenset(s for s, row in JOB_STATUSES.items() if row.ended)
LEASED_JOB_STATUSES = frozenset(s for s, row in JOB_STATUSES.items() if row.leased)
TERMINAL_BATCH_STATUSES = frozenset(s for s, row in BATCH_STATUSES.items() if row.ended)
SUCCESSFUL_BATCH_STATUSES = frozenset(s for s, row in BATCH_STATUSES.items() if row.successful)
# Statuses the batch machine may still leave (a timed-out batch with files pending is
# re-checked and may still finish); the others are final.
BATCH_OPEN = frozenset(s for s, row in BATCH_STATUSES.items() if row.to)
# The metric each final batch status counts (dlpipe/metrics.py catalogues them).
FINISHED_BATCH_METRIC: Mapping[BatchStatus, str] = {
    s: row.metric for s, row in BATCH_STATUSES.items() if row.ended and row.metric
}

"""The job and batch status machines as one table each (docs/ARCHITECTURE.md, "Status machines").

Every status is a row: where it may go, whether the run of it has ended, whether it ended well,
whether it is held under a lease (jobs), and for a batch the metric it counts and the hand-off
event it sends when the batch ends in it. Everything else that knows about statuses is derived
from these rows: the groups below (pending, unsuccessful, ended, ...), the `may_*` guards and
the transitions (dlpipe/domain/transitions.py), the status lists of the ConditionExpressions
(dlpipe/adapters/jobs_writes.py, batches_table.py), the batch metrics (dlpipe/metrics.py) and
events (dlpipe/domain/handoff_events.py). A new status is a new enum member and a new row here;
code elsewhere names a group, never lists statuses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    # An unsuccessful end by a fault that may pass (retries used up): a batch counts it
    # `failed` (FailedCount); any other unsuccessful end counts `error` (ErrorCount).
    transient: bool = False
    metric: str | None = None  # the metric counted once when a batch ends in it
    event: str | None = None  # the hand-off event's detail-type when a batch ends in it


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
    _J.FAILED: StatusRow(frozenset({_J.AVAILABLE}), ended=True, transient=True),
    _J.ERROR: StatusRow(frozenset({_J.AVAILABLE}), ended=True),
}

_B = BatchStatus
BATCH_STATUSES: Mapping[BatchStatus, StatusRow[BatchStatus]] = {
    # -> failed: the provider stayed down before the listing was queued.
    _B.INITIATED: StatusRow(frozenset({_B.QUEUED, _B.FAILED})),
    _B.QUEUED: StatusRow(frozenset({_B.COMPLETED, _B.FAILED, _B.TIMEOUT})),
    _B.COMPLETED: StatusRow(
        frozenset(), ended=True, successful=True, metric="BatchCompleted", event="Day Completed"
    ),
    _B.FAILED: StatusRow(frozenset(), ended=True, metric="BatchFailed", event="Day Failed"),
    # A timed-out batch may still finish when its files are repaired and re-checked.
    _B.TIMEOUT: StatusRow(
        frozenset({_B.COMPLETED, _B.FAILED}),
        ended=True,
        metric="BatchTimedOut",
        event="Day Timed Out",
    ),
}

# ---- derived from the rows ------------------------------------------------------------------
# Each group is a tuple in the table's order, so a loop over one (a query per status) reads
# the statuses in the same order in every process; `in` tests membership as with a set.


def _jobs(keep: Callable[[StatusRow[JobStatus]], bool]) -> tuple[JobStatus, ...]:
    return tuple(s for s, row in JOB_STATUSES.items() if keep(row))


def _batches(keep: Callable[[StatusRow[BatchStatus]], bool]) -> tuple[BatchStatus, ...]:
    return tuple(s for s, row in BATCH_STATUSES.items() if keep(row))


# Jobs: ended (completed, failed, error); pending, not ended yet (available, downloading);
# ended but not well (failed, error: an operator may requeue them); held under a lease.
TERMINAL_JOB_STATUSES = _jobs(lambda row: row.ended)
PENDING_JOB_STATUSES = _jobs(lambda row: not row.ended)
UNSUCCESSFUL_JOB_STATUSES = _jobs(lambda row: row.ended and not row.successful)
LEASED_JOB_STATUSES = _jobs(lambda row: row.leased)
# The two counts a batch keeps of its unsuccessful files: `failed` (transient, an operator
# requeues them as they are) and `error` (permanent: the cause needs fixing first).
FAILED_JOB_STATUSES = _jobs(lambda row: row.ended and not row.successful and row.transient)
ERROR_JOB_STATUSES = _jobs(lambda row: row.ended and not row.successful and not row.transient)


def count_of(
    counts: Mapping[JobStatus, int] | Mapping[str, int], group: tuple[JobStatus, ...]
) -> int:
    """How many of `counts` (files by status, keyed by JobStatus or its stored string) sit
    in `group`."""
    return sum(count for status, count in counts.items() if status in group)


def _progress(status: JobStatus) -> tuple[bool, bool, bool]:
    row = JOB_STATUSES[status]
    return (not row.ended, not row.successful, not row.leased)


# From the most to the least finished: ended (the successful first), held, waiting; the order
# operators read them in (the day page's progress bar, the stuck listings).
JOB_STATUSES_BY_PROGRESS = tuple(sorted(JOB_STATUSES, key=_progress))

# Batches: ended (completed, failed, timeout); ended well (completed).
TERMINAL_BATCH_STATUSES = _batches(lambda row: row.ended)
SUCCESSFUL_BATCH_STATUSES = _batches(lambda row: row.successful)
# Statuses the batch machine may still leave (a timed-out batch with files pending is
# re-checked and may still finish); the others are final.
BATCH_OPEN = _batches(lambda row: bool(row.to))
# The metric and the hand-off event of each status a batch ends in (dlpipe/metrics.py
# catalogues the metrics, dlpipe/domain/handoff_events.py builds the events).
FINISHED_BATCH_METRIC: Mapping[BatchStatus, str] = {
    s: row.metric for s, row in BATCH_STATUSES.items() if row.ended and row.metric
}
FINISHED_BATCH_EVENT: Mapping[BatchStatus, str] = {
    s: row.event for s, row in BATCH_STATUSES.items() if row.ended and row.event
}

"""Each ConditionExpression's status list is the one the status table gives its transition
(dlpipe/domain/statuses.py): every conditional write of JobsTable / BatchesTable is made
against a client that records the request, and the statuses its condition names on `#status`
(`= :x` or `IN (...)`, read from its ExpressionAttributeValues) are compared with the table's.
A list written out in a table module that drifts from the table fails here."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from dlpipe.adapters import batches_table, jobs_rerun_writes
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.domain.statuses import BATCH_OPEN, LEASED_JOB_STATUSES
from dlpipe.domain.transitions import batch_sources, job_sources
from tests.conditional_writes import conditional_writes_of, methods_called
from tests.support import ManualClock, make_batch, make_job, new_batch_id

_STATUS_REF = re.compile(r"#status\s*(?:=\s*(:\w+)|IN\s*\(([^)]*)\))")
DAY = "2026-02-28"
FILE_ID = f"accounts-{DAY}"
BATCH_ID = new_batch_id(DAY)
OWNER = "w-1"
FACTS: dict[str, Any] = {"byte_count": 1, "sha256": "0" * 64, "destination_key": "k"}


class _Sent(Exception):
    """Raised by the recording client once it holds the request."""


class RecordingClient:
    """A DynamoDB client that records the one conditional write it is sent."""

    def __init__(self) -> None:
        self.request: dict[str, Any] = {}

    def _record(self, **request: Any) -> None:
        self.request = request
        raise _Sent

    put_item = update_item = _record


def condition_statuses(write: Callable[[Any], object], table: type) -> set[str]:
    """The statuses `write`'s ConditionExpression names on #status."""
    client = RecordingClient()
    with pytest.raises(_Sent):
        write(table(client, "t", ManualClock()))
    condition = client.request["ConditionExpression"]
    values = client.request.get("ExpressionAttributeValues", {})
    found = set()
    for single, listed in _STATUS_REF.findall(condition):
        for name in [single] if single else [n.strip() for n in listed.split(",")]:
            found.add(values[name]["S"])
    return found


_Write = Callable[[Any], object]
# Per write: what it does, and the statuses the table says its condition admits.
JOB_WRITES: dict[str, tuple[_Write, frozenset[JobStatus]]] = {
    "create": (lambda t: t.create(make_job("accounts", DAY)), frozenset()),
    "claim": (lambda t: t.claim(FILE_ID, OWNER, 60), job_sources(JobStatus.DOWNLOADING)),
    "extend_lease": (lambda t: t.extend_lease(FILE_ID, OWNER, 60), frozenset(LEASED_JOB_STATUSES)),
    "update_url": (
        lambda t: t.update_url(FILE_ID, OWNER, "https://x.test/", None),
        frozenset(LEASED_JOB_STATUSES),
    ),
    "complete": (lambda t: t.complete(FILE_ID, OWNER, **FACTS), job_sources(JobStatus.COMPLETED)),
    "fail": (
        lambda t: t.finish_unsuccessfully(FILE_ID, OWNER, JobStatus.FAILED, "x"),
        job_sources(JobStatus.FAILED),
    ),
    "error": (
        lambda t: t.finish_unsuccessfully(FILE_ID, OWNER, JobStatus.ERROR, "x"),
        job_sources(JobStatus.ERROR),
    ),
    # A release gives back the owner's claim: the leased sources of available only.
    "release": (
        lambda t: t.release(FILE_ID, OWNER),
        job_sources(JobStatus.AVAILABLE).intersection(LEASED_JOB_STATUSES),
    ),
    "requeue": (lambda t: t.requeue(FILE_ID), job_sources(JobStatus.AVAILABLE)),
    "requeue_force": (lambda t: t.requeue(FILE_ID, force=True), job_sources(JobStatus.AVAILABLE)),
    "adopt": (lambda t: t.adopt(FILE_ID, BATCH_ID), job_sources(JobStatus.AVAILABLE)),
    "complete_abandoned": (
        lambda t: t.complete_abandoned(FILE_ID, OWNER, **FACTS),
        job_sources(JobStatus.COMPLETED).intersection(LEASED_JOB_STATUSES),
    ),
    "mark_listed": (lambda t: t.mark_listed(FILE_ID, BATCH_ID, 3), frozenset()),
}
BATCH_WRITES: dict[str, tuple[_Write, frozenset[BatchStatus]]] = {
    "create": (lambda t: t.create(make_batch(DAY)), frozenset()),
    # queued again on a replay of the step
    "mark_queued": (
        lambda t: t.mark_queued(BATCH_ID, [FILE_ID]),
        batch_sources(BatchStatus.QUEUED) | {BatchStatus.QUEUED},
    ),
    "record_counts": (
        lambda t: t.record_counts(BATCH_ID, completed=1, failed=0, error=0),
        frozenset(BATCH_OPEN),
    ),
    "mark_adopted": (lambda t: t.mark_adopted(BATCH_ID, BATCH_ID), frozenset()),
    **{
        f"finish_{new}": (lambda t, new=new: t.finish(BATCH_ID, new), batch_sources(new))
        for new in BatchStatus
        if batch_sources(new)
    },
}


@pytest.mark.parametrize("name", list(JOB_WRITES))
def test_job_condition_statuses_are_the_tables(name: str) -> None:
    """The job write's condition names exactly the statuses the table gives it."""
    write, expected = JOB_WRITES[name]
    assert condition_statuses(write, JobsTable) == {str(s) for s in expected}


@pytest.mark.parametrize("name", list(BATCH_WRITES))
def test_batch_condition_statuses_are_the_tables(name: str) -> None:
    """The batch write's condition names exactly the statuses the table gives it."""
    write, expected = BATCH_WRITES[name]
    assert condition_statuses(write, BatchesTable) == {str(s) for s in expected}


@pytest.mark.parametrize(
    ("module", "cls", "writes"),
    [
        (jobs_rerun_writes, jobs_rerun_writes.RerunWrites, JOB_WRITES),
        (batches_table, BatchesTable, BATCH_WRITES),
    ],
    ids=["jobs", "batches"],
)
def test_every_conditional_write_is_checked_here(module: Any, cls: type, writes: dict) -> None:
    """A new conditional write in a table module needs its row above."""
    found = conditional_writes_of(cls)
    checked = methods_called((w for w, _ in writes.values()), cls)
    assert checked == found, f"not checked here: {sorted(found - checked)}"

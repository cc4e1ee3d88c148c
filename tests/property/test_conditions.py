"""Each ConditionExpression of the table modules accepts exactly the states its Python rule
(dlpipe/domain/transitions.py) accepts: generated job and batch states are written to DynamoDB
Local, every conditional write of JobsTable / BatchesTable runs against its own copy, and
ConditionalCheckFailed must come back exactly when the rule says no, unless the refused state
is that very write already applied (a retry after a lost response: the is_own_* rules), which
the repository returns as the write's success."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlpipe.adapters import batch_marks, batches_table, jobs_rerun_writes
from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batch_marks import BatchMarks
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.dynamo import CONDITION_FAILED
from dlpipe.adapters.items import (
    batch_from_item,
    batch_to_item,
    job_from_item,
    job_to_item,
    serialize,
)
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.errors import CorruptRecordError
from dlpipe.domain.model import Batch, BatchStatus, JobStatus, listed_by, make_batch_id
from dlpipe.domain.transitions import (
    BATCH_TRANSITIONS,
    JOB_TRANSITIONS,
    holds_claim,
    is_own_batch_create,
    is_own_batch_write,
    is_own_job_write,
    may_adopt,
    may_claim,
    may_claim_late,
    may_complete_abandoned,
    may_create,
    may_finish,
    may_mark_listed,
    may_mark_queued,
    may_record,
    may_record_counts,
    may_record_handoff,
    may_release_late,
    may_requeue,
)
from tests.conditional_writes import conditional_writes_of, methods_called
from tests.support import BASE_MS, ManualClock, make_batch, make_job, put_all
from tests.support import own_table as own_table_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration
EXAMPLES = 500
NOW_MS = BASE_MS
LEASE_S = 60
OWNER, OTHER_OWNER = "w-1", "w-2"
DAY = "2026-02-28"
THIS_BATCH = make_batch_id(DAY, "00000000-0000-4000-8000-000000000001")
OTHER_BATCH = make_batch_id(DAY, "00000000-0000-4000-8000-000000000002")
BOGUS = "bogus"  # a Status no machine knows: every rule refuses it
PROPERTY_SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=True,  # the same states on every run: CI is stable
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@dataclass(frozen=True)
class JobDraw:
    """A generated job item, None for an attribute that is absent; a JobState for the rules
    (`present` False: no item at all, the other fields unused)."""

    present: bool
    raw_status: str | None
    lease_owner: str | None
    lease_expires_at_ms: int | None
    attempts: int | None
    batch_id: str | None
    listed_by: str | None
    finished_by: str | None

    @property
    def status(self) -> JobStatus | None:
        """The status as the rules see it: None when absent or not a job status."""
        return JobStatus(self.raw_status) if self.raw_status in set(JobStatus) else None


@dataclass(frozen=True)
class BatchDraw:
    """A generated batch item (a BatchState for the rules); the counts and flags are there
    to show that the conditions ignore them."""

    present: bool
    raw_status: str | None
    expected_count: int | None
    completed_count: int | None
    sets_truncated: bool
    error_message: str | None
    updated_at: str
    handoff_type: str | None = None  # the outcome event recorded: none, ours, another's
    late_event_id: str | None = None  # the Day Late claim: none, ours, another's

    @property
    def status(self) -> BatchStatus | None:
        """The status as the rules see it: None when absent or not a batch status."""
        return BatchStatus(self.raw_status) if self.raw_status in set(BatchStatus) else None


def _near_now() -> st.SearchStrategy[int]:
    """Lease expiries before, at and after now: the edges often, anything within a day too."""
    return st.one_of(st.sampled_from([-1, 0, 1]), st.integers(-86_400_000, 86_400_000)).map(
        lambda delta: NOW_MS + delta
    )


_PRESENT = st.integers(0, 4).map(lambda n: n > 0)  # one state in five has no item
JOB_STATES = st.builds(
    JobDraw,
    present=_PRESENT,
    # downloading, and our owner, more often: the owner's and the sweeper's conditions need both
    raw_status=st.sampled_from(
        [*JobStatus, JobStatus.DOWNLOADING, JobStatus.DOWNLOADING, BOGUS, None]
    ),
    lease_owner=st.sampled_from([OWNER, OWNER, OTHER_OWNER, None]),
    lease_expires_at_ms=st.one_of(st.none(), _near_now()),
    attempts=st.one_of(st.none(), st.integers(0, 20)),
    batch_id=st.sampled_from([THIS_BATCH, OTHER_BATCH, None]),
    # a rerun's marks: entry 3 of this batch's listing (the one marking), entry 7, another's
    listed_by=st.sampled_from(
        [None, listed_by(THIS_BATCH, 3), listed_by(THIS_BATCH, 7), listed_by(OTHER_BATCH, 3)]
    ),
    # the claim that ended the job: ours (a retried write of ours finds it), another's, none
    finished_by=st.sampled_from([None, OWNER, OTHER_OWNER]),
)
BATCH_STATES = st.builds(
    BatchDraw,
    present=_PRESENT,
    raw_status=st.sampled_from([*BatchStatus, BOGUS, None]),
    expected_count=st.one_of(st.none(), st.integers(0, 200_000)),
    completed_count=st.one_of(st.none(), st.integers(0, 200_000)),
    sets_truncated=st.booleans(),
    error_message=st.one_of(st.none(), st.text("abc ;:", min_size=1, max_size=20)),
    # now: the UpdatedAt a retried write of ours finds (it re-sends the same values); earlier
    updated_at=st.sampled_from([iso_from_ms(NOW_MS), iso_from_ms(NOW_MS - 1000)]),
    handoff_type=st.sampled_from([None, "Day Completed", "Day Timed Out"]),
    late_event_id=st.sampled_from([None, "late-1", "late-2"]),
)


def _never(_state: Any, _op: str) -> bool:
    return False


@dataclass(frozen=True)
class Condition:
    """One ConditionExpression: its Python rule, and the repository writes that carry it
    (several share one: each state runs one of them, in turn)."""

    rule: Callable[[Any], bool]
    writes: dict[str, Callable[[Any, str], Any]]
    moves_status: bool = True  # False: a mark beside the status, no edge of the machine
    # A state the condition refuses that is the write (op) itself, already applied: what a
    # retry after a lost response finds. The repository returns it as the write's success.
    replayed: Callable[[Any, str], bool] = _never


_ENDS_IN = {
    "complete": JobStatus.COMPLETED,
    "fail": JobStatus.FAILED,
    "error": JobStatus.ERROR,
    "release": JobStatus.AVAILABLE,
}


def _readable(draw: JobDraw | None) -> bool:
    """Whether the repository can read the generated job (no stored job proves a write ours)."""
    if draw is None:
        return False
    try:
        job_from_item(_job_item(draw, f"x-{DAY}"))
    except CorruptRecordError:
        return False
    return True


def _own_write(state: Any, target: JobStatus | None) -> bool:
    return target is not None and _readable(state) and is_own_job_write(state, OWNER, target)


def _own_ending(state: Any, op: str) -> bool:
    return _own_write(state, _ENDS_IN.get(op))


def _as_batch(draw: BatchDraw | None) -> Batch | None:
    """The generated batch as the repository reads it (None: absent or not a valid batch)."""
    if draw is None or draw.status is None:
        return None
    return batch_from_item(_batch_item(draw, THIS_BATCH))


def _as_batch_state(draw: BatchDraw | None) -> BatchDraw | None:
    """The item as the attribute-only rules read it (present whatever its status)."""
    return draw


def _own_create(state: Any, _op: str) -> bool:
    return is_own_batch_create(_as_batch(state), replace(make_batch(DAY), batch_id=THIS_BATCH))


_FACTS: dict[str, Any] = {"byte_count": 1, "sha256": "0" * 64, "destination_key": "k"}
JOB_CONDITIONS: dict[str, Condition] = {
    "create": Condition(
        may_create,
        {"create": lambda t, f: t.create(make_job(f[: -len(DAY) - 1], DAY, batch_id=THIS_BATCH))},
    ),
    "claim": Condition(
        lambda s: may_claim(s, NOW_MS),
        {"claim": lambda t, f: t.claim(f, OWNER, LEASE_S)},
        replayed=lambda s, _op: _own_write(s, JobStatus.DOWNLOADING),
    ),
    "owned": Condition(
        lambda s: holds_claim(s, OWNER),
        {
            "extend_lease": lambda t, f: t.extend_lease(f, OWNER, LEASE_S),
            "update_url": lambda t, f: t.update_url(f, OWNER, "https://example.test/x", None),
            "complete": lambda t, f: t.complete(f, OWNER, **_FACTS),
            "fail": lambda t, f: t.finish_unsuccessfully(f, OWNER, JobStatus.FAILED, "x"),
            "error": lambda t, f: t.finish_unsuccessfully(f, OWNER, JobStatus.ERROR, "x"),
            "release": lambda t, f: t.release(f, OWNER),
        },
        replayed=_own_ending,
    ),
    "requeue": Condition(lambda s: may_requeue(s, NOW_MS), {"requeue": lambda t, f: t.requeue(f)}),
    "requeue_force": Condition(
        lambda s: may_requeue(s, NOW_MS, force=True),
        {"requeue_force": lambda t, f: t.requeue(f, force=True)},
    ),
    "adopt": Condition(
        lambda s: may_adopt(s, THIS_BATCH, NOW_MS), {"adopt": lambda t, f: t.adopt(f, THIS_BATCH)}
    ),
    "complete_abandoned": Condition(
        lambda s: may_complete_abandoned(s, OWNER, NOW_MS),
        {"complete_abandoned": lambda t, f: t.complete_abandoned(f, OWNER, **_FACTS)},
    ),
    "mark_listed": Condition(
        lambda s: may_mark_listed(s, THIS_BATCH, 3),
        {"mark_listed": lambda t, f: t.mark_listed(f, THIS_BATCH, 3)},
        moves_status=False,
    ),
}
BATCH_CONDITIONS: dict[str, Condition] = {
    "create": Condition(
        may_create,
        {"create": lambda t, b: t.create(replace(make_batch(DAY), batch_id=b))},
        replayed=_own_create,
    ),
    "mark_queued": Condition(
        may_mark_queued, {"mark_queued": lambda t, b: t.mark_queued(b, [f"e-{DAY}"])}
    ),
    "record_counts": Condition(
        may_record_counts,
        {
            "record_counts": lambda t, b: t.record_counts(b, completed=1, failed=0, error=0),
            # What the poller writes for a small day: the counts and the outcome sets at once.
            "record_counts_sets": lambda t, b: t.record_counts(
                b,
                completed=1,
                failed=1,
                error=0,
                completed_files=[f"e-{DAY}"],
                failed_files=[f"f-{DAY}"],
            ),
        },
    ),
    "mark_adopted": Condition(
        may_record, {"mark_adopted": lambda t, b: t.mark_adopted(b, b)}, moves_status=False
    ),
    **{
        f"finish_{new}": Condition(
            lambda s, new=new: may_finish(s, new),
            {f"finish_{new}": lambda t, b, new=new: t.finish(b, new)},
            replayed=lambda s, _op, new=new: is_own_batch_write(s, new, iso_from_ms(NOW_MS)),
        )
        for new in BatchStatus
        if new is not BatchStatus.INITIATED  # nothing leads there: finish refuses to try
    },
}
# The hand-off's marks beside the status (dlpipe/adapters/batch_marks.py), on the same items.
MARK_CONDITIONS: dict[str, Condition] = {
    "record_handoff_problem": Condition(
        may_record,
        {
            "record_handoff_problem": lambda t, b: t.record_handoff_problem(b, "manifest_x: y"),
            "clear_handoff_problem": lambda t, b: t.record_handoff_problem(b, None),
        },
        moves_status=False,
    ),
    "record_handoff": Condition(
        lambda s: may_record_handoff(_as_batch(s), "completed", "Day Completed"),
        {"record_handoff": lambda t, b: t.record_handoff(b, "completed", "Day Completed", "{}")},
        moves_status=False,
    ),
    "claim_day_late": Condition(
        lambda s: may_claim_late(_as_batch_state(s)),
        {"claim_day_late": lambda t, b: t.claim_day_late(b, "late-1")},
        moves_status=False,
    ),
    "release_day_late": Condition(
        lambda s: may_release_late(_as_batch_state(s), "late-1"),
        {"release_day_late": lambda t, b: t.release_day_late(b, "late-1")},
        moves_status=False,
    ),
}


@pytest.mark.parametrize(
    ("module", "cls", "conditions"),
    [
        (jobs_rerun_writes, jobs_rerun_writes.RerunWrites, JOB_CONDITIONS),
        (batches_table, BatchesTable, BATCH_CONDITIONS),
        (batch_marks, BatchMarks, MARK_CONDITIONS),
    ],
    ids=["jobs", "batches", "batch marks"],
)
def test_every_conditional_write_is_registered_here(
    module: Any, cls: type, conditions: dict[str, Condition]
) -> None:
    """A conditional write added to a table module without a Condition here would go
    unchecked: the methods that pass a ConditionExpression (read from the module's source)
    are exactly the methods the registered writes call."""
    registered = methods_called((w for c in conditions.values() for w in c.writes.values()), cls)
    found = conditional_writes_of(cls)
    assert registered == found, f"not registered here: {sorted(found - registered)}"


def _job_item(draw: JobDraw, file_id: str) -> dict[str, Any]:
    item: dict[str, Any] = dict(job_to_item(make_job(file_id[: -len(DAY) - 1], DAY)))
    for name, value in (
        ("Status", draw.raw_status),
        ("LeaseOwner", draw.lease_owner),
        ("LeaseExpiresAt", draw.lease_expires_at_ms),
        ("Attempts", draw.attempts),
        ("BatchID", draw.batch_id),
        ("ListedBy", draw.listed_by),
        ("FinishedBy", draw.finished_by),
    ):
        item.pop(name, None)
        if value is not None:
            item[name] = serialize(value)
    return item


def _batch_item(draw: BatchDraw, batch_id: str) -> dict[str, Any]:
    batch = replace(
        make_batch(DAY),
        batch_id=batch_id,
        expected_count=draw.expected_count,
        completed_count=draw.completed_count,
        sets_truncated=draw.sets_truncated,
        error_message=draw.error_message,
        updated_at=draw.updated_at,
        handoff_type=draw.handoff_type,
        late_event_id=draw.late_event_id,
    )
    item: dict[str, Any] = dict(batch_to_item(batch))
    item.pop("Status")
    if draw.raw_status is not None:
        item["Status"] = serialize(draw.raw_status)
    return item


def _refused_by_condition(exc: BaseException) -> bool:
    """True when DynamoDB answered ConditionalCheckFailed somewhere down the chain."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ClientError):
            return seen.response.get("Error", {}).get("Code") == CONDITION_FAILED
        seen = seen.__cause__ or seen.__context__
    return False


def _accepted(write: Callable[[], Any]) -> tuple[bool, Any]:
    """(did DynamoDB apply the write, the record it returned or None)."""
    try:
        return True, write()
    except CorruptRecordError as exc:
        if _refused_by_condition(exc):
            return False, None
        return True, None  # applied; the item is no valid record (a generated gap)
    except Exception as exc:
        if _refused_by_condition(exc):
            return False, None
        raise


def _mismatch(op: str, state: object, rule: bool, applied: bool) -> str:
    return (
        f"{op}: the rule says {'yes' if rule else 'no'}, DynamoDB "
        f"{'applied' if applied else 'refused'} the write, for state {state!r} at now={NOW_MS}"
    )


@pytest.fixture
def own_table(clients: AwsClients) -> Iterator[Callable[[int], str]]:
    """A fresh copy of a tracking table (0: jobs, 1: batches) for one test, deleted after."""
    with ExitStack() as tables:
        yield lambda which: tables.enter_context(own_table_of(clients, which, "prop"))


def _check_conditions(
    client: DynamoDBClient,
    repo: JobsTable | BatchesTable,
    conditions: dict[str, Condition],
    states: st.SearchStrategy[Any],
    item_of: Callable[[Any, str], dict[str, Any]],
    key_of: Callable[[int, int], str],
    self_loops: bool,
) -> set[tuple[Any, Any]]:
    """Run every condition on >= EXAMPLES generated states, each on its own copy of the state
    (one BatchWriteItem, then the writes in parallel); the status moves the writes made."""
    outcomes: Counter[tuple[str, bool]] = Counter()
    replays: Counter[str] = Counter()  # applied because the write was its own, retried
    moves: set[tuple[Any, Any]] = set()
    started, serial = time.monotonic(), itertools.count()

    def run(name: str, key: str, n: int) -> tuple[str, bool, Any]:
        op, write = list(conditions[name].writes.items())[n % len(conditions[name].writes)]
        return (op, *_accepted(lambda: write(repo, key)))

    with ThreadPoolExecutor(max_workers=len(conditions)) as pool:

        @PROPERTY_SETTINGS
        @given(draw=states)
        def check(draw: Any) -> None:
            n = next(serial)
            keys = {name: key_of(n, i) for i, name in enumerate(conditions)}
            if draw.present:
                put_all(client, repo.table_name, [item_of(draw, k) for k in keys.values()])
            state = draw if draw.present else None
            runs = {name: pool.submit(run, name, keys[name], n) for name in conditions}
            for name, future in runs.items():
                op, applied, after = future.result()
                outcomes[(name, applied)] += 1
                allowed = conditions[name].rule(state)
                replay = not allowed and conditions[name].replayed(state, op)
                replays[name] += replay
                expected = allowed or replay
                assert applied == expected, _mismatch(f"{name} ({op})", state, expected, applied)
                known = applied and not replay and state is not None and state.status
                known = known and after is not None
                known = known and conditions[name].moves_status
                if known and (self_loops or after.status is not state.status):
                    moves.add((state.status, after.status))

        check()
    for name in conditions:
        yes, no = outcomes[(name, True)], outcomes[(name, False)]
        assert yes + no >= EXAMPLES, f"{name}: only {yes + no} states were tried"
        # A condition seen only accepting (or only refusing) proves little: ask for both.
        assert min(yes, no) >= 10, f"{name}: {yes} applied / {no} refused is too one-sided"
    print(  # the figures for the report
        f"\n{len(conditions)} conditions, applied/refused: "
        + ", ".join(f"{c} {outcomes[(c, True)]}/{outcomes[(c, False)]}" for c in conditions)
        + f"; own writes retried: {dict(replays)}"
        + f"; {time.monotonic() - started:.1f}s"
    )
    return moves


def _edges(machine: dict[Any, frozenset[Any]], self_loops: bool) -> set[tuple[Any, Any]]:
    return {
        (old, new)
        for old, targets in machine.items()
        for new in targets
        if self_loops or old != new
    }


def test_job_conditions_accept_exactly_what_the_rules_accept(
    clients: AwsClients, own_table: Callable[[int], str]
) -> None:
    """create, claim, the owner's writes (renew, url, complete, fail, error, release), requeue
    (and forced), adopt, complete-abandoned and a rerun's listing mark: DynamoDB applies each
    iff its rule allows it, and the status moves they make are exactly the job machine's edges."""
    table = JobsTable(clients.dynamodb, own_table(0), ManualClock(NOW_MS))
    moves = _check_conditions(
        clients.dynamodb,
        table,
        JOB_CONDITIONS,
        JOB_STATES,
        _job_item,
        lambda n, i: f"p{n}c{i}-{DAY}",
        self_loops=True,
    )
    assert moves == _edges(JOB_TRANSITIONS, self_loops=True)


def test_batch_conditions_accept_exactly_what_the_rules_accept(
    clients: AwsClients, own_table: Callable[[int], str]
) -> None:
    """create, mark queued, record counts (with the outcome sets) and finish (to each status): DynamoDB
    applies each iff its rule allows it, and the status changes are the batch machine's edges."""
    table = BatchesTable(clients.dynamodb, own_table(1), ManualClock(NOW_MS))
    moves = _check_conditions(
        clients.dynamodb,
        table,
        BATCH_CONDITIONS | MARK_CONDITIONS,
        BATCH_STATES,
        _batch_item,
        lambda n, i: make_batch_id(DAY, f"00000000-0000-4000-{8000 + i:04d}-{n:012x}"),
        self_loops=False,
    )
    assert moves == _edges(BATCH_TRANSITIONS, self_loops=False)

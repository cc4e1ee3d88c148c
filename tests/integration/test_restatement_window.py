"""The restatement window against the emulator and the stub's HTTP server: a scheduled run
re-lists earlier delivered days (dlpipe/services/orchestrator/recheck.py), starts a run of
each one the vendor restated, and writes nothing itself."""

from __future__ import annotations

from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.errors import AwsRequestError
from dlpipe.domain.model import make_file_id
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.orchestrator.feed_runs import PollingPlan
from dlpipe.services.orchestrator.recheck import earlier_date
from dlpipe.services.orchestrator.sequence import InlineSteps, run_inline
from tests.integration.test_orchestrator_flow import drain, work_done
from tests.provider_support import StubFactory
from tests.support import unique_day

pytest_plugins = ["tests.provider_fixtures", "tests.integration.test_orchestrator_flow"]
pytestmark = pytest.mark.integration


def _delivered(
    make_flow: Any,
    stub_factory: StubFactory,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    day: str,
    entities: list[str],
) -> str:
    """`day` completed with one 256-byte file of each entity; its BatchID."""
    flow = make_flow(stub_factory([StubFileSpec(e, 256, CIPHER_GCM) for e in entities]))
    batch_id = str(flow.create_batch(day))
    flow.fetch_and_queue(batch_id, day)
    for file_id in drain(clients, queue):
        work_done(jobs, file_id)
    assert flow.check_completion(batch_id, 1, False).status == "completed"
    return batch_id


def _day_state(batches: BatchesTable, jobs: JobsTable, day: str, ids: list[str]) -> Any:
    """What the tables hold of the day: its batch items and its jobs, whole."""
    return list(batches.query_by_date(day)), jobs.batch_get(ids)


def test_a_restated_earlier_day_is_found_and_its_run_started_with_nothing_written(
    make_flow: Any,
    stub_factory: StubFactory,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    batches: BatchesTable,
    entity: str,
) -> None:
    """The vendor restates a delivered day (one file changed, one added, one withdrawn): the
    window's step names it restated with those counts and starts that day's run, once; the
    tables are as they were (the started run's create-batch makes the revision)."""
    day = unique_day()
    same, changed, withdrawn, added = (f"{entity}{n}" for n in range(4))
    revised = _delivered(
        make_flow, stub_factory, clients, queue, jobs, day, [same, changed, withdrawn]
    )
    ids = [make_file_id(e, day) for e in (same, changed, withdrawn, added)]
    before = _day_state(batches, jobs, day, ids)
    restated = stub_factory(
        [
            StubFileSpec(e, size, CIPHER_GCM)
            for e, size in ((same, 256), (changed, 300), (added, 256))
        ]
    )
    started: list[str] = []
    found = make_flow(restated).recheck_day(day, lambda date: started.append(date) or "started")
    assert found == {
        "date": day,
        "outcome": "restated",
        "revises": revised,
        "unchanged": 1,
        "changed": 1,
        "added": 1,
        "withdrawn": 1,
        "started": "started",
    }
    assert started == [day]
    assert _day_state(batches, jobs, day, ids) == before
    assert drain(clients, queue) == []


def test_an_unchanged_running_or_undelivered_day_starts_nothing(
    make_flow: Any,
    stub_factory: StubFactory,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    entity: str,
) -> None:
    """The same listing again: unchanged. A day with no batch, or one still running: nothing
    to restate (that run is the day's). The starter is never called."""
    day, running, empty = unique_day(), unique_day(), unique_day()
    _delivered(make_flow, stub_factory, clients, queue, jobs, day, [f"{entity}0", f"{entity}1"])
    flow = make_flow(stub_factory([StubFileSpec(f"{entity}{n}", 256, CIPHER_GCM) for n in (0, 1)]))
    flow.create_batch(running)  # initiated: a run of it is on

    def never(date: str) -> str:
        raise AssertionError(f"started {date}")

    assert flow.recheck_day(day, never) == {"date": day, "outcome": "unchanged"}
    assert flow.recheck_day(running, never)["outcome"] == "no_completed_batch"
    assert flow.recheck_day(empty, never)["outcome"] == "no_completed_batch"


def test_a_refused_start_is_reported_in_the_steps_result_not_raised(
    make_flow: Any,
    stub_factory: StubFactory,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    entity: str,
) -> None:
    """AWS refuses the invoke (access denied, say): the step's result says so in one line and
    the run goes on; with no starter at all (a run in a shell) the same, named."""
    day = unique_day()
    _delivered(make_flow, stub_factory, clients, queue, jobs, day, [f"{entity}0"])
    flow = make_flow(stub_factory([StubFileSpec(f"{entity}0", 300, CIPHER_GCM)]))

    def refused(date: str) -> str:
        raise AwsRequestError("Lambda", "Invoke", "AccessDeniedException", f"not for {date}")

    found = flow.recheck_day(day, refused)
    assert (found["outcome"], found["changed"]) == ("restated", 1)
    assert found["start_problem"] == f"Lambda Invoke refused: AccessDeniedException: not for {day}"
    assert flow.recheck_day(day, None)["start_problem"] == "no orchestrator to start here"


def test_a_scheduled_run_rechecks_its_window_after_queueing_its_own_day(
    make_flow: Any,
    stub_factory: StubFactory,
    clients: AwsClients,
    queue: JobQueue,
    jobs: JobsTable,
    entity: str,
) -> None:
    """A scheduled event for the day after a restated one, with a window of 2 days: its own
    files are queued first, then one restatement-check step a day back, then the polls; the
    restated day's run is started. The same day run by an explicit date checks no window."""
    day = unique_day()
    _delivered(make_flow, stub_factory, clients, queue, jobs, day, [f"{entity}0"])
    flow = make_flow(stub_factory([StubFileSpec(f"{entity}0", 300, CIPHER_GCM)]))
    today = (earlier_date(day, -1), earlier_date(day, -2))  # the run's day, the schedule's
    plan = PollingPlan(1, 1, restatement_window_days=2)
    started: list[str] = []
    steps = InlineSteps()
    run_inline(
        flow,
        {"scheduled_time": f"{today[1]}T06:30:00Z"},
        plan,
        steps=steps,
        start=lambda date: started.append(date) or "started",
    )
    assert started == [day]
    assert steps.names[:5] == [
        "read-feed",
        "create-batch",
        "fetch-and-queue-files",
        "restatement-check-1",
        "restatement-check-2",
    ]
    assert steps.names[5] == "poll-wait-1"
    drain(clients, queue)

    by_date = InlineSteps()
    run_inline(flow, {"date": today[0]}, plan, steps=by_date, start=started.append)
    assert not [n for n in by_date.names if n.startswith("restatement-check")]
    assert started == [day]
    drain(clients, queue)

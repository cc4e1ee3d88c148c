"""A rerun adopts the files an earlier batch failed and its completed manifest becomes the
day's: a replay of the earlier batch's write-manifest step then renders other bytes than its
manifest holds (the adopted files left its partition). That is no tampering: the withheld
hand-off is named `manifest_superseded`. DynamoDB Local and moto's S3."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.model import JobStatus
from dlpipe.local.provision import Provisioned
from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_inline
from tests.integration.test_handoff_events import complete_all
from tests.integration.test_handoff_once import _day, _pointer
from tests.support import ManualClock

pytestmark = pytest.mark.integration


def _one_fails(jobs: JobsTable, date: str, entities: list[str]) -> Callable[[float], None]:
    """The downloaders: the first file completes, the others fail."""
    complete_first = complete_all(jobs, date, entities[:1])

    def finish(seconds: float) -> None:
        complete_first(seconds)
        for entity in entities[1:]:
            file_id = f"{entity}-{date}"
            if jobs.require(file_id).status is JobStatus.AVAILABLE:
                jobs.claim(file_id, "w1", 60)
                jobs.finish_unsuccessfully(file_id, "w1", JobStatus.FAILED, "HTTP 503")

    return finish


def test_a_replay_of_a_batch_a_rerun_superseded_names_it_superseded_not_tampered(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    batches: BatchesTable,
    clock: ManualClock,
) -> None:
    date, entities, flow = _day(clients, provisioned, jobs, batches, clock)
    steps = InlineSteps(sleep=_one_fails(jobs, date, entities))
    first = run_inline(flow(), {"date": date, "rerun": True}, PollingPlan(60, 3), steps=steps)
    assert first["status"] == "failed"
    clock.advance(60)
    steps = InlineSteps(sleep=complete_all(jobs, date, entities))
    second = run_inline(flow(), {"date": date, "rerun": True}, PollingPlan(60, 3), steps=steps)
    assert second["status"] == "completed"
    bucket = str(provisioned.destination_bucket)
    pointer = _pointer(clients, bucket, date)
    assert pointer.batch_id == second["batch_id"]
    # The earlier batch's write-manifest step again (a replay, or an attach to it).
    replayed = flow().write_manifest(first["batch_id"])
    assert replayed is not None
    problem = str(replayed["problem"])
    assert problem.startswith(
        f"manifest_superseded: the day's latest manifest is batch {second['batch_id']}'s"
        f" ({pointer.key}); batch {first['batch_id']}'s, "
    ), problem

"""Scenario 9: one job item of the day becomes unreadable (an attribute
lost by a hand edit or an older writer). The file cannot be downloaded, but the day must still
end, with that file named as failed, rather than the poller crashing on it at every check."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from dlpipe.domain.cipher_format import CIPHER_CBC
from dlpipe.local.durable_runner import LocalRunError, run_durable_locally
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.orchestrator.durable import build_durable_handler
from tests.provider_support import StubFactory
from tests.reliability.rig import Rig, unique_day, unique_entity

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e


def test_an_unreadable_job_item_is_counted_failed_and_the_day_still_ends(
    rig: Rig, stub_factory: StubFactory
) -> None:
    """A job item loses its Entity after queueing: the batch still ends, naming that file failed."""
    entity, day = unique_entity(), unique_day()
    stub = stub_factory([StubFileSpec(f"{entity}{n}", 100, CIPHER_CBC) for n in range(3)])
    broken = f"{entity}0-{day}"
    flow = rig.flow(stub)
    fetch_and_queue = flow.fetch_and_queue

    def fetch_then_break_one(batch_id: str, date: str) -> Any:
        result = fetch_and_queue(batch_id, date)
        rig.clients.dynamodb.update_item(
            TableName=rig.provisioned.jobs_table,
            Key={"FileID": {"S": broken}},
            UpdateExpression="REMOVE Entity",
        )
        return result

    flow.fetch_and_queue = fetch_then_break_one  # type: ignore[method-assign]
    handler = build_durable_handler(lambda: flow, 60, 3)
    with contextlib.suppress(LocalRunError):  # how the run ends is not the point
        run_durable_locally(handler, {"date": day}, skip_time=True, timeout_seconds=60)
    (batch,) = rig.batches().query_by_date(day)
    assert batch.is_terminal, f"the batch is still {batch.status}"
    assert broken in batch.failed_files

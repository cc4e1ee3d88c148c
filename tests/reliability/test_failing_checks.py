"""Scenario 10: DynamoDB throttles every read of the jobs table for
longer than a completion check's retries last (the AWS outage budget, 15 min by default). The check fails for good; the day must end
`failed` with the cause as its ErrorMessage and the BatchFailed metric, and the execution must
end normally, rather than failing and leaving the batch `queued` with no word of why."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from dlpipe import metrics
from dlpipe.adapters.aws import AwsClients
from dlpipe.config import Settings
from dlpipe.domain.cipher_format import CIPHER_CBC
from dlpipe.domain.model import BatchStatus
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.orchestrator.step_names import STEP_FAIL_BATCH, check_step_name
from tests.provider_support import StubFactory
from tests.reliability.rig import LogTap, Rig, unique_day, unique_entity

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
THROTTLED = "ProvisionedThroughputExceededException"
_READS = ("GetItem", "BatchGetItem", "Query")


def throttle_reads_of(clients: AwsClients, table: str) -> AwsClients:
    """Make every read of `table` through `clients` answer a throttling error (HTTP 400)."""

    def remember(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["rel_tables"] = {params.get("TableName"), *params.get("RequestItems", {})}

    def refuse(context: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]] | None:
        if table not in context.get("rel_tables", ()):
            return None
        error = {"Code": THROTTLED, "Message": "Rate of requests exceeds the allowed throughput."}
        return SimpleNamespace(status_code=400), {
            "Error": error,
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    events = clients.dynamodb.meta.events
    for operation in _READS:
        events.register(f"before-parameter-build.dynamodb.{operation}", remember)
        events.register(f"before-call.dynamodb.{operation}", refuse)
    return clients


@contextmanager
def emitted_metrics() -> Iterator[list[str]]:
    """The EMF lines emitted while the block runs."""
    lines: list[str] = []
    metrics.set_sink(lines.append)
    try:
        yield lines
    finally:
        metrics.set_sink(metrics.stdout_line)


def test_a_check_that_cannot_read_the_jobs_table_ends_the_day_failed_saying_why(
    rig: Rig, stub_factory: StubFactory, figures: Any
) -> None:
    """Every jobs-table read throttled: check attempts within the 15-min AWS outage budget, then
    `failed`, check_failed: dependency_unavailable: DynamoDB ..., metric."""
    entity, day, tap = unique_entity(), unique_day(), LogTap("INFO")
    stub = stub_factory([StubFileSpec(f"{entity}{n}", 100, CIPHER_CBC) for n in range(2)])
    throttled = throttle_reads_of(AwsClients(Settings.from_env()), rig.provisioned.jobs_table)
    flow = rig.flow(stub, clients=throttled)
    with tap.tapping(), emitted_metrics() as lines:
        run = rig.run_day_virtual(flow, day, polls=3)
    batch = rig.batches().require(run.result["batch_id"])
    figures(
        check_attempts=run.attempts(check_step_name(1)),
        virtual_check_s=run.virtual_seconds(check_step_name(1)),
        error_message=batch.error_message,
    )
    assert (run.result["status"], run.result["polls"]) == ("failed", 1)
    assert batch.status is BatchStatus.FAILED
    assert (batch.error_message or "").startswith(
        "check_failed: dependency_unavailable: DynamoDB unavailable"
    )
    assert THROTTLED in (batch.error_message or "")
    assert run.attempts(check_step_name(1)) > 3
    assert 900 - 120 < run.virtual_seconds(check_step_name(1)) <= 900 + 60
    assert run.attempts(STEP_FAIL_BATCH) == 1
    assert any('"BatchFailed":[1.0]' in line for line in lines)
    (failed,) = [e for e in tap.events() if e["event"] == "batch.failed"]
    assert failed["batch_id"] == batch.batch_id

"""Backfill's decisions per date, and the Lambda starter's request (botocore Stubber, no network)."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber

from dlpipe.adapters.lambda_starter import LambdaStarter
from dlpipe.config import ConfigError
from dlpipe.domain.model import BatchStatus
from dlpipe.services.ops.backfill import decide
from tests.support import make_batch

ALIAS_ARN = "arn:aws:lambda:us-east-1:123456789012:function:dlpipe-orchestrator:live"


def test_the_starter_invokes_the_alias_asynchronously_with_date_and_rerun() -> None:
    """One Invoke: the qualified ARN, InvocationType Event, payload {"date", "rerun"}."""
    client = boto3.client(
        "lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    payload = json.dumps({"date": "2026-02-27", "rerun": True}).encode()
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 202},
            {
                "FunctionName": ALIAS_ARN,
                "InvocationType": "Event",
                "Payload": payload,
                "DurableExecutionName": "default-2026-02-27-0badcafe",
            },
        )
        starter = LambdaStarter(client, ALIAS_ARN, new_suffix=lambda: "0badcafe")
        note = starter.start("2026-02-27", rerun=True)
        stub.assert_no_pending_responses()
    assert note == "invoked (HTTP 202)"


def test_an_unqualified_orchestrator_arn_is_a_config_error() -> None:
    """A durable function must be invoked through a version or alias: no qualifier, no start."""
    with pytest.raises(ConfigError, match="qualified"):
        LambdaStarter(object(), ALIAS_ARN.rsplit(":", 1)[0])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("statuses", "rerun", "start"),
    [
        ((), False, True),
        ((BatchStatus.TIMEOUT,), False, True),
        ((BatchStatus.FAILED, BatchStatus.COMPLETED), False, False),
        ((BatchStatus.COMPLETED,), True, True),
        ((BatchStatus.QUEUED,), False, False),
        ((BatchStatus.QUEUED,), True, True),
    ],
)
def test_a_date_starts_unless_completed_or_running_without_rerun(
    statuses: tuple[BatchStatus, ...], rerun: bool, start: bool
) -> None:
    """No batch or only failed/timed-out ones: start; completed or running: only with --rerun."""
    batches = [make_batch("2026-02-27", status=s) for s in statuses]
    assert decide("2026-02-27", batches, rerun).start is start

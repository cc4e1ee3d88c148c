"""A scheduled run starts a restated earlier day by invoking its own orchestrator through the
alias ARN it was invoked by (dlpipe/bootstrap/orchestrator.py's self_starter)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from dlpipe.bootstrap import orchestrator as wiring
from dlpipe.config import Settings

ALIAS = "arn:aws:lambda:eu-west-1:123456789012:function:dlpipe-orchestrator:live"


@pytest.mark.parametrize(
    "context",
    [
        None,
        SimpleNamespace(invoked_function_arn=None),
        SimpleNamespace(invoked_function_arn=ALIAS.rsplit(":", 1)[0]),
    ],
)
def test_without_a_qualified_arn_there_is_no_starter(context: Any) -> None:
    """The SDK's local runner has no ARN; an unqualified one cannot start a durable run."""
    assert wiring.self_starter(Settings(), context, "default") is None


def test_a_start_invokes_this_alias_asynchronously_for_the_date_and_feed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[dict[str, Any]] = []

    class Lambda:
        def invoke(self, **request: Any) -> dict[str, Any]:
            calls.append(request)
            return {"StatusCode": 202}

    monkeypatch.setattr(wiring, "AwsClients", lambda _settings: SimpleNamespace(lambda_=Lambda()))
    start = wiring.self_starter(Settings(), SimpleNamespace(invoked_function_arn=ALIAS), "vendor-b")
    assert start is not None
    assert start("2026-02-27") == "invoked (HTTP 202)"
    (call,) = calls
    assert (call["FunctionName"], call["InvocationType"]) == (ALIAS, "Event")
    assert json.loads(call["Payload"]) == {"date": "2026-02-27", "rerun": False, "feed": "vendor-b"}
    assert call["DurableExecutionName"].startswith("vendor-b-2026-02-27-")

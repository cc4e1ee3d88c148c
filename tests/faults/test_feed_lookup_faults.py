"""A named feed's day whose SSM GetParameter is throttled at the start: the orchestrator's wiring
(build_orchestrator_handler, the real feed source over moto's SSM behind the fault proxy, a
fake batch flow) under the SDK's local runner in virtual time. The throttle outlasts the SSM
client's own retries, so only the durable retry of the `read-feed` step can carry the day."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from botocore.config import Config

from dlpipe.adapters.aws import AwsClients
from dlpipe.bootstrap.feed_source import feed_source
from dlpipe.bootstrap.orchestrator import build_orchestrator_handler
from dlpipe.config import ENV_ENDPOINT_URL, Settings
from tests.faults.proxy import FaultProxy
from tests.faults.rules import FaultPlan, Rule
from tests.unit.test_orchestrator_durable import FakeFlow, failure_of, names, result_of, run

pytestmark = pytest.mark.integration

GET_PARAMETER = frozenset({"GetParameter"})
# The SSM client's own retries: two attempts, so a throttle of four answers outlasts them twice.
TWO_TRIES = Config(retries={"total_max_attempts": 2, "mode": "standard"}, connect_timeout=2)
PARAMETER = {  # as terraform/feeds.tf writes a feed (unset optionals null)
    "name": "vendor-b",
    "provider_base_url": "https://api.vendor-b.example",
    "schedule": "cron(30 1 * * ? *)",
    "time_zone": "Asia/Tokyo",
    "destination_prefix": "vendors/vendor-b",
    "url_allowed_hosts": ["*.vendor-b.example"],
    "deadline": None,
    "poll_interval_seconds": 600,
    "max_polls": 9,
    "large_file_threshold_bytes": None,
    "token_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:dlpipe/feeds/vendor-b/provider-token-AbCdEf",
    "private_key_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:dlpipe/feeds/vendor-b/rsa-private-key-AbCdEf",
}


@pytest.fixture
def path(clients: AwsClients) -> Iterator[str]:
    """A parameter path of this test's own holding vendor-b's parameter; deleted afterwards."""
    prefix = f"/t{uuid.uuid4().hex[:10]}-dlpipe/feeds"
    name = f"{prefix}/vendor-b"
    clients.ssm.put_parameter(Name=name, Value=json.dumps(PARAMETER), Type="String")
    yield prefix
    clients.ssm.delete_parameter(Name=name)


class Day:
    """The orchestrator's handler with SSM reached through `proxy`; records the flows built."""

    def __init__(self, aws_env: dict[str, str], path: str, proxy: FaultProxy) -> None:
        base = Settings.from_env(aws_env)
        self.settings = replace(
            base,
            service_endpoint_urls={**base.service_endpoint_urls, "ssm": proxy.url},
            feeds_parameter_path=path,
            poll_interval_seconds=300,
            max_polls=4,
        )
        self.built: list[Settings] = []
        self.flow = FakeFlow(final_after=1)
        clients = AwsClients(self.settings, config=TWO_TRIES)
        self.handler = build_orchestrator_handler(
            self.settings, self.build, feeds=feed_source(self.settings, clients, env={})
        )

    def build(self, own: Settings) -> FakeFlow:
        self.built.append(own)
        return self.flow

    def run(self, feed: str) -> Any:
        return run(self.handler, {"date": "2026-02-28", "feed": feed})


def test_a_throttled_get_parameter_at_the_start_delays_the_day_then_it_runs(
    aws_env: dict[str, str], path: str
) -> None:
    """Four GetParameters answer ThrottlingException: read-feed's attempts 1 and 2 fail after
    the client's two tries each, attempt 3 reads the parameter, and the day runs on it."""
    throttle = Rule(service="ssm", operations=GET_PARAMETER, fault="throttle", count=4)
    with FaultProxy(aws_env[ENV_ENDPOINT_URL], FaultPlan([throttle])).running() as proxy:
        day = Day(aws_env, path, proxy)
        outcome = day.run("vendor-b")
    assert result_of(outcome)["status"] == "completed"
    assert proxy.requests == {"ssm.GetParameter": 5}
    assert proxy.plan.fired_count("throttle", "GetParameter") == 4
    assert names(outcome)[:2] == ["read-feed", "create-batch"]
    assert outcome.get_step("read-feed").attempt == 3
    assert {(s.feed, s.destination_prefix, s.max_polls) for s in day.built} == {
        ("vendor-b", "vendors/vendor-b", 9)
    }
    assert len(day.flow.named("create_batch")) == 1


# On AWS the orchestrator's role may read only the configured feeds' parameters: an unknown
# feed's GetParameter is AccessDenied (moto, enforcing no IAM, answers ParameterNotFound).
DENIED = Rule(
    service="ssm",
    operations=GET_PARAMETER,
    fault="error",
    status=400,
    code="AccessDeniedException",
    body_contains="/vendor-x",
)


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([], "feed 'vendor-x' is not configured"),
        (
            [DENIED],
            "feed 'vendor-x': SSM GetParameter on '{path}/vendor-x' refused: AccessDeniedException:"
            " injected by the fault proxy (AccessDeniedException)",
        ),
    ],
    ids=["no-parameter", "denied-as-on-aws"],
)
def test_an_unknown_feed_fails_at_once_in_one_line_after_one_get_parameter(
    aws_env: dict[str, str], path: str, rules: list[Rule], message: str
) -> None:
    """No parameter for vendor-x (or, as on AWS, no grant to read one): one GetParameter,
    read-feed's first attempt refuses it, the execution fails naming the feed; no flow is
    built, no batch created."""
    with FaultProxy(aws_env[ENV_ENDPOINT_URL], FaultPlan(rules)).running() as proxy:
        day = Day(aws_env, path, proxy)
        outcome = day.run("vendor-x")
    assert failure_of(outcome) == (
        "dlpipe.domain.events.InvalidEventError",
        message.format(path=path),
    )
    assert proxy.requests == {"ssm.GetParameter": 1}
    assert (names(outcome), outcome.get_step("read-feed").attempt) == (["read-feed"], 1)
    assert (day.built, day.flow.calls) == ([], [])

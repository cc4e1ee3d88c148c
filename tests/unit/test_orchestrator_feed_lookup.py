"""The event's feed is looked up in the execution's first step, `read-feed`: SSM throttling or
down is waited out durably within the AWS outage budget, an unknown feed fails the execution at
once in one line before anything is written, and a replay reads the checkpoint, not SSM again
(the wiring of the Lambda, a fake feed source, under the SDK's local runner in virtual time)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from aws_durable_execution_sdk_python_testing.executor import Executor
from structlog.testing import capture_logs

from dlpipe.bootstrap.orchestrator import build_orchestrator_handler
from dlpipe.config import Settings
from dlpipe.domain.errors import AwsRequestError, DependencyUnavailableError
from dlpipe.domain.feeds import Feed
from dlpipe.feed_settings import UnknownFeedError
from tests.unit.test_feed_runtime import VENDOR
from tests.unit.test_orchestrator_durable import (
    FakeFlow,
    crash,
    failure_of,
    names,
    result_of,
    run,
    virtual_seconds,
)

EVENT = {"date": "2026-02-28", "feed": "vendor-b"}
THROTTLED = "SSM GetParameter: ThrottlingException: Rate exceeded"


@dataclass
class ThrottledSsm:
    """A feed source over SSM: throttling for its first `down_for` reads, then VENDOR; any other
    feed has no parameter (or, `denied`, IAM refuses its read, as on AWS)."""

    down_for: int = 0
    denied: bool = False
    reads: list[str] = field(default_factory=list)

    def feed(self, name: str) -> Feed:
        self.reads.append(name)
        if len(self.reads) <= self.down_for:
            raise DependencyUnavailableError(THROTTLED, dependency="SSM")
        if name != VENDOR.name and self.denied:
            parameter = f"/dlpipe/feeds/{name}"
            raise AwsRequestError(
                "SSM", "GetParameter", "AccessDeniedException", "no grant", resource=parameter
            )
        if name != VENDOR.name:
            raise UnknownFeedError(name, f" (no SSM parameter /dlpipe/feeds/{name})")
        return VENDOR


@dataclass
class Built:
    """The flows the handler built, each on its feed's settings."""

    flow: FakeFlow = field(default_factory=lambda: FakeFlow(final_after=1))
    settings: list[Settings] = field(default_factory=list)

    def __call__(self, own: Settings) -> FakeFlow:
        self.settings.append(own)
        return self.flow


def handler(source: ThrottledSsm, built: Built) -> object:
    """The Lambda's handler (outage budgets from the settings' defaults) on `source`."""
    settings = Settings(poll_interval_seconds=300, max_polls=4)
    return build_orchestrator_handler(settings, built, feeds=source)


@pytest.fixture
def fast_reinvoke(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local runner re-invokes a crashed handler after 5 real seconds; make it immediate."""
    monkeypatch.setattr(Executor, "RETRY_BACKOFF_SECONDS", 0)


def test_a_throttled_feed_lookup_delays_the_day_then_the_day_runs() -> None:
    """SSM throttles the first three reads: read-feed's fourth attempt finds the feed after
    suspended backoffs (15 s doubling, jittered: at least 52 virtual seconds); then the day
    runs on the feed's settings. Each wait is a warning naming SSM, none an error."""
    source, built = ThrottledSsm(down_for=3), Built()
    with capture_logs() as logs:
        outcome = run(handler(source, built), EVENT)  # type: ignore[arg-type]
    assert result_of(outcome)["status"] == "completed"
    assert names(outcome)[:2] == ["read-feed", "create-batch"]
    assert outcome.get_step("read-feed").attempt == 4
    assert virtual_seconds(outcome, "read-feed") >= 52
    waits = [e for e in logs if e["event"] == "batch.dependency_unavailable"]
    assert [(e["step"], e["dependency"], e["log_level"]) for e in waits] == [
        ("read-feed", "SSM", "warning")
    ] * 3
    assert [e["event"] for e in logs if e["log_level"] == "error"] == []
    assert {(s.feed, s.destination_prefix) for s in built.settings} == {
        ("vendor-b", "vendors/vendor-b")
    }
    assert len(built.flow.named("create_batch")) == 1


def test_ssm_down_past_the_aws_outage_budget_fails_the_execution_in_one_line_writing_nothing() -> (
    None
):
    """Never back within DLPIPE_AWS_OUTAGE_BUDGET_SECONDS (900 s): the execution fails with one
    line naming the feed, SSM and the time waited; no flow was built, no batch created."""
    source, built = ThrottledSsm(down_for=10_000), Built()
    outcome = run(handler(source, built), EVENT)  # type: ignore[arg-type]
    error_type, message = failure_of(outcome)
    attempts = outcome.get_step("read-feed").attempt
    assert error_type == "dlpipe.services.orchestrator.ports.StepFailed"
    assert message.startswith(
        f"feed 'vendor-b': dependency_unavailable: SSM unavailable ({THROTTLED}) after {attempts}"
        " attempts over 1"
    ), message
    assert "\n" not in message
    assert 900 - 120 < virtual_seconds(outcome, "read-feed") <= 900 + 60
    assert (built.settings, built.flow.calls) == ([], [])
    assert names(outcome) == ["read-feed"]


@pytest.mark.parametrize(
    ("denied", "message"),
    [
        (False, "feed 'vendor-x' is not configured (no SSM parameter /dlpipe/feeds/vendor-x)"),
        (
            True,
            "feed 'vendor-x': SSM GetParameter on '/dlpipe/feeds/vendor-x' refused:"
            " AccessDeniedException: no grant",
        ),
    ],
    ids=["no-parameter", "denied-as-on-aws"],
)
def test_an_unknown_feed_fails_at_once_in_one_line_before_anything_is_written(
    denied: bool, message: str
) -> None:
    """No parameter (or, on AWS, no grant to read one): read-feed's first attempt refuses it
    (retrying cannot make it known), and the execution fails with InvalidEventError naming
    the feed; no flow, no batch."""
    source, built = ThrottledSsm(denied=denied), Built()
    outcome = run(handler(source, built), {**EVENT, "feed": "vendor-x"})  # type: ignore[arg-type]
    assert failure_of(outcome) == ("dlpipe.domain.events.InvalidEventError", message)
    assert outcome.get_step("read-feed").attempt == 1
    assert (source.reads, names(outcome)) == (["vendor-x"], ["read-feed"])
    assert (built.settings, built.flow.calls) == ([], [])


@pytest.mark.usefixtures("fast_reinvoke")
def test_a_replay_reads_the_checkpointed_feed_not_ssm_and_the_checkpoint_is_small() -> None:
    """An invocation that dies in create-batch is replayed: the feed comes from read-feed's
    checkpoint (its fields, well under 1 KB), never from a second read."""
    source = ThrottledSsm()
    built = Built(FakeFlow(final_after=1, faults={("create_batch", "before"): crash()}))
    outcome = run(handler(source, built), EVENT)  # type: ignore[arg-type]
    assert result_of(outcome)["status"] == "completed"
    assert source.reads == ["vendor-b"]
    checkpoint = outcome.get_step("read-feed").result
    assert checkpoint is not None
    # The feed's fields in the SDK's typed JSON: about 600 bytes, never an object.
    assert len(checkpoint.encode()) < 1024
    assert "vendors/vendor-b" in checkpoint

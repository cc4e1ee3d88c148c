"""The hand-off steps under the durable SDK's local runner, in virtual time: the outcome event
once per run (sent again, same entry, after PutEvents refused it), and `Day Late` exactly once
when the feed's deadline passes while the batch still runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import pytest
from aws_durable_execution_sdk_python_testing.execution import ExecutionStatus
from aws_durable_execution_sdk_python_testing.runner import (
    DurableFunctionTestResult,
    DurableFunctionTestRunner,
    StepOperation,
)
from structlog.testing import capture_logs

from dlpipe.adapters.events import EventBus
from dlpipe.bootstrap.orchestrator import build_flow, day_deadline
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.clock import ms_from_iso
from dlpipe.domain.feeds import Feed
from dlpipe.domain.handoff_events import DETAIL_SCHEMA, HandoffEvent
from dlpipe.services.orchestrator.announce import DayDeadline, EventSender, feed_deadline
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.fakes.events import FakeEventBus
from tests.fakes.provider import FakeLister, descriptor
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable, FakeQueue
from tests.support import ManualClock

DAY = "2026-02-28"
INTERVAL_S = 300
# The day is due at 06:00 UTC the next morning; the first check runs at 05:55.
DEADLINE = DayDeadline("06:00", "UTC", 1)
START_MS = ms_from_iso("2026-03-01T05:50:00Z")


class PollsAsTimePasses:
    """The flow, its clock moving one poll interval before each check: the virtual time of the
    durable runner, as the flow's clock sees it."""

    def __init__(self, flow: BatchFlowService, clock: ManualClock) -> None:
        self._flow, self._clock = flow, clock

    def __getattr__(self, name: str) -> Any:
        return getattr(self._flow, name)

    def check_completion(self, batch_id: str, poll_number: int, is_last_poll: bool) -> Any:
        self._clock.advance(INTERVAL_S)
        return self._flow.check_completion(batch_id, poll_number, is_last_poll)


def never_done_flow(events: EventSender) -> PollsAsTimePasses:
    """A day whose one file nobody downloads: it runs until its last poll times it out."""
    clock = ManualClock(START_MS)
    flow = build_flow(
        Settings(),
        jobs=FakeJobsTable(clock),
        batches=FakeBatchesTable(clock),
        provider=FakeLister([descriptor("accounts", DAY)]),
        queue=FakeQueue(),
        clock=clock,
        events=events,
    )
    return PollsAsTimePasses(flow, clock)


def run(flow: object, *, max_polls: int, deadline: DayDeadline | None) -> DurableFunctionTestResult:
    handler = build_durable_handler(
        lambda: flow,  # type: ignore[arg-type,return-value]
        poll_interval_seconds=INTERVAL_S,
        max_polls=max_polls,
        deadline=deadline,
    )
    with DurableFunctionTestRunner(handler=handler, skip_time=True) as runner:
        outcome: DurableFunctionTestResult = runner.run(
            input=json.dumps({"date": DAY}), execution_timeout=60
        )
    return outcome


def step_names(outcome: DurableFunctionTestResult) -> list[str]:
    return [op.name or "" for op in outcome.operations if isinstance(op, StepOperation)]


def test_day_late_goes_out_once_after_the_deadline_passes_and_never_again() -> None:
    """Checks at 05:55, 06:00, 06:05, ...: `Day Late` after the third (06:00 itself is on
    time), once, though every later poll replays the history; then `Day Timed Out`."""
    bus = FakeEventBus()
    outcome = run(never_done_flow(bus), max_polls=5, deadline=DEADLINE)
    assert outcome.execution_status is ExecutionStatus.SUCCEEDED, outcome.error
    assert bus.detail_types() == ["Day Late", "Day Timed Out"]
    late = [n for n in step_names(outcome) if n.startswith("day-late")]
    assert late == ["day-late-1", "day-late-2", "day-late-3"]
    detail = bus.sent[0].detail
    jsonschema.validate(detail, DETAIL_SCHEMA)
    assert (detail["status"], detail["deadline_at"]) == ("queued", "2026-03-01T06:00:00.000Z")
    assert detail["counts"]["pending"] == 1
    # The outcome event names the deadline too, so a consumer sees it was missed.
    assert bus.sent[1].detail["deadline_at"] == "2026-03-01T06:00:00.000Z"


def test_without_a_deadline_there_is_no_late_step_and_no_late_event() -> None:
    bus = FakeEventBus()
    outcome = run(never_done_flow(bus), max_polls=3, deadline=None)
    assert bus.detail_types() == ["Day Timed Out"]
    assert not [n for n in step_names(outcome) if n.startswith("day-late")]
    assert bus.sent[0].detail["deadline_at"] is None


@dataclass
class PartialPutEvents:
    """An EventBridge client whose PutEvents fails the entry (`codes`, one per call) before it
    accepts it, as PutEvents answers a partial failure: HTTP 200, FailedEntryCount 1."""

    codes: list[str]
    calls: list[list[dict[str, Any]]] = field(default_factory=list)

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(Entries)
        if self.codes:
            code = self.codes.pop(0)
            return {
                "FailedEntryCount": 1,
                "Entries": [{"ErrorCode": code, "ErrorMessage": "try later"}],
            }
        return {"FailedEntryCount": 0, "Entries": [{"EventId": f"id-{len(self.calls)}"}]}


def publish_attempts(outcome: DurableFunctionTestResult) -> int:
    step = next(
        op
        for op in outcome.operations
        if isinstance(op, StepOperation) and op.name == "publish-outcome-event"
    )
    return int(step.attempt or 0)


def test_a_partially_failed_put_events_sends_the_failed_entry_again() -> None:
    client = PartialPutEvents(["InternalFailure", "ThrottlingException"])
    bus = EventBus(lambda: client, "dlpipe-handoff")
    outcome = run(never_done_flow(bus), max_polls=1, deadline=None)
    assert outcome.execution_status is ExecutionStatus.SUCCEEDED, outcome.error
    assert len(client.calls) == 3
    assert client.calls[0] == client.calls[1] == client.calls[2]  # the same entry, again
    entry = client.calls[0][0]
    assert (entry["Source"], entry["DetailType"], entry["EventBusName"]) == (
        "dlpipe",
        "Day Timed Out",
        "dlpipe-handoff",
    )
    assert publish_attempts(outcome) == 3


def test_an_entry_refused_for_good_fails_the_execution_loudly_never_silently() -> None:
    client = PartialPutEvents(["AccessDeniedException"] * 10)
    with capture_logs() as logs:
        outcome = run(
            never_done_flow(EventBus(lambda: client, "default")), max_polls=1, deadline=None
        )
    assert outcome.execution_status is ExecutionStatus.FAILED
    assert outcome.error is not None
    assert "publish-outcome-event failed" in (outcome.error.message or "")
    assert "AccessDeniedException" in (outcome.error.message or "")
    assert len(client.calls) == 3  # the step's own retries, then no more
    assert any(log["event"] == "batch.event_unsent" for log in logs)


def test_the_sent_entry_is_the_documented_detail_with_its_deterministic_id() -> None:
    bus = FakeEventBus()
    run(never_done_flow(bus), max_polls=1, deadline=None)
    client = PartialPutEvents([])
    EventBus(lambda: client, "default").send(bus.sent[0])
    detail = json.loads(client.calls[0][0]["Detail"])
    jsonschema.validate(detail, DETAIL_SCHEMA)
    assert HandoffEvent("Day Timed Out", detail).event_id == bus.sent[0].event_id


def caught(func: Callable[[], object]) -> BaseException | None:
    try:
        func()
    except Exception as exc:
        return exc
    return None


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("ThrottlingException", "DependencyUnavailableError"),
        ("ValidationException", "AwsRequestError"),
    ],
)
def test_a_refused_entry_is_transient_or_permanent_by_its_code(code: str, error: str) -> None:
    bus = FakeEventBus()
    run(never_done_flow(bus), max_polls=1, deadline=None)
    exc = caught(lambda: EventBus(lambda: PartialPutEvents([code]), "default").send(bus.sent[0]))
    assert type(exc).__name__ == error
    assert code in str(exc)


def test_the_default_feeds_deadline_comes_from_its_two_settings() -> None:
    settings = Settings.from_env(
        {"DLPIPE_DAY_DEADLINE": "09:30", "DLPIPE_DAY_DEADLINE_TIME_ZONE": "Europe/London"}
    )
    assert day_deadline(settings) == DayDeadline("09:30", "Europe/London", 1)
    assert day_deadline(Settings.from_env({})) is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DLPIPE_DAY_DEADLINE": "9:30"}, "DLPIPE_DAY_DEADLINE: '9:30' is not a local time HH:MM"),
        (
            {"DLPIPE_DAY_DEADLINE": "09:30", "DLPIPE_DAY_DEADLINE_TIME_ZONE": "Mars/Base"},
            "DLPIPE_DAY_DEADLINE_TIME_ZONE: 'Mars/Base' is not an IANA time zone",
        ),
    ],
)
def test_a_malformed_deadline_setting_is_one_line_naming_the_variable(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        day_deadline(Settings.from_env(env))
    assert str(raised.value) == message


def test_a_named_feeds_deadline_is_its_own_in_its_time_zone() -> None:
    feed = Feed("vendor-b", "cron(0 5 * * ? *)", "America/New_York", deadline="08:00")
    assert feed_deadline(feed, 1) == DayDeadline("08:00", "America/New_York", 1)
    assert feed_deadline(Feed("vendor-c", "cron(0 5 * * ? *)", "UTC")) is None

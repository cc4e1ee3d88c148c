"""`dlpipe run`'s start through an AWS outage, on a virtual clock: the feed's lookup (SSM, a
ParameterFeeds on a scripted client) and the pre-run checks (check_probes over AwsProbes on
scripted calls) inside dlpipe/cli/run_wait.py's wait. A fault of SQS, DynamoDB or SSM that may
pass is waited out within the AWS outage budget on one line naming the dependency; past the
budget the start ends with the fault's own line; a fault that will not pass ends it at once,
even after one that passed."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from rich.console import Console

from dlpipe.adapters.feed_parameters import ParameterFeeds
from dlpipe.adapters.readiness import AwsProbe, outages_waited_by_caller
from dlpipe.cli.run_wait import OutageBudgets, ready_within_outage
from dlpipe.domain.errors import AwsRequestError, DependencyUnavailableError, NotReadyError
from dlpipe.domain.provider_errors import ProviderUnavailableError
from dlpipe.feed_settings import UnknownFeedError
from dlpipe.services.orchestrator.preflight import check_probes

DAY = "2026-02-28"
URL = "http://127.0.0.1:1"
PATH = "/dlpipe/feeds"
AWS_BUDGET = "AWS outage budget (DLPIPE_AWS_OUTAGE_BUDGET_SECONDS)"
FEED = {
    "provider_base_url": "https://api.vendor-b.example",
    "schedule": "rate(1 day)",
    "time_zone": "UTC",
    "destination_prefix": "vendor-b",
    "token_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:vendor-b-token-AbCdEf",
    "private_key_secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:vendor-b-key-AbCdEf",
}


def client_error(
    code: str, status: int, message: str = "m", operation: str = "GetParameter"
) -> ClientError:
    response = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)  # type: ignore[arg-type]


def throttled(times: int = 1) -> list[Exception | None]:
    """SSM's (or DynamoDB's) throttling answer, `times` times."""
    return [client_error("ThrottlingException", 400, "Rate exceeded") for _ in range(times)]


def failing(times: int) -> list[Exception | None]:
    """SQS's 500, `times` times."""
    return [
        client_error("InternalError", 500, operation="GetQueueAttributes") for _ in range(times)
    ]


@dataclass
class Calls:
    """One AWS operation, scripted: each call raises the next fault (None: it answers), then
    answers; counts the calls."""

    faults: list[Exception | None] = field(default_factory=list)
    answer: Any = None
    calls: int = 0

    def __call__(self, **_: Any) -> Any:
        self.calls += 1
        fault = self.faults.pop(0) if self.faults else None
        if fault is not None:
            raise fault
        return self.answer


@dataclass
class Provider:
    """The provider's listing: unavailable for the first `down` checks."""

    down: int = 0
    dates: list[str] = field(default_factory=list)

    def check_listing(self, date: str) -> None:
        self.dates.append(date)
        if len(self.dates) <= self.down:
            raise ProviderUnavailableError("down", attempts=1, reason="GET /v1/files: HTTP 503")


class Ssm:
    """A boto3 SSM client's get_parameter, scripted: the feed vendor-b's parameter."""

    def __init__(self, faults: list[Exception | None]) -> None:
        value = json.dumps({**FEED, "name": "vendor-b"})
        self.get_parameter = Calls(faults, {"Parameter": {"Value": value}})


@dataclass
class Clock:
    """A virtual clock: sleeping moves it on; the sleeps are recorded."""

    now: float = 0.0
    slept: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Start:
    """run_remote's start: look vendor-b up in SSM, then check DynamoDB, SQS and the provider,
    each AWS call scripted; run within the wait on a virtual clock."""

    def __init__(
        self,
        *,
        ssm: list[Exception | None] | None = None,
        dynamodb: list[Exception | None] | None = None,
        sqs: list[Exception | None] | None = None,
        provider_down: int = 0,
    ) -> None:
        self.ssm = Ssm(ssm or [])
        self.feeds = ParameterFeeds(self.ssm, PATH, reread_s=0.0)
        self.dynamodb, self.sqs = Calls(dynamodb or []), Calls(sqs or [])
        self.provider = Provider(provider_down)
        self.clock = Clock()
        self.stderr = io.StringIO()

    def check(self) -> str:
        feed = self.feeds.feed("vendor-b")
        probes = [
            AwsProbe("dynamodb", URL, "table 'batches'", self.dynamodb),
            AwsProbe("sqs", URL, "the download queue", self.sqs),
        ]
        check_probes(probes, self.provider, URL, DAY)
        return feed.name

    def run(self, aws_s: int = 100, provider_s: int = 7200) -> str:
        return ready_within_outage(
            self.check,
            OutageBudgets(provider_s=provider_s, aws_s=aws_s),
            Console(file=self.stderr, force_terminal=False, width=400),
            sleep=self.clock.sleep,
            monotonic=self.clock.monotonic,
        )

    def calls(self) -> tuple[int, int, int, int]:
        """(GetParameter, DynamoDB, SQS, provider) calls so far."""
        return (
            self.ssm.get_parameter.calls,
            self.dynamodb.calls,
            self.sqs.calls,
            len(self.provider.dates),
        )

    def waiting_lines(self) -> list[str]:
        return [line for line in self.stderr.getvalue().splitlines() if "waiting it out" in line]


PASSING: dict[str, tuple[dict[str, Any], str, tuple[int, int, int, int]]] = {
    # The case's faults (three checks' worth), the dependency named, and the calls made.
    "sqs-500": ({"sqs": failing(3)}, "SQS", (1, 4, 4, 1)),
    "dynamodb-throttled": (
        {"dynamodb": [client_error("ProvisionedThroughputExceededException", 400)] * 3},
        "DynamoDB",
        (1, 4, 1, 1),
    ),
    "dynamodb-reset": (
        {"dynamodb": [ConnectionClosedError(endpoint_url=URL) for _ in range(3)]},
        "DynamoDB",
        (1, 4, 1, 1),
    ),
    "ssm-throttled": ({"ssm": throttled(3)}, "SSM", (4, 1, 1, 1)),
}


@pytest.mark.parametrize("case", list(PASSING))
def test_a_passing_aws_fault_at_the_start_is_waited_out_on_one_line_naming_it(case: str) -> None:
    """Three checks in a row fail: each is tried again after 1 s doubling (the checks' own
    wait is not spent first: one probe call a check), one line names the dependency and the
    100 s budget, and the fourth check's feed is what the start returns."""
    faults, named, calls = PASSING[case]
    start = Start(**{service: list(script) for service, script in faults.items()})
    assert start.run(aws_s=100) == "vendor-b"
    assert start.clock.slept == [1.0, 2.0, 4.0]
    assert start.calls() == calls
    [line] = start.waiting_lines()
    assert f"waiting it out ({named} unavailable), 0 s of the 100 s {AWS_BUDGET} so far" in line


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        ({"ssm": throttled(99)}, "SSM GetParameter: ThrottlingException: Rate exceeded"),
        (
            {"sqs": failing(99)},
            f"sqs at {URL} kept failing the check of the download queue: InternalError: m",
        ),
    ],
    ids=["ssm", "sqs"],
)
def test_past_the_aws_outage_budget_the_start_ends_with_the_faults_own_line(
    faults: dict[str, Any], message: str
) -> None:
    """Never back: checked at 0, 1, 2 and 3 s of a 3 s budget, then one line, the fault's own
    (as the start ended before any wait) saying the budget is spent."""
    start = Start(**faults)
    with pytest.raises(NotReadyError) as ended:
        start.run(aws_s=3)
    assert str(ended.value) == (
        f"{message}: still unavailable after 3 s, the AWS outage budget"
        " (3 s, DLPIPE_AWS_OUTAGE_BUDGET_SECONDS) is spent"
    )
    assert start.clock.slept == [1.0, 1.0, 1.0]
    assert len(start.waiting_lines()) == 1


@pytest.mark.parametrize(
    ("faults", "raised", "message"),
    [
        (
            {"ssm": [*throttled(), client_error("AccessDeniedException", 400)]},
            AwsRequestError,
            f"SSM GetParameter on '{PATH}/vendor-b' refused: AccessDeniedException: m",
        ),
        (
            {"ssm": [*throttled(), client_error("ParameterNotFound", 400)]},
            UnknownFeedError,
            f"feed 'vendor-b' is not configured (no SSM parameter {PATH}/vendor-b)",
        ),
        (
            {"ssm": [*throttled(), EndpointConnectionError(endpoint_url=URL)]},
            DependencyUnavailableError,
            f'SSM GetParameter: EndpointConnectionError: Could not connect to the endpoint URL: "{URL}"',
        ),
        (
            {"sqs": [*failing(1), client_error("QueueDoesNotExist", 400)]},
            NotReadyError,
            f"the download queue does not exist at {URL}",
        ),
        (
            {"dynamodb": [*throttled(), client_error("AccessDeniedException", 400)]},
            NotReadyError,
            f"dynamodb at {URL} refused the check of table 'batches': AccessDeniedException: m",
        ),
    ],
    ids=["ssm-denied", "ssm-no-parameter", "ssm-refused", "sqs-no-queue", "dynamodb-denied"],
)
def test_a_fault_that_will_not_pass_ends_the_start_at_once_even_after_one_that_did(
    faults: dict[str, Any], raised: type[Exception], message: str
) -> None:
    """A passing fault is waited out once; the next check's fault will not pass by itself
    (access denied, a missing parameter or queue, nothing listening at the endpoint): it ends
    the start as it was raised, with no second wait."""
    start = Start(**faults)
    with pytest.raises(raised) as ended:
        start.run(aws_s=100)
    assert (type(ended.value), str(ended.value)) == (raised, message)
    assert start.clock.slept == [1.0]
    assert len(start.waiting_lines()) == 1


def test_each_outage_has_its_own_budget_and_each_dependency_its_own_line() -> None:
    """SSM is throttled for two checks (a 2 s AWS budget), then the provider is down for nine
    (a 10 s provider budget, on a clock of its own from its first failure: counted from SSM's,
    it would be spent at the ninth): two lines, SSM's then the provider's."""
    start = Start(ssm=throttled(2), provider_down=9)
    assert start.run(aws_s=2, provider_s=10) == "vendor-b"
    assert start.clock.slept == [1.0] * 11
    assert start.calls() == (3, 10, 10, 10)
    ssm, provider = start.waiting_lines()
    assert f"(SSM unavailable), 0 s of the 2 s {AWS_BUDGET}" in ssm
    assert "0 s of the 10 s provider outage budget" in provider


def test_on_a_terminal_the_waiting_line_is_rewritten_in_place() -> None:
    """Three failed checks on a terminal: one line, rewritten each time (a carriage return
    and an erase, which rich would drop written in the text), ended when the check passes."""
    start = Start(sqs=failing(3))
    console = Console(file=start.stderr, force_terminal=True, width=400)
    ready_within_outage(
        start.check,
        OutageBudgets(provider_s=7200, aws_s=100),
        console,
        sleep=start.clock.sleep,
        monotonic=start.clock.monotonic,
    )
    written = start.stderr.getvalue()
    assert (written.count("\r\x1b[2K"), written.count("\n")) == (3, 1)
    assert written.endswith(") so far\n")


def probe_raising(fault: Exception) -> tuple[AwsProbe, Calls]:
    calls = Calls([fault])
    return AwsProbe("sqs", URL, "the download queue", calls), calls


@pytest.mark.parametrize(
    "fault",
    [*failing(1), *throttled(), ConnectionClosedError(endpoint_url=URL)],
    ids=["500", "throttled", "reset"],
)
def test_a_probes_passing_fault_reaches_a_waiting_caller_at_once(fault: Exception) -> None:
    """Within outages_waited_by_caller, the checks ask the failing probe once and end with
    NotReadyError caused by the DependencyUnavailableError naming sqs (caused by botocore's
    error); outside it, the probe raises the DependencyUnavailableError as before."""
    probe, calls = probe_raising(fault)
    with outages_waited_by_caller(), pytest.raises(NotReadyError) as ended:
        check_probes([probe], Provider(), URL, DAY)
    unavailable = ended.value.__cause__
    assert isinstance(unavailable, DependencyUnavailableError)
    assert (unavailable.dependency, unavailable.__cause__, calls.calls) == ("sqs", fault, 1)
    probe, _ = probe_raising(fault)
    with pytest.raises(DependencyUnavailableError) as outside:
        probe.check()
    assert type(outside.value) is DependencyUnavailableError


def test_a_long_aws_outage_is_asked_about_every_tenth_of_its_budget_at_most() -> None:
    """SSM throttled for nine checks of a 100 s budget: 1, 2, 4 and 8 s, then 10 s (a tenth of
    the budget) between checks, on one line (off a terminal: a minute has not passed)."""
    start = Start(ssm=throttled(9))
    assert start.run(aws_s=100) == "vendor-b"
    assert start.clock.slept == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, 10.0, 10.0]
    assert len(start.waiting_lines()) == 1

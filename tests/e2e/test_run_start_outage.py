"""`dlpipe run`'s start through an outage of SQS, DynamoDB or SSM (the real console script, the
fault proxy in front of the emulator's endpoint): a fault that may pass is waited out within
the AWS outage budget (DLPIPE_AWS_OUTAGE_BUDGET_SECONDS, shortened here to seconds) on one
line naming the dependency, then the day runs; past the budget the run ends in the fault's own
line; a fault that will not pass ends it at once. Each outage ends after a number of refused
calls, never on a timer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import (
    ENV_ALLOW_HTTP_URLS,
    ENV_AWS_OUTAGE_BUDGET_SECONDS,
    ENV_BATCHES_TABLE,
    ENV_ENDPOINT_URL,
    ENV_ENDPOINT_URL_DYNAMODB,
    ENV_FEEDS_PARAMETER_PATH,
    ENV_JOBS_TABLE,
    ENV_LEASE_SECONDS,
    ENV_MAX_POLLS,
    ENV_PROVIDER_TOKEN,
    ENV_PROVIDER_URL,
    ENV_QUEUE_URL,
    ENV_RESEND_AFTER_SECONDS,
)
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.server import StubProvider
from tests.faults.proxy import FaultProxy
from tests.faults.rules import FaultPlan, Rule
from tests.provider_support import TEST_PROVIDER_TOKEN, StubFactory
from tests.support import unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
DLPIPE = Path(sys.executable).with_name("dlpipe")
# Whose endpoint the proxy stands in front of, and the call of the start it refuses.
UPSTREAM = {"sqs": ENV_ENDPOINT_URL, "dynamodb": ENV_ENDPOINT_URL_DYNAMODB, "ssm": ENV_ENDPOINT_URL}
OPERATION = {"sqs": "GetQueueAttributes", "dynamodb": "GetItem", "ssm": "GetParameter"}
NAMED = {"sqs": "SQS", "dynamodb": "DynamoDB", "ssm": "SSM"}
INJECTED = "injected by the fault proxy"


@pytest.fixture
def queue_url(clients: AwsClients) -> Iterator[str]:
    url = clients.sqs.create_queue(QueueName=f"start-outage-{uuid.uuid4().hex[:16]}")["QueueUrl"]
    yield url
    clients.sqs.delete_queue(QueueUrl=url)


class Run:
    """`dlpipe run` of an empty day (it completes at the first check, polled every second),
    one service reached through a fault proxy applying `rules` to the start's call of it.
    Through SSM, the day is feed vendor-b's, whose parameter the test writes."""

    def __init__(
        self,
        tmp_path: Path,
        aws_env: dict[str, str],
        provisioned: Provisioned,
        queue_url: str,
        stub: StubProvider,
    ) -> None:
        self.tmp_path, self.aws_env = tmp_path, aws_env
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_EC2_METADATA_DISABLED": "true",
            **aws_env,
            ENV_QUEUE_URL: queue_url,
            ENV_JOBS_TABLE: provisioned.jobs_table,
            ENV_BATCHES_TABLE: provisioned.batches_table,
            ENV_PROVIDER_URL: stub.base_url,
            ENV_PROVIDER_TOKEN: TEST_PROVIDER_TOKEN,
            ENV_ALLOW_HTTP_URLS: "true",
            ENV_MAX_POLLS: "12",
            ENV_LEASE_SECONDS: "1",
            ENV_RESEND_AFTER_SECONDS: "1",
            **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},  # the code under test
        }
        self.stub = stub
        self.args = ["--date", unique_day(), "--poll-interval", "1"]

    def named_feed(self, clients: AwsClients) -> str:
        """Feed vendor-b, in an SSM parameter under a path of its own; returns the path."""
        token = self.tmp_path / "vendor-b.token"
        token.write_text(TEST_PROVIDER_TOKEN)
        path = f"/t{uuid.uuid4().hex[:10]}-dlpipe/feeds"
        feed = {
            "name": "vendor-b",
            "provider_base_url": self.stub.base_url,
            "token_secret": f"file:{token}",
            "private_key_secret": f"file:{token}",
            "schedule": "rate(1 day)",
            "time_zone": "UTC",
            "destination_prefix": "vendor-b",
            "max_polls": 12,
        }
        clients.ssm.put_parameter(
            Name=f"{path}/vendor-b", Value=json.dumps(feed), Type="String", Overwrite=True
        )
        self.env[ENV_FEEDS_PARAMETER_PATH] = path
        self.args += ["--feed", "vendor-b"]
        return path

    def through(
        self, service: str, rules: list[Rule], budget_s: int
    ) -> tuple[subprocess.CompletedProcess[str], FaultProxy]:
        proxy = FaultProxy(self.aws_env[UPSTREAM[service]], FaultPlan(rules))
        with proxy.running():
            env = {
                **self.env,
                f"AWS_ENDPOINT_URL_{service.upper()}": proxy.url,
                ENV_AWS_OUTAGE_BUDGET_SECONDS: str(budget_s),
            }
            done = subprocess.run(
                [str(DLPIPE), "run", *self.args],
                env=env, cwd=self.tmp_path, capture_output=True, text=True, timeout=120,
                check=False,
            )  # fmt: skip
        assert "Traceback" not in done.stderr, done.stderr
        return done, proxy


@pytest.fixture
def start(
    tmp_path: Path,
    aws_env: dict[str, str],
    provisioned: Provisioned,
    queue_url: str,
    stub_factory: StubFactory,
    clients: AwsClients,
) -> tuple[Run, AwsClients]:
    """The run, on a stub provider serving an empty day, and the emulator's clients."""
    return Run(tmp_path, aws_env, provisioned, queue_url, stub_factory([])), clients


def waiting_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "waiting it out" in line]


def refusing(
    service: str, fault: str, count: int | None = None, status: int | None = None, code: str = ""
) -> Rule:
    """`fault` for the start's call of `service` (its first `count` calls; None: every one);
    an `error` answers `status` and `code` (default: 500 InternalError)."""
    operations = frozenset({OPERATION[service]})
    return Rule(service, fault, operations, count=count, status=status, code=code or None)


@pytest.mark.parametrize(
    ("service", "fault"),
    [("sqs", "error"), ("dynamodb", "throttle"), ("dynamodb", "reset"), ("ssm", "throttle")],
    ids=["sqs-500", "dynamodb-throttled", "dynamodb-reset", "ssm-throttled"],
)
def test_a_short_outage_at_the_start_is_waited_out_on_one_line_and_the_day_runs(
    service: str, fault: str, start: tuple[Run, AwsClients]
) -> None:
    """The start's call of the service is refused four times (two checks of the probes' two
    attempts each: more than the client's own retries absorb): the run says once that it waits
    for that service, within the 10 s AWS outage budget, and the day completes."""
    run, clients = start
    if service == "ssm":
        run.named_feed(clients)
    done, proxy = run.through(service, [refusing(service, fault, count=4)], budget_s=10)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed", result
    [line] = waiting_lines(done.stderr)
    assert f"waiting it out ({NAMED[service]} unavailable), " in line, line
    assert "of the 10 s AWS outage budget (DLPIPE_AWS_OUTAGE_BUDGET_SECONDS) so far" in line, line
    assert proxy.plan.fired_count(fault, OPERATION[service]) == 4
    # A third check passed: the call answered once the outage was over.
    assert proxy.requests[f"{service}.{OPERATION[service]}"] > 4, proxy.requests
    if service == "ssm":  # the feed read once, then the day's steps found it read
        assert proxy.requests["ssm.GetParameter"] == 5, proxy.requests
        assert result["batch_id"].startswith("vendor-b.batch-"), result


@pytest.mark.parametrize(
    ("service", "fault", "message"),
    [
        (
            "ssm",
            "throttle",
            f"dlpipe: SSM GetParameter: ThrottlingException: {INJECTED} (ThrottlingException)",
        ),
        (
            "sqs",
            "error",
            "dlpipe: sqs at {url} kept failing the check of the download queue: InternalError:"
            f" {INJECTED} (InternalError)",
        ),
    ],
    ids=["ssm-throttled", "sqs-500"],
)
def test_an_outage_past_the_budget_ends_the_run_in_the_faults_own_line(
    service: str, fault: str, message: str, start: tuple[Run, AwsClients]
) -> None:
    """Never back, with a 2 s budget: one waiting line, then exit 1 with the fault's own line
    saying the AWS outage budget is spent, after more than one check."""
    run, clients = start
    if service == "ssm":
        run.named_feed(clients)
    done, proxy = run.through(service, [refusing(service, fault)], budget_s=2)
    assert done.returncode == 1, done.stderr
    assert len(waiting_lines(done.stderr)) == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2, done.stderr  # the waiting line, then the run's end
    assert lines[-1].startswith(f"{message.format(url=proxy.url)}: still unavailable after "), lines
    assert lines[-1].endswith(
        "the AWS outage budget (2 s, DLPIPE_AWS_OUTAGE_BUDGET_SECONDS) is spent"
    ), lines
    assert proxy.plan.fired_count(fault, OPERATION[service]) > 2, proxy.plan.log
    assert run.stub.request_count == 0  # the day never started


@pytest.mark.parametrize(
    ("service", "denied", "message"),
    [
        (
            "ssm",
            {"status": 400, "code": "AccessDeniedException"},
            "dlpipe: SSM GetParameter on '{path}/vendor-b' refused: AccessDeniedException:"
            f" {INJECTED} (AccessDeniedException)",
        ),
        (
            "sqs",
            {"status": 403, "code": "AccessDenied"},
            "dlpipe: sqs at {url} refused the check of the download queue: AccessDenied:"
            f" {INJECTED} (AccessDenied)",
        ),
    ],
    ids=["ssm-denied", "sqs-denied"],
)
def test_a_fault_that_will_not_pass_ends_the_run_at_once_even_after_one_that_did(
    service: str, denied: dict[str, Any], message: str, start: tuple[Run, AwsClients]
) -> None:
    """Two refusals that may pass (one check's two attempts), then access denied: one waiting
    line, then exit 1 at once in the refusal's own line, the denied call made once."""
    run, clients = start
    path = run.named_feed(clients) if service == "ssm" else ""
    passing = refusing(service, "throttle" if service == "ssm" else "error", count=2)
    rules = [passing, refusing(service, "error", **denied)]
    done, proxy = run.through(service, rules, budget_s=10)
    assert done.returncode == 1, done.stderr
    assert len(waiting_lines(done.stderr)) == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[1:] == [message.format(path=path, url=proxy.url)], done.stderr
    assert proxy.requests[f"{service}.{OPERATION[service]}"] == 3, proxy.requests
    assert run.stub.request_count == 0

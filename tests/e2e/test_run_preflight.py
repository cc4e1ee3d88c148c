"""`dlpipe run`'s checks before a day (the real console script): a passing fault of SQS or
DynamoDB is waited out for a few seconds, a misconfiguration is refused at once in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import (
    ENV_ALLOW_HTTP_URLS,
    ENV_BATCHES_TABLE,
    ENV_FEEDS_FILE,
    ENV_JOBS_TABLE,
    ENV_LEASE_SECONDS,
    ENV_MAX_POLLS,
    ENV_PROVIDER_TOKEN,
    ENV_PROVIDER_URL,
    ENV_QUEUE_URL,
    ENV_RESEND_AFTER_SECONDS,
)
from dlpipe.local.provision import Provisioned
from tests.integration.failing_endpoint import FailingEndpoint
from tests.provider_support import TEST_PROVIDER_TOKEN, StubFactory, back_after
from tests.support import unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
DLPIPE = Path(sys.executable).with_name("dlpipe")


@pytest.fixture
def queue_url(clients: AwsClients) -> Iterator[str]:
    url = clients.sqs.create_queue(QueueName=f"preflight-{uuid.uuid4().hex[:16]}")["QueueUrl"]
    yield url
    clients.sqs.delete_queue(QueueUrl=url)


def run_env(
    tmp_path: Path, aws_env: dict[str, str], provisioned: Provisioned, queue: str, provider: str
) -> dict[str, str]:
    """A day of no files (it completes at the first check), polled every second."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
        **aws_env,
        ENV_QUEUE_URL: queue,
        ENV_JOBS_TABLE: provisioned.jobs_table,
        ENV_BATCHES_TABLE: provisioned.batches_table,
        ENV_PROVIDER_URL: provider,
        ENV_PROVIDER_TOKEN: TEST_PROVIDER_TOKEN,
        ENV_ALLOW_HTTP_URLS: "true",
        ENV_MAX_POLLS: "12",
        ENV_LEASE_SECONDS: "1",
        ENV_RESEND_AFTER_SECONDS: "1",
    }


def dlpipe_run(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DLPIPE), "run", "--date", unique_day(), "--poll-interval", "1"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("service", ["sqs", "dynamodb"])
def test_a_few_500s_at_start_are_waited_out_and_the_day_runs(
    service: str,
    tmp_path: Path,
    aws_env: dict[str, str],
    provisioned: Provisioned,
    queue_url: str,
    stub_factory: StubFactory,
) -> None:
    """SQS (or DynamoDB) answers its first 3 requests with 500 (more than botocore's own second
    try absorbs): the check waits, passes, and the day runs to completed."""
    stub = stub_factory([])
    real = aws_env["AWS_ENDPOINT_URL_DYNAMODB" if service == "dynamodb" else "AWS_ENDPOINT_URL"]
    with FailingEndpoint(real, fail_first=3) as endpoint:
        env = run_env(tmp_path, aws_env, provisioned, queue_url, stub.base_url)
        env[f"AWS_ENDPOINT_URL_{service.upper()}"] = endpoint.url
        done = dlpipe_run(env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    assert endpoint.failed == 3


def test_a_missing_queue_is_refused_at_once_in_one_line(
    tmp_path: Path,
    aws_env: dict[str, str],
    provisioned: Provisioned,
    queue_url: str,
    stub_factory: StubFactory,
) -> None:
    """A queue that does not exist is a misconfiguration: no waiting, one line, exit 1."""
    stub = stub_factory([])
    env = run_env(tmp_path, aws_env, provisioned, f"{queue_url}-missing", stub.base_url)
    done = dlpipe_run(env, tmp_path)
    assert (done.returncode, "Traceback" in done.stderr) == (1, False), done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "the download queue does not exist at" in done.stderr
    assert stub.request_count == 0  # refused before the provider was asked anything


@pytest.mark.parametrize(
    ("feed_interval_s", "flags"), [(10, []), (90, ["--poll-interval", "1"])], ids=["own", "flag"]
)
def test_a_named_feeds_day_is_checked_and_polled_on_that_feeds_own_provider_and_polling(
    feed_interval_s: int,
    flags: list[str],
    tmp_path: Path,
    aws_env: dict[str, str],
    provisioned: Provisioned,
    queue_url: str,
    stub_factory: StubFactory,
    rsa_keypair: tuple[bytes, bytes],
) -> None:
    """`run --feed vendor-b`: the process's provider is unreachable and its token wrong, the
    feeds file's vendor-b names a stub with its token file and a 10 s polling (the least a
    feed may set): the pre-run checks and the day use vendor-b's, so its (empty) day completes
    within seconds, keyed by the feed. `--poll-interval 1` overrides a feed's own 90 s too."""
    stub = stub_factory([])
    token = tmp_path / "vendor-b.token"
    token.write_text(TEST_PROVIDER_TOKEN)
    Path(f"{token}.pem").write_bytes(rsa_keypair[0])  # a feeds file's secret files must exist
    feeds = tmp_path / "feeds.toml"
    feeds.write_text(
        "[feeds.vendor-b]\n"
        f'provider_base_url = "{stub.base_url}"\n'
        f'token_secret = "file:{token}"\nprivate_key_secret = "file:{token}.pem"\n'
        'schedule = "rate(1 day)"\ntime_zone = "UTC"\ndestination_prefix = "vendor-b"\n'
        f"poll_interval_seconds = {feed_interval_s}\nmax_polls = 12\n"
    )
    env = run_env(tmp_path, aws_env, provisioned, queue_url, "http://127.0.0.1:1")
    env |= {ENV_PROVIDER_TOKEN: "not-vendor-b-s", ENV_FEEDS_FILE: str(feeds)}
    done = subprocess.run(
        [str(DLPIPE), "run", "--date", unique_day(), "--feed", "vendor-b", *flags],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed", result
    assert result["batch_id"].startswith("vendor-b.batch-"), result
    # Polled on the feed's own interval, or the flag's: never the process's 90 s default.
    assert f"first check in {1 if flags else feed_interval_s}s" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("down_for_calls", "budget_s"), [(2, 20), (None, 3)], ids=["back", "spent"]
)
def test_run_waits_out_a_provider_outage_at_the_start_within_its_budget(
    down_for_calls: int | None,
    budget_s: int,
    tmp_path: Path,
    aws_env: dict[str, str],
    provisioned: Provisioned,
    queue_url: str,
    stub_factory: StubFactory,
) -> None:
    """The provider answers 5xx to every call: back after it refused the run's first two
    checks, `run` waits (one line saying so, naming the budget) and the day completes; never
    back, with a 3 s budget, `run` stops in one line saying the budget is spent, exit 1
    (before: it refused at once)."""
    stub = stub_factory([])
    stub.faults.set(error_rate=1.0)
    env = run_env(tmp_path, aws_env, provisioned, queue_url, stub.base_url)
    env["DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS"] = str(budget_s)
    env |= {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}  # the code under test
    stop = threading.Event()
    back = back_after(stub, down_for_calls, stop) if down_for_calls else threading.Event()
    try:
        done = dlpipe_run(env, tmp_path)
        came_back = back.is_set()
    finally:
        stop.set()
    assert "Traceback" not in done.stderr, done.stderr
    waiting = [line for line in done.stderr.splitlines() if "waiting it out" in line]
    assert len(waiting) == 1, done.stderr
    assert f"of the {budget_s} s provider outage budget" in waiting[0], waiting
    if down_for_calls is not None:
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["status"] == "completed"
        assert done.stdout.count("\n") == 1, done.stdout  # one JSON line, not a 25-line blob
        assert came_back, "the day completed before the provider was back"
        # Each pre-run check asks the provider once: both down checks, then the one that passed.
        assert stub.request_count > down_for_calls, stub.request_count
    else:
        assert done.returncode == 1, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("dlpipe: cannot reach the provider at "), last
        assert f"the provider outage budget ({budget_s} s," in last, last
        assert stub.request_count > 1, "refused at once, nothing waited out"

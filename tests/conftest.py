"""Shared fixtures: one local AWS (moto + DynamoDB Local) per test session, reached over HTTP."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlpipe import metrics
from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.config import Settings
from dlpipe.local.emulator import LocalAws
from dlpipe.local.provision import Provisioned, provision
from dlpipe.log import configure_logging, logging_config, restore_logging
from tests.support import ManualClock

# Records every AWS call of the session for the IAM checker (tests/iam/), which runs last.
pytest_plugins = ["tests.iam.plugin"]

# Every DynamoDB Local a test starts (the session's, and those of the `dlpipe local up` and
# `run --local` stacks the e2e tests start) compiles with the JVM's quick compiler only: a
# test's emulator lives seconds to minutes, too short for the optimising compiler to pay for
# its own CPU. Measured on 2 cores, start plus 200 writes: 3.1 -> 1.6 CPU-s of the JVM; 3,000
# conditional writes and 300 index COUNTs: 5.1-8.4 -> 3.6-3.9 CPU-s. `java` reads the variable
# itself (JDK_JAVA_OPTIONS); `make run` and `make bench` keep the JVM's defaults.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")


def pytest_configure(config: pytest.Config) -> None:
    """dlpipe's logging installed first, as in a process whose first logger use installs it:
    a test that captures logs before any dlpipe logger ran must not leave structlog configured
    with its defaults (capture_logs restores what it found)."""
    configure_logging()


# The tiers in the order a run starts them: the ones whose tests take seconds to minutes each
# first, so that pytest-xdist hands out the second-long unit tests last and no worker is left
# with a minute-long scenario while the others idle at the end of the run.
_TIER_ORDER = ("e2e", "reliability", "faults", "property", "integration", "ui", "infra", "iam")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the collected tests by tier (a stable sort: a module's tests stay together and
    in their own order; tiers not named, the unit tests, come last)."""

    def tier(item: pytest.Item) -> int:
        parts = item.path.relative_to(Path(__file__).parent).parts
        return _TIER_ORDER.index(parts[0]) if parts[0] in _TIER_ORDER else len(_TIER_ORDER)

    items.sort(key=tier)


@pytest.fixture(scope="session")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAws]:
    """The local AWS: a moto server (S3, SQS, Secrets Manager) and AWS's DynamoDB Local, child
    processes on 127.0.0.1, stopped by PID at the end of the session."""
    emu = LocalAws(log_dir=str(tmp_path_factory.mktemp("emulator")))
    emu.start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture(scope="session")
def aws_env(emulator: LocalAws) -> Iterator[dict[str, str]]:
    """Point boto3 at the local AWS (dummy credentials) for the whole session."""
    env = emulator.environment()
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
            patch.delenv(key, raising=False)
        yield env


@pytest.fixture(scope="session")
def clients(aws_env: dict[str, str]) -> AwsClients:
    """boto3 clients bound to the emulator."""
    return AwsClients(Settings.from_env(os.environ))


@pytest.fixture(scope="session")
def provisioned(clients: AwsClients) -> Provisioned:
    """Tables, queues and buckets created from terraform/ once per session."""
    return provision(clients)


@pytest.fixture
def clock() -> ManualClock:
    """A clock that stands still until a test moves it."""
    return ManualClock()


@pytest.fixture
def jobs(clients: AwsClients, provisioned: Provisioned, clock: ManualClock) -> JobsTable:
    """The jobs table on the emulator, on the test's clock."""
    return JobsTable(clients.dynamodb, provisioned.jobs_table, clock)


@pytest.fixture
def batches(clients: AwsClients, provisioned: Provisioned, clock: ManualClock) -> BatchesTable:
    """The batches table on the emulator, on the test's clock."""
    return BatchesTable(clients.dynamodb, provisioned.batches_table, clock)


@pytest.fixture
def entity() -> str:
    """An entity name no other test uses, so tests share tables without sharing items."""
    return f"ent{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository's top folder."""
    return Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _process_wide_output_put_back() -> Iterator[None]:
    """A command a test runs in-process (CliRunner, main()) configures the process's logging
    (an operator command logs warnings only) and metric sink; put both back after each test,
    so the next test in the same worker sees its own output, as it would in a process of its own."""
    logs, sink = logging_config(), metrics.set_sink(metrics.stdout_line)
    metrics.set_sink(sink)
    yield
    restore_logging(logs)
    metrics.set_sink(sink)

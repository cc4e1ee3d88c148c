"""Fixtures of the ops CLI tests: a Scan guard, private queues, a far-past clock, the CLI runner.

The tables and the bucket are shared by the worker's whole session, so every ops test runs at
its own far-past moment (the StatusIndex is global) and deletes what it seeded.
"""

from __future__ import annotations

import itertools
import json
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import click
import pytest
from structlog.testing import capture_logs

import dlpipe.cli.main
from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.cli.ops.commands import COMMANDS
from dlpipe.config import Settings
from dlpipe.domain.messages import JobMessage, decode_message
from dlpipe.domain.model import Batch, FileJob
from dlpipe.local.provision import Provisioned
from dlpipe.services.ops.context import OpsContext
from tests.support import ManualClock, make_batch, make_job

pytestmark = pytest.mark.integration
DAY_MS = 86_400_000


@dataclass
class Run:
    """What one `dlpipe ...` invocation printed and logged, and its exit code."""

    code: int
    out: str
    err: str
    logs: list[dict[str, Any]]

    def json(self) -> Any:
        """stdout parsed as one JSON document."""
        return json.loads(self.out)


@dataclass
class World:
    """One test's private slice of the emulator: its date, clock, queues and seeded items."""

    clients: AwsClients
    ops: OpsContext
    clock: ManualClock
    jobs: JobsTable
    batches: BatchesTable
    day: str
    created_jobs: list[str] = field(default_factory=list)
    created_batches: list[str] = field(default_factory=list)

    def rewired(
        self, settings: Settings | None = None, clients: AwsClients | None = None
    ) -> OpsContext:
        """This world's OpsContext wired again (bootstrap's wiring) on other settings or clients."""
        return build_ops_context(
            settings or self.ops.settings,
            clients or self.clients,
            clock=self.clock,
            starter=self.ops.starter,
            receive_wait_seconds=self.ops.receive_wait_seconds,
        )

    def job(self, entity: str, **changes: Any) -> FileJob:
        """Create a job of this world's day at the clock's time."""
        job = self.jobs.create(make_job(entity, self.day, now_ms=self.clock.now, **changes))
        self.created_jobs.append(job.file_id)
        return job

    def batch(self, **changes: Any) -> Batch:
        """Create a batch of this world's day at the clock's time."""
        batch = self.batches.create(make_batch(self.day, now_ms=self.clock.now, **changes))
        self.created_batches.append(batch.batch_id)
        return batch

    def raw_job(self, file_id: str) -> dict[str, Any]:
        """The job's item exactly as DynamoDB holds it."""
        key = {"FileID": {"S": file_id}}
        return self.clients.dynamodb.get_item(TableName=self.jobs.table_name, Key=key)["Item"]

    def drain(self, queue_url: str) -> list[str]:
        """Receive and delete every message body on `queue_url`."""
        bodies: list[str] = []
        while True:
            got = self.clients.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
            messages = got.get("Messages", [])
            if not messages:
                return bodies
            for message in messages:
                bodies.append(message["Body"])
                self.clients.sqs.delete_message(
                    QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"]
                )

    def queued(self) -> list[JobMessage]:
        """The job messages now on this world's download queue (consumed)."""
        return [decode_message(body) for body in self.drain(self.ops.settings.queue_url or "")]


@pytest.fixture
def no_scan(clients: AwsClients) -> Iterator[list[str]]:
    """Fail the test if any DynamoDB Scan goes through the session's clients."""
    calls: list[str] = []

    def refuse(model: Any, **_: Any) -> None:
        calls.append(model.name)
        raise AssertionError(f"{model.name} called: ops must query an index")

    clients.dynamodb.meta.events.register("before-call.dynamodb.Scan", refuse)
    yield calls
    clients.dynamodb.meta.events.unregister("before-call.dynamodb.Scan", refuse)
    assert calls == [], f"{calls} called"


FAR_PAST_DAYS = 28 * 365  # 1971..1998: polling dates no other test uses
_DAYS = itertools.count(random.randrange(0, FAR_PAST_DAYS) // 3 * 3, 3)


def far_past_day_ms() -> int:
    """The start of a far-past day that no other world of this process (so of its emulators)
    gets, with the day before and after free too (audits look at a date range): the worlds step
    through the days by three, and the bucket keeps every test's manifests."""
    start = int(datetime(1971, 1, 1, tzinfo=UTC).timestamp() * 1000)
    return start + next(_DAYS) % (FAR_PAST_DAYS // 3 * 3) * DAY_MS


@pytest.fixture
def world(clients: AwsClients, provisioned: Provisioned, no_scan: list[str]) -> Iterator[World]:
    """A far-past day and clock, a private queue and DLQ, and cleanup of what the test seeded."""
    day_ms = far_past_day_ms()
    clock = ManualClock(day_ms + 10 * 3_600_000)  # 10:00 UTC the day after the polling date
    day = datetime.fromtimestamp((day_ms - DAY_MS) / 1000, tz=UTC).date().isoformat()
    suffix = uuid.uuid4().hex[:12]
    queue = clients.sqs.create_queue(QueueName=f"ops-test-{suffix}")["QueueUrl"]
    dlq = clients.sqs.create_queue(QueueName=f"ops-test-{suffix}-dlq")["QueueUrl"]
    settings = replace(
        Settings.from_env(),
        jobs_table=provisioned.jobs_table,
        batches_table=provisioned.batches_table,
        queue_url=queue,
        dlq_url=dlq,
        orchestrator_arn=None,
    )
    ops = build_ops_context(settings, clients, clock=clock, receive_wait_seconds=0)
    jobs = JobsTable(clients.dynamodb, settings.jobs_table, clock)  # the test's own seeding
    batches = BatchesTable(clients.dynamodb, settings.batches_table, clock)
    w = World(clients, ops, clock, jobs, batches, day)
    yield w
    for file_id in w.created_jobs:
        clients.dynamodb.delete_item(TableName=w.jobs.table_name, Key={"FileID": {"S": file_id}})
    for batch_id in w.created_batches:
        clients.dynamodb.delete_item(
            TableName=w.batches.table_name, Key={"BatchID": {"S": batch_id}}
        )
    for url in (queue, dlq):
        clients.sqs.delete_queue(QueueUrl=url)


CliRunner = Callable[..., Run]


@pytest.fixture
def dlpipe_cli(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> CliRunner:
    """Run `dlpipe ARGS` through dlpipe.cli.main.main's real error rendering, with our commands."""
    monkeypatch.setenv("COLUMNS", "250")  # every column shown (at 80 some are left out)

    def run(*args: str, obj: OpsContext | None = None, from_env: bool = False) -> Run:
        """`from_env`: no injected context, the commands build theirs from the environment."""
        root = click.Group("dlpipe", commands=list(COMMANDS))
        context = None if from_env else (obj or world.ops)

        def cli(standalone_mode: bool) -> Any:
            return root.main(
                args=list(args), prog_name="dlpipe", obj=context, standalone_mode=standalone_mode
            )

        monkeypatch.setattr(dlpipe.cli.main, "cli", cli)
        code = 0
        capsys.readouterr()  # what the test's own set-up printed (its logs) is not this run's
        with capture_logs() as logs:
            try:
                dlpipe.cli.main.main()
            except SystemExit as exit_:
                code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        return Run(code, out, err, logs)

    return run


def test_a_scan_through_the_session_clients_is_caught(
    clients: AwsClients, provisioned: Provisioned, no_scan: list[str]
) -> None:
    """The Scan guard notices a Scan, so the other ops tests can rely on it."""
    with pytest.raises(AssertionError, match="must query an index"):
        clients.dynamodb.scan(TableName=provisioned.jobs_table, Limit=1)
    assert no_scan == ["Scan"]
    no_scan.clear()

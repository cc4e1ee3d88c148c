"""`dlpipe status` says how much work waits on the download queue, how long the oldest waited,
and warns when no worker takes it (emulator tables and queue, over HTTP)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import BatchStatus
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures, shared as is

THRESHOLD_S = 60


def _waiting_job(world: World, entity: str, waited_s: int) -> str:
    """An available job made `waited_s` before now, its message on the world's queue."""
    world.clock.advance(-waited_s)
    job = world.job(entity)
    world.clock.advance(waited_s)
    body = encode_message(JobMessage(job.file_id, job.batch_id))
    world.clients.sqs.send_message(QueueUrl=world.ops.settings.queue_url or "", MessageBody=body)
    return job.file_id


@pytest.fixture
def short_threshold(world: World) -> World:
    """The world with a one-minute idle threshold."""
    world.ops.settings = replace(world.ops.settings, idle_warning_seconds=THRESHOLD_S)
    return world


def test_status_json_gives_queue_depth_oldest_wait_and_the_idle_warning(
    short_threshold: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """A message waits, none is in flight, the job waited 10 min: the warning is in --json."""
    _waiting_job(short_threshold, entity, waited_s=600)
    status = dlpipe_cli("status", "--date", short_threshold.day, "--json")
    assert status.code == 1  # a date with no batch
    assert "no batch for" in status.err
    queue = status.json()["queue"]
    assert (queue["visible"], queue["in_flight"]) == (1, 0)
    # StatusIndex is shared by the session: an older available job elsewhere only adds age.
    assert queue["oldest_available_age_s"] >= 600
    assert "StatusIndex" in queue["oldest_available_from"]
    assert status.json()["idle_warning"].startswith("no worker has received a message for ")


def test_status_text_shows_the_queue_and_the_warning(
    short_threshold: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """The text screen has the queue line and the warning line."""
    _waiting_job(short_threshold, entity, waited_s=600)
    status = dlpipe_cli("status", "--date", short_threshold.day)
    assert status.code == 1  # a date with no batch
    assert "no batch for" in status.err
    assert "download queue: 1 waiting, 0 in flight" in status.out
    assert "WARNING: no worker has received a message for " in status.out


def test_no_warning_while_a_worker_holds_a_message(
    short_threshold: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """A message in flight means a worker consumes: depth shown, no warning."""
    _waiting_job(short_threshold, entity, waited_s=600)
    _waiting_job(short_threshold, f"{entity}b", waited_s=600)
    url = short_threshold.ops.settings.queue_url or ""
    short_threshold.clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)
    status = dlpipe_cli("status", "--date", short_threshold.day, "--json")
    assert status.code == 1  # a date with no batch
    assert "no batch for" in status.err
    assert status.json()["queue"]["in_flight"] == 1
    assert status.json()["idle_warning"] is None


def test_the_large_file_queue_counts_with_the_main_one(
    short_threshold: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """A message held from the large-file queue is work in flight: depth is the queues' sum."""
    sqs = short_threshold.clients.sqs
    large = sqs.create_queue(QueueName=f"ops-large-{entity}")["QueueUrl"]
    try:
        ops = short_threshold.ops
        ops.settings = replace(ops.settings, large_queue_url=large)
        _waiting_job(short_threshold, entity, waited_s=600)
        sqs.send_message(QueueUrl=large, MessageBody="held by a worker")
        sqs.receive_message(QueueUrl=large, MaxNumberOfMessages=1)
        status = dlpipe_cli("status", "--date", short_threshold.day, "--json")
        assert status.code == 1  # a date with no batch
        assert "no batch for" in status.err
        assert (status.json()["queue"]["visible"], status.json()["queue"]["in_flight"]) == (1, 1)
        assert status.json()["idle_warning"] is None
    finally:
        sqs.delete_queue(QueueUrl=large)


def test_status_of_a_date_without_a_batch_names_the_command_that_starts_it_here(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """No orchestrator ARN (the local stack): `dlpipe run --date D`, in text and --json."""
    text = dlpipe_cli("status", "--date", "1912-04-15")
    assert text.code == 1  # a date with no batch
    assert "no batch for" in text.err
    assert "start one:\ndlpipe run --date 1912-04-15\n" in text.out
    as_json = dlpipe_cli("status", "--date", "1912-04-15", "--json")
    assert as_json.json()["start_command"] == "dlpipe run --date 1912-04-15"


def test_status_names_backfill_where_an_orchestrator_is_deployed(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """With DLPIPE_ORCHESTRATOR_ARN set, backfill starts the date."""
    arn = "arn:aws:lambda:eu-west-1:123456789012:function:dlpipe-orchestrator:live"
    world.ops.settings = replace(world.ops.settings, orchestrator_arn=arn)
    run = dlpipe_cli("status", "--date", "1912-04-15", "--json")
    assert run.json()["start_command"] == "dlpipe backfill --from 1912-04-15 --to 1912-04-15"


def test_status_of_a_completed_date_suggests_no_start(world: World, dlpipe_cli: CliRunner) -> None:
    """A date whose batch completed needs no new run."""
    batch = world.batch()
    world.batches.mark_queued(batch.batch_id, set())
    world.batches.finish(batch.batch_id, BatchStatus.COMPLETED)
    run = dlpipe_cli("status", "--date", world.day, "--json")
    assert run.json()["start_command"] is None

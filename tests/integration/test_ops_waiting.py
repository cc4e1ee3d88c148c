"""`dlpipe status` says how much work waits on the download queue, how long the oldest waited,
and warns when no worker takes it (emulator tables and queue, over HTTP)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlpipe.domain.messages import JobMessage, encode_message
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
    assert status.code == 0, status.err
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
    assert status.code == 0, status.err
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
    assert status.code == 0, status.err
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
        assert status.code == 0, status.err
        assert (status.json()["queue"]["visible"], status.json()["queue"]["in_flight"]) == (1, 1)
        assert status.json()["idle_warning"] is None
    finally:
        sqs.delete_queue(QueueUrl=large)

"""`dlpipe dlq redrive` of a dead letter whose job belongs to a batch that has ended, against
the emulator's SQS and DynamoDB: held in the DLQ with the run of the day that repairs it,
nothing written for it, exit 1; the live batch's dead letters are redriven as before."""

from __future__ import annotations

import pytest

from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import BatchStatus, FileJob, JobStatus
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


def _dead(world: World, entity: str, batch_id: str, status: JobStatus) -> FileJob:
    """A job of `batch_id` in `status` (failed or available), and its message in the DLQ."""
    job = world.job(entity, batch_id=batch_id)
    if status is JobStatus.FAILED:
        world.jobs.claim(job.file_id, "w", 60)
        world.jobs.finish_unsuccessfully(job.file_id, "w", JobStatus.FAILED, "timeouts")
    world.clients.sqs.send_message(
        QueueUrl=world.ops.settings.dlq_url or "",
        MessageBody=encode_message(JobMessage(job.file_id, batch_id)),
    )
    return job


def _dlq_depth(world: World) -> int:
    attributes = world.clients.sqs.get_queue_attributes(
        QueueUrl=world.ops.settings.dlq_url or "",
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(v) for v in attributes.values())


def _seed(world: World, entity: str) -> tuple[list[str], str]:
    """A failed and an available dead letter of a failed batch, a failed one of a running
    batch: the ended batch's FileIDs and the running one's."""
    ended = world.batch(status=BatchStatus.FAILED)
    running = world.batch()
    held = [
        _dead(world, f"{entity}ended", ended.batch_id, JobStatus.FAILED).file_id,
        _dead(world, f"{entity}idle", ended.batch_id, JobStatus.AVAILABLE).file_id,
    ]
    return held, _dead(world, f"{entity}live", running.batch_id, JobStatus.FAILED).file_id


def test_redrive_holds_an_ended_batchs_dead_letters_naming_the_run_that_closes_the_day(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """The ended batch's messages stay in the DLQ, their jobs untouched, each with the run of
    the day; the running batch's is requeued and sent; one `dlpipe:` line, exit 1."""
    held, live = _seed(world, entity)
    before = {f: world.raw_job(f) for f in held}
    run = dlpipe_cli("dlq", "redrive", "--json")
    command = f"dlpipe run --date {world.day}"
    assert run.code == 1, run.err
    rows = {m["file_id"]: m for m in run.json()["messages"]}
    assert {f: (rows[f]["outcome"], rows[f]["repair"]) for f in rows} == {
        held[0]: ("held", command),
        held[1]: ("held", command),
        live: ("redriven", None),
    }
    assert all(command in rows[f]["reason"] and "ended failed" in rows[f]["reason"] for f in held)
    assert {f: world.raw_job(f) for f in held} == before
    assert [m.file_id for m in world.queued()] == [live]
    assert world.jobs.require(live).status is JobStatus.AVAILABLE
    assert _dlq_depth(world) == 2
    lines = run.err.strip().splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith("dlpipe: 2 message(s) held in the DLQ: its batch ")
    assert lines[0].endswith(command)


def test_show_and_a_dry_run_say_hold_with_the_run_and_change_nothing(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """`dlq show` plans `hold` for the ended batch's messages; `redrive --dry-run` says it
    would hold them (exit 1: a redrive would not send them) and writes nothing."""
    held, live = _seed(world, entity)
    before = {f: world.raw_job(f) for f in [*held, live]}
    shown = dlpipe_cli("dlq", "show", "--json")
    assert shown.code == 0, shown.err
    actions = {m["file_id"]: m["action"] for m in shown.json()["messages"]}
    assert actions == {held[0]: "hold", held[1]: "hold", live: "requeue+send"}
    dry = dlpipe_cli("dlq", "redrive", "--dry-run", "--json")
    assert dry.code == 1, dry.err
    outcomes = {m["file_id"]: m["outcome"] for m in dry.json()["messages"]}
    assert outcomes == {held[0]: "would hold", held[1]: "would hold", live: "would requeue+send"}
    assert f"dlpipe run --date {world.day}" in dry.err
    assert {f: world.raw_job(f) for f in before} == before
    assert world.queued() == []
    assert _dlq_depth(world) == 3

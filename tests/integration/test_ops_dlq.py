"""`dlpipe dlq show|redrive` against the emulator's SQS: nothing consumed, nothing lost."""

from __future__ import annotations

import pytest

from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import JobStatus
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


def _dead_letter(world: World, body: str) -> None:
    world.clients.sqs.send_message(QueueUrl=world.ops.settings.dlq_url or "", MessageBody=body)


def _dlq_depth(world: World) -> int:
    attributes = world.clients.sqs.get_queue_attributes(
        QueueUrl=world.ops.settings.dlq_url or "",
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def _seed(world: World, entity: str) -> dict[str, str]:
    """One dead letter per kind of job: completed, failed, available, unknown, and a malformed one."""
    batch = world.batch()
    kinds: dict[str, str] = {}
    for kind in ("completed", "failed", "available"):
        job = world.job(f"{entity}{kind}", batch_id=batch.batch_id)
        if kind != "available":
            world.jobs.claim(job.file_id, "w", 60)
        if kind == "completed":
            world.jobs.complete(
                job.file_id, "w", byte_count=1, sha256="0" * 64, destination_key="k"
            )
        if kind == "failed":
            world.jobs.finish_unsuccessfully(job.file_id, "w", JobStatus.FAILED, "timeouts")
        kinds[kind] = job.file_id
        _dead_letter(world, encode_message(JobMessage(job.file_id, batch.batch_id)))
    kinds["unknown"] = f"{entity}unknown-{world.day}"
    _dead_letter(world, encode_message(JobMessage(kinds["unknown"], batch.batch_id)))
    _dead_letter(world, "not json at all")
    return kinds


def test_dlq_show_lists_messages_with_job_status_and_consumes_none(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """dlq show gives each message's FileID, batch, receive count and job status; all stay visible."""
    kinds = _seed(world, entity)
    run = dlpipe_cli("dlq", "show", "--json")
    assert run.code == 0, run.err
    shown = {m["file_id"]: m for m in run.json()["messages"]}
    assert {f: shown[f]["job_status"] for f in kinds.values()} == {
        kinds["completed"]: "completed",
        kinds["failed"]: "failed",
        kinds["available"]: "available",
        kinds["unknown"]: None,
    }
    assert shown[None]["reason"].startswith("malformed")
    assert all(m["receive_count"] >= 1 and m["sent_at"] for m in shown.values())
    again = dlpipe_cli("dlq", "show", "--json")
    assert len(again.json()["messages"]) == 5


def test_dlq_redrive_sends_then_deletes_and_leaves_what_it_cannot_judge(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """Completed: deleted; failed: requeued and sent; available: sent; unknown and malformed: left."""
    kinds = _seed(world, entity)
    run = dlpipe_cli("dlq", "redrive", "--json")
    assert run.code == 0, run.err
    outcomes = {m["file_id"]: m["outcome"] for m in run.json()["messages"]}
    assert outcomes == {
        kinds["completed"]: "deleted",
        kinds["failed"]: "redriven",
        kinds["available"]: "redriven",
        kinds["unknown"]: "left",
        None: "left",
    }
    assert sorted(m.file_id for m in world.queued()) == sorted(
        [kinds["failed"], kinds["available"]]
    )
    assert world.jobs.require(kinds["failed"]).status is JobStatus.AVAILABLE
    assert _dlq_depth(world) == 2
    assert "2 message(s) left in the DLQ" in run.err
    assert {e["event"] for e in run.logs} >= {
        "dlpipe.services.ops.dlq.redriven",
        "dlpipe.services.ops.dlq.deleted",
        "dlpipe.services.ops.dlq.left",
    }


def test_dlq_redrive_dry_run_changes_nothing(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """--dry-run says what it would do; the DLQ, the main queue and the jobs are untouched."""
    kinds = _seed(world, entity)
    before = {f: world.raw_job(f) for k, f in kinds.items() if k != "unknown"}
    run = dlpipe_cli("dlq", "redrive", "--dry-run", "--json")
    assert run.code == 0, run.err
    actions = {m["file_id"]: m["outcome"] for m in run.json()["messages"]}
    assert actions[kinds["failed"]] == "would requeue+send"
    assert actions[kinds["completed"]] == "would delete"
    assert {f: world.raw_job(f) for f in before} == before
    assert world.queued() == []
    assert _dlq_depth(world) == 5

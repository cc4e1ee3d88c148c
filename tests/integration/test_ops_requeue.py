"""`dlpipe jobs requeue` against the emulator: conditional writes, SQS sends, refusals, dry runs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlpipe.domain.messages import JobMessage
from dlpipe.domain.model import JobStatus
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


def _outcomes(run_json: dict[str, list[dict[str, str]]]) -> dict[str, str]:
    return {r["file_id"]: r["outcome"] for r in run_json["results"]}


def _abandoned(world: World, entity: str, owner: str = "worker-dead") -> str:
    """A job claimed by a worker that died: downloading, lease expired an hour ago."""
    job = world.job(entity)
    world.jobs.claim(job.file_id, owner, 60)
    world.clock.advance(3600)
    return job.file_id


def test_recovery_scenario_stuck_then_requeue_puts_the_job_back_on_the_queue(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """An abandoned claim is listed by `jobs stuck`, `requeue --stuck` makes it available and queues it."""
    file_id = _abandoned(world, entity)
    batch_id = world.jobs.require(file_id).batch_id
    stuck = dlpipe_cli("jobs", "stuck", "--json").json()["jobs"]
    assert file_id in [j["file_id"] for j in stuck]
    run = dlpipe_cli("jobs", "requeue", "--stuck", "--json")
    assert run.code == 0, run.err
    assert _outcomes(run.json())[file_id] == "requeued"
    assert world.jobs.require(file_id).status is JobStatus.AVAILABLE
    assert JobMessage(file_id, batch_id) in world.queued()


def test_requeue_stuck_twice_sends_one_message(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """Run twice, requeue --stuck changes nothing the second time: the job is no longer stale."""
    file_id = _abandoned(world, entity)
    dlpipe_cli("jobs", "requeue", "--stuck")
    second = dlpipe_cli("jobs", "requeue", "--stuck", "--json")
    assert file_id not in _outcomes(second.json())
    assert [m.file_id for m in world.queued()].count(file_id) == 1


def test_requeue_named_files_reports_each_and_exits_1_for_refusals(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """A failed file is requeued and sent while a completed and an unknown one are reported, exit 1."""
    failed = world.job(f"{entity}f")
    world.jobs.claim(failed.file_id, "w", 60)
    world.jobs.finish_unsuccessfully(failed.file_id, "w", JobStatus.FAILED, "timeouts")
    done = world.job(f"{entity}c")
    world.jobs.claim(done.file_id, "w", 60)
    world.jobs.complete(done.file_id, "w", byte_count=1, sha256="0" * 64, destination_key="k")
    unknown = f"{entity}u-{world.day}"
    run = dlpipe_cli("jobs", "requeue", failed.file_id, done.file_id, unknown, "--json")
    assert run.code == 1
    assert _outcomes(run.json()) == {
        failed.file_id: "requeued",
        done.file_id: "refused",
        unknown: "unknown",
    }
    assert world.jobs.require(done.file_id).status is JobStatus.COMPLETED
    assert [m.file_id for m in world.queued()] == [failed.file_id]
    assert "2 of 3 file(s) not requeued" in run.err


def test_requeue_refuses_a_live_claim_naming_the_worker_and_force_takes_it(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """A job under a live lease is refused as 'held by worker X until T'; --force requeues it."""
    job = world.job(entity)
    world.jobs.claim(job.file_id, "worker-alive", 600)
    refused = dlpipe_cli("jobs", "requeue", job.file_id)
    assert refused.code == 1
    assert "held by worker worker-alive until" in refused.out
    assert world.jobs.require(job.file_id).status is JobStatus.DOWNLOADING
    forced = dlpipe_cli("jobs", "requeue", job.file_id, "--force")
    assert forced.code == 0, forced.err
    assert world.jobs.require(job.file_id).status is JobStatus.AVAILABLE


def test_requeue_dry_run_changes_no_item_and_sends_nothing(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """--dry-run reports would-requeue and leaves the items and the queue untouched."""
    abandoned = _abandoned(world, entity)
    failed = world.job(f"{entity}f")
    world.jobs.claim(failed.file_id, "w", 60)
    world.jobs.finish_unsuccessfully(failed.file_id, "w", JobStatus.ERROR, "bad key")
    before = {f: world.raw_job(f) for f in (abandoned, failed.file_id)}
    run = dlpipe_cli("jobs", "requeue", abandoned, failed.file_id, "--dry-run", "--json")
    assert run.code == 0, run.err
    assert set(_outcomes(run.json()).values()) == {"would-requeue"}
    assert {f: world.raw_job(f) for f in before} == before
    assert world.queued() == []


def test_requeue_logs_each_requeued_file(world: World, dlpipe_cli: CliRunner, entity: str) -> None:
    """Each requeue is logged as ops.requeued with its FileID and former status."""
    file_id = _abandoned(world, entity)
    run = dlpipe_cli("jobs", "requeue", file_id)
    events = [(e["event"], e.get("file_id"), e.get("was")) for e in run.logs]
    assert ("ops.requeued", file_id, "downloading") in events


def test_requeue_without_files_or_stuck_is_a_usage_error(dlpipe_cli: CliRunner) -> None:
    """Neither FILEIDs nor --stuck: exit 2 with a one-line reason."""
    run = dlpipe_cli("jobs", "requeue")
    assert run.code == 2
    assert "FILEIDs or --stuck" in run.err


def test_requeue_without_a_queue_changes_nothing_and_says_so_in_one_line(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """Without DLPIPE_QUEUE_URL the job stays as it was (it used to be made available, then
    the send failed: a job with no message, waiting for the sweeper)."""
    failed = world.job(entity)
    world.jobs.claim(failed.file_id, "w", 60)
    world.jobs.finish_unsuccessfully(failed.file_id, "w", JobStatus.FAILED, "timeouts")
    no_queue = replace(world.ops, settings=replace(world.ops.settings, queue_url=None))
    run = dlpipe_cli("jobs", "requeue", failed.file_id, obj=no_queue)
    assert run.code == 1
    assert run.err.strip().splitlines()[-1].startswith("dlpipe: configuration error:")
    assert "DLPIPE_QUEUE_URL" in run.err
    assert world.jobs.require(failed.file_id).status is JobStatus.FAILED

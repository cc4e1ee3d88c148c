"""`dlpipe batch show|list` and `dlpipe status` against the emulator."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.local.provision import Provisioned
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


def _seed_day(world: World, entity: str) -> tuple[str, str]:
    """A timed-out batch of two jobs (one completed, one abandoned) and a later queued one."""
    old = world.batch(status=BatchStatus.QUEUED)
    done = world.job(f"{entity}a", batch_id=old.batch_id)
    world.jobs.claim(done.file_id, "w", 60)
    world.jobs.complete(done.file_id, "w", byte_count=1, sha256="0" * 64, destination_key="k")
    lost = world.job(f"{entity}b", batch_id=old.batch_id)
    world.jobs.claim(lost.file_id, "w", 60)
    world.batches.mark_queued(old.batch_id, [done.file_id, lost.file_id])
    world.batches.finish(old.batch_id, BatchStatus.TIMEOUT, timeout_at="1990-01-01T00:00:00Z")
    world.clock.advance(60)
    new = world.batch()
    world.job(f"{entity}c", batch_id=new.batch_id)
    world.clock.advance(3600)
    return old.batch_id, new.batch_id


def test_batch_show_counts_each_batch_jobs_by_status(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """batch show lists the date's batches oldest first with live job counts from BatchIndex."""
    old, new = _seed_day(world, entity)
    run = dlpipe_cli("batch", "show", "--date", world.day, "--json")
    assert run.code == 0, run.err
    shown = run.json()["batches"]
    assert [b["batch_id"] for b in shown] == [old, new]
    assert shown[0]["status"] == "timeout"
    assert shown[0]["job_counts"] == {
        "available": 0,
        "downloading": 1,
        "completed": 1,
        "failed": 0,
        "error": 0,
    }
    assert shown[1]["job_counts"][str(JobStatus.AVAILABLE)] == 1


def test_batch_show_defaults_to_the_date_todays_run_polls(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """Without --date, batch show reads the day before the clock's date (the default offset)."""
    old, _new = _seed_day(world, entity)
    table = dlpipe_cli("batch", "show")
    assert table.code == 0, table.err
    assert old in table.out
    assert "timeout" in table.out


def test_batch_show_for_a_date_without_batches_is_one_line_and_exit_1(
    dlpipe_cli: CliRunner,
) -> None:
    """No batch for the date: one line naming it on stderr, exit 1."""
    run = dlpipe_cli("batch", "show", "--date", "1912-04-15")
    assert run.code == 1
    assert run.err.strip() == "dlpipe: no batch for 1912-04-15 (has the poller run for it?)"


def test_batch_list_filters_by_status(world: World, dlpipe_cli: CliRunner, entity: str) -> None:
    """batch list --status timeout returns only the date's timed-out batch."""
    old, _new = _seed_day(world, entity)
    run = dlpipe_cli("batch", "list", "--date", world.day, "--status", "timeout", "--json")
    assert [b["batch_id"] for b in run.json()["batches"]] == [old]


def test_batch_list_of_a_bad_date_is_a_usage_error(dlpipe_cli: CliRunner) -> None:
    """--date 2026-02-30 is not a calendar date: exit 2."""
    run = dlpipe_cli("batch", "list", "--date", "2026-02-30")
    assert run.code == 2
    assert "is not a date" in run.err


def test_status_shows_batches_stuck_jobs_and_dlq_depth_on_one_screen(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """status --json carries the day's batches, the expired claim, the stale available job and the DLQ depth."""
    old, new = _seed_day(world, entity)
    for n in range(2):
        body = encode_message(JobMessage(f"{entity}d{n}-{world.day}", new))
        world.clients.sqs.send_message(QueueUrl=world.ops.settings.dlq_url or "", MessageBody=body)
    run = dlpipe_cli("status", "--date", world.day, "--json")
    assert run.code == 0, run.err
    status = run.json()
    assert [b["batch_id"] for b in status["batches"]] == [old, new]
    mine = {
        state: [j["file_id"] for j in jobs if j["file_id"].startswith(entity)]
        for state, jobs in status["stuck"].items()
    }
    assert mine == {
        "downloading": [f"{entity}b-{world.day}"],
        "available": [f"{entity}c-{world.day}"],
    }
    assert status["dlq_depth"] == 2


def test_status_table_says_when_the_date_has_no_batch(dlpipe_cli: CliRunner) -> None:
    """status for an empty date still prints its screen, saying there is no batch, and
    exits 1 with batch show's line."""
    run = dlpipe_cli("status", "--date", "1912-04-15")
    assert run.code == 1, run.err
    assert "batches of 1912-04-15: none" in run.out
    assert "DLQ depth: 0" in run.out
    assert run.err.strip() == "dlpipe: no batch for 1912-04-15 (has the poller run for it?)"


def _with_bucket(world: World, provisioned: Provisioned) -> None:
    """The audit reads the day manifests in the destination bucket."""
    bucket = str(provisioned.destination_bucket)
    world.ops = world.rewired(replace(world.ops.settings, destination_bucket=bucket))


def test_batch_audit_answers_from_the_completed_batch_counts(
    world: World, dlpipe_cli: CliRunner, entity: str, provisioned: Provisioned
) -> None:
    """batch audit reports ExpectedCount vs CompletedCount per date; a completed day without a
    manifest is one problem line (tests/integration/test_manifest_audit.py: with one)."""
    _with_bucket(world, provisioned)
    batch = world.batch()
    files = {world.job(f"{entity}{n}", batch_id=batch.batch_id).file_id for n in range(3)}
    world.batches.mark_queued(batch.batch_id, files)
    world.batches.record_counts(batch.batch_id, completed=3, failed=0, error=0)
    world.batches.finish(batch.batch_id, BatchStatus.COMPLETED)
    run = dlpipe_cli("batch", "audit", "--from", world.day, "--to", world.day, "--json")
    assert run.code == 1
    (day,) = run.json()["dates"]
    assert (day["batch"], day["expected"], day["completed"], day["complete"]) == (
        batch.batch_id,
        3,
        3,
        False,
    )
    assert run.err.strip() == f"{world.day} default: manifest missing (no latest.json)"


def test_batch_audit_names_the_dates_that_did_not_receive_everything(
    world: World, dlpipe_cli: CliRunner, entity: str, provisioned: Provisioned
) -> None:
    """A timed-out day (a later batch still initiated) makes the audit exit 1, a line a problem."""
    _with_bucket(world, provisioned)
    old, new = _seed_day(world, entity)
    run = dlpipe_cli("batch", "audit", "--from", world.day, "--to", world.day)
    assert run.code == 1
    assert run.err.strip().splitlines() == [
        f"{world.day} default: no completed batch (latest batch {new} is initiated)",
        f"{world.day} default: manifest missing (no latest.json)",
    ]
    assert old not in run.err

"""`dlpipe jobs stuck|show|list` against the emulator, through dlpipe.cli.main.main's rendering."""

from __future__ import annotations

import pytest

from dlpipe.domain.model import JobStatus
from dlpipe.domain.shards import status_shard
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


def _mine(jobs: list[dict[str, object]], *file_ids: str) -> list[dict[str, object]]:
    return [j for j in jobs if j["file_id"] in file_ids]


def test_stuck_lists_a_downloading_job_with_owner_and_expired_lease(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """A claim whose lease ran out an hour ago shows its owner, lease expiry, expiry flag and attempts."""
    job = world.job(entity)
    world.jobs.claim(job.file_id, "worker-7", 60)
    world.clock.advance(3600)
    run = dlpipe_cli("jobs", "stuck", "--older-than", "30m", "--json")
    assert run.code == 0, run.err
    [found] = _mine(run.json()["jobs"], job.file_id)
    assert (found["status"], found["lease_owner"], found["lease_expired"], found["attempts"]) == (
        "downloading",
        "worker-7",
        True,
        1,
    )


def test_stuck_leaves_out_jobs_changed_more_recently_than_the_age(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """An available job ten minutes old is not stuck for --older-than 30m."""
    job = world.job(entity)
    world.clock.advance(600)
    run = dlpipe_cli("jobs", "stuck", "--status", "available", "--json")
    assert _mine(run.json()["jobs"], job.file_id) == []


def test_stuck_available_jobs_come_oldest_first(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """StatusIndex order: the job waiting longest is listed first."""
    older = world.job(f"{entity}a")
    world.clock.advance(60)
    newer = world.job(f"{entity}b")
    world.clock.advance(7200)
    run = dlpipe_cli("jobs", "stuck", "--status", "available", "--older-than", "1h", "--json")
    listed = [j["file_id"] for j in _mine(run.json()["jobs"], older.file_id, newer.file_id)]
    assert listed == [older.file_id, newer.file_id]


def test_stuck_reports_an_unreadable_item_and_still_lists_the_valid_jobs(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """A half-written item in StatusIndex is named as unreadable instead of failing the command."""
    job = world.job(entity)
    sparse = f"{entity}x-{world.day}"
    item = {
        "FileID": {"S": sparse},
        "Status": {"S": "available"},
        "StatusShard": {"S": str(status_shard(JobStatus.AVAILABLE, sparse))},
        "StatusUpdatedAt": {"N": str(world.clock.now)},
    }
    world.clients.dynamodb.put_item(TableName=world.jobs.table_name, Item=item)
    world.created_jobs.append(sparse)
    world.clock.advance(3600)
    run = dlpipe_cli("jobs", "stuck", "--status", "available", "--json")
    assert run.code == 0, run.err
    assert sparse in run.json()["unreadable"]
    assert _mine(run.json()["jobs"], job.file_id) != []


def test_stuck_table_names_the_owner_and_marks_the_lease_expired(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """The default output is a table a person can read: owner and EXPIRED lease on the row."""
    job = world.job(entity)
    world.jobs.claim(job.file_id, "worker-9", 60)
    world.clock.advance(3600)
    run = dlpipe_cli("jobs", "stuck")
    row = next(line for line in run.out.splitlines() if job.file_id in line)
    assert "worker-9" in row
    assert "EXPIRED" in row


def test_show_prints_the_record_with_the_url_by_its_origin_only(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """jobs show prints a presigned URL by its scheme and host, in JSON and as a table: never
    its userinfo, path or signature."""
    url = (
        "https://svc:hunter2pass@bucket.example/acct-7781/f"
        "?X-Amz-Credential=AKIDEXAMPLE&X-Amz-Signature=deadbeefcafe"
    )
    job = world.job(entity, presigned_url=url)
    as_json = dlpipe_cli("jobs", "show", job.file_id, "--json")
    as_table = dlpipe_cli("jobs", "show", job.file_id)
    record = as_json.json()
    assert (record["file_id"], record["status"], record["batch_id"]) == (
        job.file_id,
        "available",
        job.batch_id,
    )
    assert record["presigned_url"] == "https://bucket.example"
    for output in (as_json.out, as_table.out):
        for part in ("deadbeefcafe", "AKIDEXAMPLE", "hunter2pass", "acct-7781"):
            assert part not in output, part


def test_show_of_an_unknown_file_is_one_line_and_exit_1(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """An unknown FileID is reported in one line on stderr, exit code 1, no traceback."""
    run = dlpipe_cli("jobs", "show", f"nosuchentity-{world.day}")
    assert run.code == 1
    assert run.err.strip().count("\n") == 0
    assert "no job" in run.err


def test_show_of_a_malformed_file_id_is_a_usage_error(dlpipe_cli: CliRunner) -> None:
    """A FileID that is not {entity}-{YYYY-MM-DD} is refused before any AWS call, exit 2."""
    run = dlpipe_cli("jobs", "show", "../etc/passwd")
    assert run.code == 2
    assert "FileID must be" in run.err


def test_list_of_a_large_batch_shows_the_first_limit_jobs_and_says_it_cut_the_list(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """jobs list reads at most --limit jobs (plus one, to know) of a batch of any size, and
    says when there are more, in the JSON and in the table's title."""
    batch = world.batch()
    for n in range(3):
        world.job(f"{entity}{n}", batch_id=batch.batch_id)
    cut = dlpipe_cli("jobs", "list", "--batch", batch.batch_id, "--limit", "2", "--json").json()
    assert (len(cut["jobs"]), cut["truncated"]) == (2, True)
    whole = dlpipe_cli("jobs", "list", "--batch", batch.batch_id, "--limit", "3", "--json").json()
    assert (len(whole["jobs"]), whole["truncated"]) == (3, False)
    table = dlpipe_cli("jobs", "list", "--batch", batch.batch_id, "--limit", "2")
    assert table.code == 0
    assert "first 2; more with --limit" in table.out


def test_list_returns_the_batch_jobs_in_one_status(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """jobs list --batch --status uses BatchIndex and returns only that batch's jobs in that status."""
    batch = world.batch()
    waiting = world.job(f"{entity}a", batch_id=batch.batch_id)
    working = world.job(f"{entity}b", batch_id=batch.batch_id)
    world.jobs.claim(working.file_id, "worker-1", 60)
    world.job(f"{entity}c")  # another batch
    run = dlpipe_cli("jobs", "list", "--batch", batch.batch_id, "--status", "available", "--json")
    assert [j["file_id"] for j in run.json()["jobs"]] == [waiting.file_id]
    everything = dlpipe_cli("jobs", "list", "--batch", batch.batch_id, "--json").json()["jobs"]
    assert {j["file_id"]: j["status"] for j in everything} == {
        waiting.file_id: str(JobStatus.AVAILABLE),
        working.file_id: str(JobStatus.DOWNLOADING),
    }


def test_list_of_an_unknown_batch_is_one_line_and_exit_1(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """`jobs list --batch` of a BatchID no batch has: one line naming it, exit 1, as `jobs
    show` of an unknown FileID (before: `none` and exit 0); a known batch with no jobs in
    the status asked for still lists nothing, exit 0."""
    unknown = f"batch-{world.day}-00000000-0000-4000-8000-000000000000"
    run = dlpipe_cli("jobs", "list", "--batch", unknown)
    assert (run.code, run.err.count("\n"), "Traceback" in run.err) == (1, 1, False), run.err
    assert f"no batch {unknown!r}" in run.err, run.err
    batch = world.batch()
    empty = dlpipe_cli("jobs", "list", "--batch", batch.batch_id, "--status", "error", "--json")
    assert (empty.code, empty.json()["jobs"]) == (0, [])

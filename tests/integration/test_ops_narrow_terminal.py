"""The README's operator commands in an 80-column terminal: every BatchID, FileID and
timestamp they print is whole on one line, and none prints a traceback."""

from __future__ import annotations

import itertools
import re

import pytest

from dlpipe.domain.model import JobStatus
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below

TIME_START = re.compile(r"\d{4}-\d{2}-\d{2}T")
WORD = re.compile(r"[\w.:-]+")
TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def _seed_day(world: World, entity: str) -> tuple[str, list[str]]:
    """A batch with a completed, a failed, a stuck (expired claim) and an available job."""
    batch = world.batch(error_message="provider_unavailable: 503 after 7 attempts over 120 min")
    ids = [world.job(f"{entity}{n}", batch_id=batch.batch_id).file_id for n in ("a", "b", "c", "d")]
    owner = "worker-ip-10-0-0-1"
    for file_id in ids[:2]:
        world.jobs.claim(file_id, owner, 60)
    world.jobs.complete(
        ids[0], owner, byte_count=10, sha256="0" * 64, destination_key=f"k/{ids[0]}"
    )
    world.jobs.finish_unsuccessfully(
        ids[1], owner, JobStatus.FAILED, "url_expired: the URL expired twice"
    )
    world.jobs.claim(ids[2], "worker-ip-10-0-0-2", 60)
    world.clock.advance(7200)
    return batch.batch_id, ids


def _check_whole(out: str, values: list[str]) -> None:
    """No value is cut across lines (a word that begins it, with the next line holding the
    rest); each time is whole on its line."""
    lines = [*out.splitlines(), ""]
    for line, after in itertools.pairwise(lines):
        for word in WORD.findall(line):
            cut = [v for v in values if v != word and v.startswith(word)]
            assert [v for v in cut if v[len(word) :][:4] in after] == [], (cut, line, after)
        assert len(TIME_START.findall(line)) == len(TIME.findall(line)), line


def test_the_readme_commands_keep_ids_and_times_whole_at_80_columns(
    world: World, dlpipe_cli: CliRunner, entity: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """status, batch show, batch list, jobs stuck, jobs list --batch and jobs show at
    COLUMNS=80 (before: rich folded the BatchID's UUID and the timestamps across lines)."""
    batch_id, file_ids = _seed_day(world, entity)
    monkeypatch.setenv("COLUMNS", "80")
    commands = [
        ("status", "--date", world.day),
        ("batch", "show", "--date", world.day),
        ("batch", "list", "--date", world.day),
        ("jobs", "stuck", "--older-than", "30m"),
        ("jobs", "list", "--batch", batch_id),
        ("jobs", "show", file_ids[2]),
    ]
    printed = []
    for args in commands:
        run = dlpipe_cli(*args)
        assert (run.code, "Traceback" in run.err + run.out) == (0, False), (args, run.err)
        assert max(len(line) for line in run.out.splitlines()) <= 80, (args, run.out)
        _check_whole(run.out, [batch_id, *file_ids])
        printed.append(run.out)
    status, show, listed, stuck, jobs, job = printed
    assert all(batch_id in out for out in (status, show, listed, jobs, job))
    assert file_ids[2] in stuck
    assert all(file_id in jobs for file_id in file_ids)
    assert TIME.search(stuck)
    assert TIME.search(job)


def test_an_empty_result_is_one_line_saying_none(world: World, dlpipe_cli: CliRunner) -> None:
    """A batch with no jobs: `jobs list` prints one line ending `: none`, not an empty
    bordered table."""
    batch = world.batch()
    run = dlpipe_cli("jobs", "list", "--batch", batch.batch_id)
    assert (run.code, run.out.strip().splitlines()) == (0, [f"jobs of {batch.batch_id}: none"])


def test_status_without_a_batch_exits_1_as_batch_show_does(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """A date the poller never ran: `status` prints its screen, then the same one line and
    exit code 1 as `batch show` (before: exit 0), as the README says."""
    status = dlpipe_cli("status", "--date", world.day)
    show = dlpipe_cli("batch", "show", "--date", world.day)
    assert (status.code, status.err) == (show.code, show.err) == (1, status.err)
    assert status.err == f"dlpipe: no batch for {world.day} (has the poller run for it?)\n"
    assert "DLQ depth" in status.out


def test_an_age_beyond_ten_years_is_a_usage_error(world: World, dlpipe_cli: CliRunner) -> None:
    """`jobs stuck --older-than 999999999d` against a real table: exit 2 naming the range
    (before: a year-out-of-range ValueError traceback)."""
    for age in ("999999999d", "99999999999999999999d"):
        run = dlpipe_cli("jobs", "stuck", "--older-than", age)
        assert (run.code, "0s to 3650d" in run.err, run.err.count("\n")) == (2, True, 1), run.err

"""`dlpipe status` in an 80-column terminal and its exit code: a named feed's job counts stay
on screen (its 62-character BatchID gives way), the repair command is alone on its line,
whole, and the exit code says whether the date needs the operator."""

from __future__ import annotations

import pytest

from dlpipe.domain.model import BatchStatus, JobStatus
from tests.integration.test_ops_feeds import FEED, VENDOR_B, named_batch, with_feeds
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


def _named_section(out: str, day: str) -> list[str]:
    """The lines of the named feed's section, from its title to the next blank-titled part."""
    lines = out.splitlines()
    start = lines.index(f"batches of {day}, feed {FEED}")
    return lines[start : start + 8]


def test_a_named_feeds_failed_day_at_80_columns_keeps_its_counts_and_a_whole_command(
    world: World, dlpipe_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At COLUMNS=80 the named feed's table keeps status and job counts (before: the counts
    were left out for the BatchID), the start command is a line of its own, whole (before:
    wrapped mid-command), and `status` exits 1 naming the feed (before: 0)."""
    with_feeds(world, VENDOR_B)
    world.batch(status=BatchStatus.COMPLETED, expected_count=1, completed_count=1)
    named_batch(world, status=BatchStatus.FAILED, error_message="wrong_key: 8 files")
    monkeypatch.setenv("COLUMNS", "80")
    run = dlpipe_cli("status", "--date", world.day)
    section = "\n".join(_named_section(run.out, world.day))
    assert "completed=0" in section, run.out
    assert "error=0" in section, run.out
    assert "(left out at 80 columns: batch; see --json)" in section, section
    assert f"dlpipe run --date {world.day} --feed {FEED}" in run.out.splitlines(), run.out
    assert run.code == 1, run.err
    # vendor-b's deadline (09:00 Berlin the next day: 07:00 or 08:00Z) has passed at 10:00Z.
    assert run.err.startswith(f"dlpipe: {world.day}: feed {FEED} no batch completed (failed)")
    assert run.err.endswith((" and late by 2 h 00 min\n", " and late by 3 h 00 min\n")), run.err


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        ((BatchStatus.COMPLETED,), 0),
        ((BatchStatus.QUEUED,), 0),
        ((BatchStatus.FAILED, BatchStatus.COMPLETED), 0),
        ((BatchStatus.FAILED,), 1),
        ((BatchStatus.TIMEOUT,), 1),
        ((BatchStatus.FAILED, BatchStatus.TIMEOUT), 1),
    ],
)
def test_status_exits_1_for_a_day_that_failed_or_timed_out_and_0_when_it_is_well(
    world: World, dlpipe_cli: CliRunner, statuses: tuple[BatchStatus, ...], code: int
) -> None:
    """The default feed's runs of a date (a re-run after the first): 0 once one completed or
    while one runs; 1 when every run ended without completing (before: 0 for all)."""
    for status in statuses:
        world.batch(status=status)
    run = dlpipe_cli("status", "--date", world.day)
    assert run.code == code, (run.out, run.err)
    assert run.err.count("\n") == code


def test_a_running_batchs_error_files_show_their_code_and_the_requeue_command(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """A running batch with an error file: status names its code and file, as the day page
    does, and prints the requeue command alone on its line (before: `error=1` and nothing)."""
    batch = world.batch(status=BatchStatus.QUEUED, expected_count=2)
    bad = world.job(
        "accounts",
        batch_id=batch.batch_id,
        status=JobStatus.ERROR,
        error_message="wrong_key: the AES key does not unwrap",
    )
    world.job("orders", batch_id=batch.batch_id)
    run = dlpipe_cli("status", "--date", world.day)
    lines = run.out.splitlines()
    assert (
        f"{batch.batch_id} running, 0 failed, 1 error so far: wrong_key: 1 ({bad.file_id})" in lines
    ), run.out
    assert f"dlpipe jobs requeue {bad.file_id}" in lines, run.out
    payload = dlpipe_cli("status", "--date", world.day, "--json").json()
    (default,) = [d for d in payload["feeds"] if d["feed"] == "default"]
    codes = default["errors_so_far"][batch.batch_id]["codes"]["codes"]
    assert [(c["code"], c["files"]) for c in codes] == [("wrong_key", [bad.file_id])]

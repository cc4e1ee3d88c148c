"""The local run's progress counts: what the bar shows while the day runs."""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace

from rich.console import Console

from dlpipe.cli.run_local import render_report
from dlpipe.domain.model import JobStatus, make_batch_id, make_file_id
from dlpipe.local.day import DayProgress, DayReport, FileReport, ProgressWatcher, day_progress
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable
from tests.support import BASE_MS, ManualClock, make_batch, make_job


def test_only_completed_files_count_as_done_failed_ones_are_counted_apart() -> None:
    """One completed, one failed, one in error, one downloading: 1 done and 2 unsuccessful of 4."""
    statuses = [JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.ERROR, JobStatus.DOWNLOADING]
    jobs = [make_job(f"e{n}", status=status) for n, status in enumerate(statuses)]
    assert day_progress(jobs) == DayProgress(completed=1, unsuccessful=2, total=4, error=1)


def test_the_progress_counts_failed_and_error_apart() -> None:
    """Two failed and one error: the bar says '2 failed, 1 error', the jobs table's words."""
    statuses = [JobStatus.FAILED, JobStatus.FAILED, JobStatus.ERROR, JobStatus.COMPLETED]
    progress = day_progress(make_job(f"e{n}", status=s) for n, s in enumerate(statuses))
    assert (progress.failed, progress.error) == (2, 1)


def test_the_local_report_ends_with_the_cause_and_errors_by_code() -> None:
    """`dlpipe run --local`'s report ends with the run's line: counts and 'wrong_key: 2 (...)'."""
    result = {
        "batch_id": "batch-2026-02-28-1",
        "status": "failed",
        "completed": 0,
        "failed": 0,
        "error": 2,
        "pending": 0,
        "outcome": {
            "cause": None,
            "codes": [{"code": "wrong_key", "count": 2, "files": ["a-2026-02-28", "b-2026-02-28"]}],
        },
    }
    files = [
        FileReport(f, "error", None, verified=False, error_message="wrong_key: x")
        for f in ("a-2026-02-28", "b-2026-02-28")
    ]
    console = Console(record=True, width=300)
    render_report(console, DayReport("batch-2026-02-28-1", "failed", files, result))
    assert console.export_text().splitlines()[-1] == (
        "batch batch-2026-02-28-1 failed: 0 completed, 0 failed, 2 error, 0 pending;"
        " wrong_key: 2 (a-2026-02-28, b-2026-02-28)"
    )


def test_a_feeds_progress_counts_its_own_batch_not_another_feeds_of_the_same_date() -> None:
    """Two feeds' batches of one date (the PollingDateIndex holds both): the default feed's
    bar counts its own two open jobs, not vendor-b's newer batch of completed ones."""
    clock = ManualClock()
    jobs, batches = FakeJobsTable(clock), FakeBatchesTable(clock)
    day = "2026-02-28"
    mine = make_batch(day, now_ms=BASE_MS)
    theirs = replace(
        make_batch(day, now_ms=BASE_MS + 1000),
        batch_id=make_batch_id(day, str(uuid.uuid4()), "vendor-b"),
    )
    for batch in (mine, theirs):
        batches.create(batch)
    for n in range(2):
        jobs.create(make_job(f"a{n}", day, batch_id=mine.batch_id))
    for n in range(3):
        done = make_job(f"b{n}", day, batch_id=theirs.batch_id, status=JobStatus.COMPLETED)
        jobs.create(replace(done, file_id=make_file_id(f"b{n}", day, "vendor-b")))
    seen: list[DayProgress] = []
    shown = threading.Event()
    watcher = ProgressWatcher(jobs, batches, day, lambda p: (seen.append(p), shown.set()))
    with watcher.watching():
        assert shown.wait(5)
    assert seen[0] == DayProgress(completed=0, unsuccessful=0, total=2)

"""The local run's progress counts: what the bar shows while the day runs."""

from __future__ import annotations

from dlpipe.domain.model import JobStatus
from dlpipe.local.day import DayProgress, day_progress
from tests.support import make_job


def test_only_completed_files_count_as_done_failed_ones_are_counted_apart() -> None:
    """One completed, one failed, one in error, one downloading: 1 done and 2 unsuccessful of 4."""
    statuses = [JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.ERROR, JobStatus.DOWNLOADING]
    jobs = [make_job(f"e{n}", status=status) for n, status in enumerate(statuses)]
    assert day_progress(jobs) == DayProgress(completed=1, unsuccessful=2, total=4)

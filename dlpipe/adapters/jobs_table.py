"""data-download-jobs: the repository of a file's job, its reads (jobs_reads.py) and its
conditional writes (jobs_writes.py) on one client and clock."""

from __future__ import annotations

from dlpipe.adapters.jobs_reads import JobReads
from dlpipe.adapters.jobs_writes import JobWrites


class JobsTable(JobReads, JobWrites):
    """Repository of FileJob records in data-download-jobs: every port that takes the jobs
    table (the orchestrator's JobStore, the sweeper's SweepJobs, the download service's
    JobLeases, OpsJobs) mixes reads and writes, so one object serves them all."""

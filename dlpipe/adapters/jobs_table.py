"""data-download-jobs: the repository of a file's job, its reads (jobs_reads.py, its indexed
reads jobs_index.py) and its conditional writes (jobs_writes.py) on one client and clock."""

from __future__ import annotations

from dlpipe.adapters.jobs_index import JobIndexReads
from dlpipe.adapters.jobs_revision_writes import RevisionWrites


class JobsTable(JobIndexReads, RevisionWrites):
    """Repository of FileJob records in data-download-jobs: every port that takes the jobs
    table (the orchestrator's JobStore, the sweeper's SweepJobs, the download service's
    JobLeases, OpsJobs) mixes reads and writes, so one object serves them all."""

"""A restated job's revision facts (Revision, PreviousVersionID, PreviousSHA256, PreviousSize,
WithdrawnBy) are stored and read back through the jobs table, and a first revision stores none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlpipe.adapters.items import job_to_item
from dlpipe.adapters.jobs_table import JobsTable
from tests.support import make_job

pytestmark = pytest.mark.integration
REVISION_ATTRIBUTES = (
    "Revision",
    "PreviousVersionID",
    "PreviousSHA256",
    "PreviousSize",
    "WithdrawnBy",
)


def test_a_revised_job_reads_back_its_revision_facts(jobs: JobsTable, entity: str) -> None:
    """Revision 2 with the previous version's id, SHA-256 and size, field for field."""
    job = replace(
        make_job(entity),
        revision=2,
        previous_version_id="v1",
        previous_sha256="a" * 64,
        previous_size=10,
        withdrawn_by=None,
    )
    jobs.create(job)
    assert jobs.require(job.file_id) == job


def test_a_first_revision_stores_no_revision_attribute(entity: str) -> None:
    """An item of a job never restated carries none of them (no byte more per file)."""
    item = job_to_item(make_job(entity))
    assert not set(REVISION_ATTRIBUTES) & set(item)

"""What BatchIndex holds of a job: its keys and the attributes the day's manifest reads
(dlpipe/domain/schema.py, JOBS_PROJECTIONS), so write-manifest reads index items alone and
fetches no job."""

from __future__ import annotations

from dataclasses import dataclass

from dlpipe.domain.statuses import JobStatus


@dataclass(frozen=True)
class JobRow:
    """One BatchIndex item: a job's FileID, status and what its manifest entry names."""

    file_id: str
    entity: str | None
    status: JobStatus
    destination_key: str | None = None  # completed jobs
    byte_count: int | None = None
    sha256: str | None = None
    error_message: str | None = None  # failed and error jobs, and a pending one's last error
    # A restated file's marks (FileJob's fields of the same names): written only by a revision
    # batch, so a day never restated projects none of them.
    revision: int | None = None
    revised_as: str | None = None
    previous_version_id: str | None = None
    previous_sha256: str | None = None
    withdrawn_by: str | None = None

"""Where a verified file is published in the destination bucket: one key per job, derived
from its feed, entity and date, never from a stored path. The default feed publishes at the
bucket's root, where existing readers look; a named feed under its destination prefix."""

from __future__ import annotations

from dlpipe.domain.download_errors import InvalidJobError
from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.model import FileJob, make_file_id


def destination_key(job: FileJob, prefix: str = "") -> str:
    """`{entity}/{YYYY-MM-DD}/{FileID}`, under `prefix/` when the job's feed has one (its
    feed's destination prefix, from configuration, validated there), every part of the job
    re-validated: no stored value shapes a path."""
    try:
        file_id = make_file_id(job.entity, job.download_date, job.feed)
    except InvalidIdentifierError as exc:
        raise InvalidJobError(f"the job's entity or date is invalid: {exc}") from exc
    # The validators' `$` lets one trailing newline through; no whitespace may reach a key.
    if file_id != job.file_id or any(c.isspace() for c in file_id):
        raise InvalidJobError(
            f"the job's entity and date make {file_id!r}, not its FileID {job.file_id!r}"
        )
    key = f"{job.entity}/{job.download_date}/{file_id}"
    return f"{prefix}/{key}" if prefix else key

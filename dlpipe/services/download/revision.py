"""A restated file's publish: what the object at its key now says about writing the revision.

A job with `previous_sha256` is a revision (dlpipe/domain/restatement.py): its file goes out as
a new version of the same key, one version per revision however workers race. The object at
the key decides how (`revision_plan`):

- the previous revision (its SHA-256, and size when known): replace that object only,
  If-Match on its ETag; the completion names its version (PreviousVersionID);
- none: create-only, as a first revision;
- this revision already (a worker before us published it): nothing to publish; the
  completion names the version before it;
- anything else: DestinationConflictError, nothing written. When the job does not say what
  this revision is (no SHA-256), only the transfer can tell: create-only, which that object
  refuses, and `verify_existing` finishes only if it is exactly our file.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlpipe.domain.download_errors import DestinationConflictError
from dlpipe.domain.model import FileJob, Verified
from dlpipe.services.download.ports import CurrentObject


@dataclass(frozen=True)
class RevisionPlan:
    """How to publish a revision over the object at its key."""

    replaces_etag: str | None = None  # If-Match on this ETag; None: create-only
    previous_version_id: str | None = None  # what our publish replaced, for the completion
    published: CurrentObject | None = None  # the revision is there already: publish nothing


def is_revision(job: FileJob) -> bool:
    """True when the job's file replaces an earlier revision's object at its key."""
    return job.previous_sha256 is not None


def revision_plan(job: FileJob, key: str, current: CurrentObject | None) -> RevisionPlan:
    """The plan for `job`'s revision given `current`, the object at `key` now (None: none);
    DestinationConflictError when it is neither the previous revision nor this one."""
    if current is None:
        return RevisionPlan()
    held = current.verified
    if _holds(held, job.previous_sha256, job.previous_size):
        return RevisionPlan(replaces_etag=current.etag, previous_version_id=current.version_id)
    if _holds(held, job.expected_sha256, job.expected_size):
        return RevisionPlan(published=current)
    if not job.expected_sha256:
        return RevisionPlan()
    raise DestinationConflictError(
        f"{key} holds SHA-256 {held.sha256}, neither the previous revision's"
        f" {job.previous_sha256} nor this revision's {job.expected_sha256.lower()};"
        " left as it is"
    )


def _holds(held: Verified, sha256: str | None, size: int | None) -> bool:
    if not sha256 or held.sha256 != sha256.lower():
        return False
    return size is None or held.byte_count == size

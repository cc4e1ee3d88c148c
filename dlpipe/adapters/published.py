"""The sweeper's look at the bucket: is a job's file already published at its key?"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dlpipe.adapters.destination import already_published, current_object, holds, version_before
from dlpipe.domain.destination_key import destination_key
from dlpipe.domain.download_errors import DestinationUnavailableError, InvalidJobError
from dlpipe.domain.model import FileJob, Published
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

log = get_logger()


def published_check(
    s3: S3Client, bucket: str, prefix: str = ""
) -> Callable[[FileJob], Published | None]:
    """The job's file when it is already published at its key, else None (also when the HEAD
    fails: already_published logs it, and not knowing costs a download). A restated file's
    revision (it holds what the revision before it published) also names the version the
    published one replaced, as the worker records it."""

    def check(job: FileJob) -> Published | None:
        try:
            key = destination_key(job, prefix)
        except InvalidJobError:
            return None
        if job.previous_sha256 is None:
            verified = already_published(s3, bucket, key, job)
            return None if verified is None else Published(key, verified)
        return _revision_published(s3, bucket, key, job)

    return check


def _revision_published(s3: S3Client, bucket: str, key: str, job: FileJob) -> Published | None:
    """A revision's file at `key`, from one HEAD of the object there now (what it holds and
    which version it is), with the version just older than it (None if unknown: a record)."""
    try:
        current = current_object(s3, bucket, key)
    except DestinationUnavailableError as exc:
        # Not knowing only costs a download: the file is then fetched and written again.
        log.warning("destination.head_failed", error=str(exc))
        return None
    if current is None or not holds(current.verified, job):
        return None
    if current.version_id is None:
        return Published(key, current.verified)
    replaced = version_before(s3, bucket, key, current.version_id)
    return Published(key, current.verified, replaced)

"""The sweeper's look at the bucket: is a job's file already published at its key?"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dlpipe.adapters.destination import already_published, current_object, version_before
from dlpipe.domain.destination_key import destination_key
from dlpipe.domain.download_errors import DestinationUnavailableError, InvalidJobError
from dlpipe.domain.model import FileJob, Published

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


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
        verified = already_published(s3, bucket, key, job)
        if verified is None:
            return None
        if job.previous_sha256 is None:
            return Published(key, verified)
        return Published(key, verified, _replaced(s3, bucket, key))

    return check


def _replaced(s3: S3Client, bucket: str, key: str) -> str | None:
    """The version just older than the object at `key` now; None if unknown (only a record)."""
    try:
        current = current_object(s3, bucket, key)
    except DestinationUnavailableError:
        return None
    if current is None or current.version_id is None:
        return None
    return version_before(s3, bucket, key, current.version_id)

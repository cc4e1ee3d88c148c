"""The sweeper's look at the bucket: is a job's file already published at its key?"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dlpipe.adapters.destination import already_published
from dlpipe.domain.destination_key import destination_key
from dlpipe.domain.download_errors import InvalidJobError
from dlpipe.domain.model import FileJob, Verified

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


def published_check(
    s3: S3Client, bucket: str, prefix: str = ""
) -> Callable[[FileJob], tuple[str, Verified] | None]:
    """(key, verified object) when a job's file is already published at its key, else None
    (also when the HEAD fails: already_published logs it, and not knowing costs a download)."""

    def check(job: FileJob) -> tuple[str, Verified] | None:
        try:
            key = destination_key(job, prefix)
        except InvalidJobError:
            return None
        verified = already_published(s3, bucket, key, job)
        return None if verified is None else (key, verified)

    return check

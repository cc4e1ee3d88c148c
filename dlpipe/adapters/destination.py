"""The destination bucket: where a file goes, whether it is there already, stale uploads."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.adapters.sink import SHA256_METADATA, MultipartSink, s3_call
from dlpipe.domain.download_errors import DestinationConflictError, DestinationUnavailableError
from dlpipe.domain.model import FileJob, Verified
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

log = get_logger()
_MISSING = frozenset({"404", "NoSuchKey", "NotFound"})
_READ_CHUNK = 1 << 20


def already_published(s3: S3Client, bucket: str, key: str, job: FileJob) -> Verified | None:
    """The object at `key` if it holds exactly the job's expected file (by SHA-256 and size)."""
    if not job.expected_sha256:
        return None
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code not in _MISSING:
            # Not knowing only costs a download: the file is then fetched and written again.
            log.warning("destination.head_failed", error_code=code)
        return None
    except BotoCoreError as exc:
        log.warning("destination.head_failed", error_type=type(exc).__name__)
        return None
    sha256 = head.get("Metadata", {}).get(SHA256_METADATA, "")
    size = head["ContentLength"]
    if sha256 != job.expected_sha256.lower():
        return None
    if job.expected_size is not None and size != job.expected_size:
        return None
    return Verified(size, sha256)


def published_object(s3: S3Client, bucket: str, key: str) -> Verified:
    """What is at `key` (size, SHA-256): from our metadata, else by reading the bytes back."""
    try:
        head = s3_call("HeadObject", s3.head_object, Bucket=bucket, Key=key)
        sha256 = head.get("Metadata", {}).get(SHA256_METADATA, "").lower()
        if sha256:
            return Verified(head["ContentLength"], sha256)
        # Not written by dlpipe (no metadata): the bytes themselves say what it is.
        body = s3_call("GetObject", s3.get_object, Bucket=bucket, Key=key)["Body"]
        digest, size = hashlib.sha256(), 0
        for chunk in iter(lambda: body.read(_READ_CHUNK), b""):
            digest.update(chunk)
            size += len(chunk)
        return Verified(size, digest.hexdigest())
    except ClientError as exc:
        # 412 said it exists; gone now (deleted meanwhile): another attempt decides again.
        code = exc.response.get("Error", {}).get("Code", "")
        raise DestinationUnavailableError(f"reading the existing object failed: {code}") from exc


def verify_existing(s3: S3Client, bucket: str, key: str, ours: Verified) -> Verified:
    """The object someone else published at `key`, if it is exactly our verified file;
    DestinationConflictError (never an overwrite) if it is not."""
    theirs = published_object(s3, bucket, key)
    if theirs != ours:
        raise DestinationConflictError(
            f"{key} already holds {theirs.byte_count} bytes with SHA-256 {theirs.sha256},"
            f" not the verified {ours.byte_count} bytes with SHA-256 {ours.sha256};"
            " left as it is"
        )
    return theirs


def abort_stale_uploads(s3: S3Client, bucket: str, key: str) -> int:
    """Abort in-progress uploads of `key` left by a worker whose claim we took over."""
    try:
        listing = s3.list_multipart_uploads(Bucket=bucket, Prefix=key)
        stale = [u for u in listing.get("Uploads", []) if u.get("Key") == key]
        for upload in stale:
            s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload["UploadId"])
    except (ClientError, BotoCoreError) as exc:
        # The bucket's lifecycle rule aborts what is left after a day; this is only tidier.
        log.warning("upload.stale_abort_failed", error_type=type(exc).__name__)
        return 0
    if stale:
        log.info("upload.stale_aborted", count=len(stale))
    return len(stale)


@dataclass(frozen=True)
class S3Destination:
    """The destination bucket as the download service uses it (its Destination port)."""

    s3: S3Client
    bucket: str

    def open_upload(
        self, key: str, *, part_bytes: int, max_in_flight: int, expected_sha256: str | None
    ) -> MultipartSink:
        """A multipart upload to `key`, published create-only."""
        return MultipartSink(
            self.s3,
            self.bucket,
            key,
            part_bytes=part_bytes,
            max_in_flight=max_in_flight,
            expected_sha256=expected_sha256,
        )

    def already_published(self, key: str, job: FileJob) -> Verified | None:
        """See `already_published`."""
        return already_published(self.s3, self.bucket, key, job)

    def verify_existing(self, key: str, ours: Verified) -> Verified:
        """See `verify_existing`."""
        return verify_existing(self.s3, self.bucket, key, ours)

    def abort_stale_uploads(self, key: str) -> int:
        """See `abort_stale_uploads`."""
        return abort_stale_uploads(self.s3, self.bucket, key)

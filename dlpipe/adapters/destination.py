"""The destination bucket: where a file goes, whether it is there already, what a restated
file's revision replaces there, stale uploads."""

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
    from botocore.response import StreamingBody
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
    found = Verified(head["ContentLength"], head.get("Metadata", {}).get(SHA256_METADATA, ""))
    return found if holds(found, job) else None


def holds(found: Verified, job: FileJob) -> bool:
    """An object (its size and SHA-256) is exactly the job's expected file."""
    if not job.expected_sha256 or found.sha256 != job.expected_sha256.lower():
        return False
    return job.expected_size is None or found.byte_count == job.expected_size


@dataclass(frozen=True)
class StoredObject:
    """The object at a key now: its ETag (what a revision's If-Match replaces), its version
    (None in a bucket that never had versioning) and what it holds (size, SHA-256)."""

    etag: str
    version_id: str | None
    verified: Verified


def current_object(s3: S3Client, bucket: str, key: str) -> StoredObject | None:
    """The object at `key` now, None when there is none (a delete marker included); what it
    holds from our metadata, else by reading back that very object (If-Match on its ETag)."""
    try:
        head = s3_call("HeadObject", s3.head_object, Bucket=bucket, Key=key)
        etag = head["ETag"]
        sha256 = head.get("Metadata", {}).get(SHA256_METADATA, "").lower()
        if sha256:
            verified = Verified(head["ContentLength"], sha256)
        else:
            # Not written with our metadata (a multipart upload of a file the vendor gave no
            # SHA-256, or not by dlpipe): the bytes themselves say what it is.
            body = s3_call("GetObject", s3.get_object, Bucket=bucket, Key=key, IfMatch=etag)
            verified = _digest(body["Body"])
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in _MISSING:
            return None
        # Replaced between the HEAD and the read back (412), or refused: another attempt
        # decides again.
        raise DestinationUnavailableError(f"reading the object at {key} failed: {code}") from exc
    return StoredObject(etag, head.get("VersionId"), verified)


def _digest(body: StreamingBody) -> Verified:
    digest, size = hashlib.sha256(), 0
    for chunk in iter(lambda: body.read(_READ_CHUNK), b""):
        digest.update(chunk)
        size += len(chunk)
    return Verified(size, digest.hexdigest())


def published_object(s3: S3Client, bucket: str, key: str) -> Verified:
    """What is at `key` (size, SHA-256): from our metadata, else by reading the bytes back."""
    found = current_object(s3, bucket, key)
    if found is None:
        # 412 said it exists; gone now (deleted meanwhile): another attempt decides again.
        raise DestinationUnavailableError("reading the existing object failed: NoSuchKey")
    return found.verified


def version_before(s3: S3Client, bucket: str, key: str, version_id: str) -> str | None:
    """The version of `key` just older than `version_id` (what a revision published by another
    worker replaced); None when there is none, or the listing fails (it is only a record)."""
    paginator = s3.get_paginator("list_object_versions")
    seen = False
    try:
        for page in paginator.paginate(Bucket=bucket, Prefix=key):
            # Newest first within a key, and `key` sorts before every longer key it prefixes.
            for version in page.get("Versions", []):
                if version.get("Key") != key:
                    return None
                if seen:
                    return version.get("VersionId")
                seen = version.get("VersionId") == version_id
    except (ClientError, BotoCoreError) as exc:
        log.warning("destination.versions_failed", error_type=type(exc).__name__)
    return None


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
        self,
        key: str,
        *,
        part_bytes: int,
        max_in_flight: int,
        expected_sha256: str | None,
        replaces_etag: str | None = None,
    ) -> MultipartSink:
        """A multipart upload to `key`, published create-only, or with `replaces_etag` over
        that object only (a restated file's new revision)."""
        return MultipartSink(
            self.s3,
            self.bucket,
            key,
            part_bytes=part_bytes,
            max_in_flight=max_in_flight,
            expected_sha256=expected_sha256,
            replaces_etag=replaces_etag,
        )

    def current_object(self, key: str) -> StoredObject | None:
        """See `current_object`."""
        return current_object(self.s3, self.bucket, key)

    def version_before(self, key: str, version_id: str) -> str | None:
        """See `version_before`."""
        return version_before(self.s3, self.bucket, key, version_id)

    def already_published(self, key: str, job: FileJob) -> Verified | None:
        """See `already_published`."""
        return already_published(self.s3, self.bucket, key, job)

    def verify_existing(self, key: str, ours: Verified) -> Verified:
        """See `verify_existing`."""
        return verify_existing(self.s3, self.bucket, key, ours)

    def abort_stale_uploads(self, key: str) -> int:
        """See `abort_stale_uploads`."""
        return abort_stale_uploads(self.s3, self.bucket, key)

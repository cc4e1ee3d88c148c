"""The day manifests in the destination bucket: written create-only, verified on a replay, and
the per-date pointer written compare-and-swap (docs/ARCHITECTURE.md, "Hand-off: the day
manifest").

A manifest is rendered (dlpipe/domain/manifest.py) into a temporary file first, hashing as
it goes, so its SHA-256 is known before the upload starts: it goes into the object's
`sha256` metadata, as on every published file, and a replay compares by HEAD alone. The file
is then uploaded by MultipartSink (one PutObject when small, else 5 MiB parts), with
If-None-Match: * on the write that makes it visible, so no manifest is ever overwritten.
Its two file lists (the JSON Lines list, the COPY manifest) are written first, the same way
(rendered from the same sorted runs, hashed, create-only, verified on a replay), so the
manifest can name them with their SHA-256 and size.

The pointer is written with If-None-Match: * when there is none and If-Match: <ETag> when
replacing one (S3 conditional writes; moto 5.2.5 honours both on PutObject), so two batches
ending at once cannot both decide on a stale pointer.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from dlpipe.adapters.manifest_sort import (
    merged,
    merged_unpublished,
    sorted_runs,
    sorted_unpublished,
)
from dlpipe.adapters.sink import MIN_PART_BYTES, SHA256_METADATA, MultipartSink, s3_call
from dlpipe.domain.download_errors import DestinationUnavailableError, ObjectExists
from dlpipe.domain.errors import AwsRequestError, DependencyUnavailableError
from dlpipe.domain.manifest import (
    HEAD_WORKERS,
    DayPointer,
    ManifestConflictError,
    ManifestEntry,
    ManifestHeader,
    ManifestRef,
    PublishedFile,
    StoredObject,
    copy_manifest_key,
    file_list_key,
    manifest_key,
    pointer_key,
    render,
)
from dlpipe.domain.manifest_lists import (
    PENDING,
    ListedObject,
    ManifestLists,
    UnpublishedFile,
    render_copy_manifest,
    render_file_list,
)
from dlpipe.domain.outcome import FILES_PER_CODE

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_MISSING = frozenset({"404", "NoSuchKey", "NotFound", "NoSuchVersion"})
_REFUSED = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict"})
_CHUNK = 1 << 20
RUN_ENTRIES = 10_000  # entries sorted in memory at a time (~5 MB of lines)


class S3ManifestStore:
    """Manifests and pointers in `bucket`; also what the audit reads them through."""

    def __init__(
        self,
        s3: S3Client,
        bucket: str,
        *,
        run_entries: int = RUN_ENTRIES,
        head_workers: int = HEAD_WORKERS,
    ) -> None:
        self._s3, self.bucket = s3, bucket
        self._run_entries, self._head_workers = run_entries, head_workers

    def write(
        self,
        header: ManifestHeader,
        files: Iterable[PublishedFile],
        unpublished: Iterable[UnpublishedFile] = (),
    ) -> ManifestRef:
        day = (header.feed, header.date, header.batch_id, header.status)
        key = manifest_key(*day)
        with tempfile.TemporaryDirectory(prefix="dlpipe-manifest-") as tmp:
            runs = sorted_runs(
                files,
                bucket=self.bucket,
                head=self.head,
                directory=tmp,
                run_entries=self._run_entries,
                workers=self._head_workers,
            )
            missing = sorted_unpublished(unpublished, directory=tmp, run_entries=self._run_entries)
            entries = _Entries(runs)
            listed, _ = self._put(file_list_key(*day), render_file_list(entries()), tmp)
            copy = None
            if entries.count:  # COPY refuses a manifest without entries
                copied = self._put(copy_manifest_key(*day), render_copy_manifest(entries()), tmp)
                copy = copied[0]
            lists = ManifestLists(self.bucket, listed, copy)
            body = render(header, entries, merged_unpublished(missing), lists)
            written, version = self._put(key, body, tmp)
            pending = (f.file_id for f in merged_unpublished(missing) if f.status == PENDING)
            first_pending = tuple(islice(pending, FILES_PER_CODE))
        return ManifestRef(
            self.bucket, key, version, written.sha256, written.size, entries.count,
            listed.key, None if copy is None else copy.key, first_pending,
        )  # fmt: skip

    def _put(self, key: str, chunks: Iterable[bytes], tmp: str) -> tuple[ListedObject, str | None]:
        """Spool `chunks`, upload them create-only to `key` and verify the object holds them
        (a replay finds them there and writes nothing); what was written, and its version."""
        spool = os.path.join(tmp, key.rpartition("/")[2])
        sha256, size = _spool(chunks, spool)
        if self.head(key) is None:
            # ObjectExists: another attempt wrote it meanwhile, verified below as a replay.
            with contextlib.suppress(ObjectExists):
                self._upload(key, spool, sha256)
        found = self._verify(key, sha256, size)
        return ListedObject(key, sha256, size), found.version_id

    def _upload(self, key: str, path: str, sha256: str) -> None:
        sink = MultipartSink(
            self._s3, self.bucket, key, part_bytes=MIN_PART_BYTES, expected_sha256=sha256
        )
        try:
            with open(path, "rb") as source:
                for chunk in iter(lambda: source.read(_CHUNK), b""):
                    sink.write(chunk)
            sink.publish(sha256)
        finally:
            sink.abort()

    def _verify(self, key: str, sha256: str, size: int) -> StoredObject:
        """The object at `key` if it holds these bytes; ManifestConflictError if it holds
        others (it is never overwritten)."""
        found = self.head(key)
        if found is None or found.sha256 != sha256 or found.size != size:
            raise ManifestConflictError(
                f"the manifest {key} conflicts: it exists with other bytes than this batch's"
                if found
                else f"the manifest {key} vanished after its write"
            )
        return found

    def head(self, key: str, version_id: str | None = None) -> StoredObject | None:
        """The object's current version (or `version_id`), size and SHA-256 metadata; None if
        there is none."""
        extra: dict[str, Any] = {"VersionId": version_id} if version_id else {}
        head = _call("HeadObject", self._s3.head_object, Bucket=self.bucket, Key=key, **extra)
        if head is None:
            return None
        version = head.get("VersionId")
        sha256 = head.get("Metadata", {}).get(SHA256_METADATA)
        return StoredObject(
            None if version in (None, "null") else version, head["ContentLength"], sha256
        )

    def read_object(self, key: str, version_id: str | None = None) -> bytes | None:
        """An object's bytes (a manifest's, for the audit); None if there is none."""
        extra: dict[str, Any] = {"VersionId": version_id} if version_id else {}
        got = _call("GetObject", self._s3.get_object, Bucket=self.bucket, Key=key, **extra)
        return None if got is None else bytes(got["Body"].read())

    def read_pointer(self, feed: str, date: str) -> tuple[DayPointer, str] | None:
        key = pointer_key(feed, date)
        got = _call("GetObject", self._s3.get_object, Bucket=self.bucket, Key=key)
        return None if got is None else (DayPointer.from_bytes(got["Body"].read()), got["ETag"])

    def put_pointer(self, pointer: DayPointer, *, etag: str | None) -> bool:
        # The condition makes this a compare-and-swap: a pointer another batch wrote since we
        # read it is never overwritten blindly.
        condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            written = _call(
                "PutObject",
                self._s3.put_object,
                refused=_REFUSED,
                Bucket=self.bucket,
                Key=pointer_key(pointer.feed, pointer.date),
                Body=pointer.to_bytes(),
                ContentType="application/json",
                **condition,
            )
        except _Refused:
            return False
        return written is not None  # None: If-Match found no pointer (it was deleted)


class _Entries:
    """The sorted runs' entries, a pass per call; `count` is the last pass's."""

    def __init__(self, runs: list[str]) -> None:
        self._runs, self.count = runs, 0

    def __call__(self) -> Iterator[ManifestEntry]:
        self.count = 0  # each pass counts the same entries
        for entry in merged(self._runs):
            self.count += 1
            yield entry


def _spool(chunks: Iterable[bytes], path: str) -> tuple[str, int]:
    """Write `chunks` into `path`; their SHA-256 and size."""
    digest, size = hashlib.sha256(), 0
    with open(path, "wb") as out:
        for chunk in chunks:
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    return digest.hexdigest(), size


class _Refused(Exception):
    """A conditional write lost its condition."""


def _call(
    operation: str,
    call: Callable[..., Any],
    *,
    refused: frozenset[str] = frozenset(),
    **request: Any,
) -> Any:
    """One S3 call; None if the key (or version) is missing. AWS's errors become the domain's:
    an outage DependencyUnavailableError (the orchestrator waits it out within its budget), any
    other refusal AwsRequestError (one line in the CLI)."""
    try:
        return s3_call(operation, call, **request)
    except DestinationUnavailableError as exc:
        raise DependencyUnavailableError(str(exc), dependency="S3") from exc
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in refused:
            raise _Refused(code) from exc
        if code in _MISSING:
            return None
        message = str(exc.response.get("Error", {}).get("Message", ""))
        raise AwsRequestError("s3", operation, code, message, resource=request.get("Key")) from exc

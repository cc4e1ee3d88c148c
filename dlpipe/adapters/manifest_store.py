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

A revision batch's manifest also marks each entry (changed and added ones carry the marks
their jobs recorded, sorted on disk beside the entries and joined to them by FileID; every
other entry is unchanged) and names the files it withdrew, sorted the same way; its counts
are counted from those lists as they are rendered (domain/manifest_lists.py, `counted`).

The pointer is written with If-None-Match: * when there is none and If-Match: <ETag> when
replacing one (S3 conditional writes; moto 5.2.5 honours both on PutObject), so two batches
ending at once cannot both decide on a stale pointer.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
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
    WithdrawnFile,
    canonical_json,
    counted,
    render_copy_manifest,
    render_file_list,
)
from dlpipe.domain.outcome import FILES_PER_CODE
from dlpipe.domain.restatement import Revised

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
        withdrawn: Iterable[WithdrawnFile] = (),
    ) -> ManifestRef:
        day = (header.feed, header.date, header.batch_id, header.status)
        key = manifest_key(*day)
        with tempfile.TemporaryDirectory(prefix="dlpipe-manifest-") as tmp:
            revision = header.revision is not None
            marks = _SortedRecords(tmp, "marks", self._run_entries) if revision else None
            runs = sorted_runs(
                _marked(files, marks),
                bucket=self.bucket,
                head=self.head,
                directory=tmp,
                run_entries=self._run_entries,
                workers=self._head_workers,
            )
            missing = sorted_unpublished(unpublished, directory=tmp, run_entries=self._run_entries)
            gone = _SortedRecords(tmp, "withdrawn", self._run_entries)
            for file in withdrawn:
                gone.add(file.file_id, file.record())
            entries = _Entries(runs, marks)
            listed, _ = self._put(file_list_key(*day), render_file_list(entries()), tmp)
            copy = None
            if entries.count:  # COPY refuses a manifest without entries
                copied = self._put(copy_manifest_key(*day), render_copy_manifest(entries()), tmp)
                copy = copied[0]
            lists = ManifestLists(self.bucket, listed, copy)
            statuses = Counter(f.status for f in merged_unpublished(missing))
            header = counted(header, entries.marks, statuses, gone.count)
            gone_files = (WithdrawnFile(**fields) for fields in gone)
            body = render(header, entries, merged_unpublished(missing), lists, gone_files)
            written, version = self._put(key, body, tmp)
            pending = (f.file_id for f in merged_unpublished(missing) if f.status == PENDING)
            first_pending = tuple(islice(pending, FILES_PER_CODE))
        return ManifestRef(
            self.bucket, key, version, written.sha256, written.size, entries.count,
            listed.key, None if copy is None else copy.key, first_pending, header.revision,
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
    """The sorted runs' entries, a pass per call; `count` (and, a revision's, `marks`: entries
    by mark) is the last pass's. A revision's entries are joined to their sorted marks: an
    entry without one is unchanged, a mark without an entry (its object unverified) is left."""

    def __init__(self, runs: list[str], marks: _SortedRecords | None = None) -> None:
        self._runs, self._marks, self.count = runs, marks, 0
        self.marks: Counter[str] = Counter()

    def __call__(self) -> Iterator[ManifestEntry]:
        self.count, self.marks = 0, Counter()  # each pass counts the same entries
        marks = iter(self._marks or ())
        mark = next(marks, None)
        for found in merged(self._runs):
            entry = found
            if self._marks is not None:
                while mark is not None and mark["file_id"] < entry.file_id:
                    mark = next(marks, None)
                entry = _with_mark(entry, mark)
                self.marks[str(entry.revised)] += 1
            self.count += 1
            yield entry


def _with_mark(entry: ManifestEntry, mark: dict[str, Any] | None) -> ManifestEntry:
    """A revision's entry with its mark: the one its FileID has, else unchanged."""
    if mark is None or mark["file_id"] != entry.file_id:
        return replace(entry, revised=Revised.UNCHANGED)
    return replace(
        entry,
        revised=mark["revised"],
        previous_version_id=mark["previous_version_id"],
        previous_sha256=mark["previous_sha256"],
    )


def _marked(
    files: Iterable[PublishedFile], marks: _SortedRecords | None
) -> Iterator[PublishedFile]:
    """`files` as they are, the marks of a revision's changed and added ones kept aside
    (the entries built from them by HEAD carry none)."""
    for file in files:
        if marks is not None and file.revised not in (None, Revised.UNCHANGED):
            replaced = {"previous_version_id": file.previous_version_id}
            marks.add(
                file.file_id,
                {"file_id": file.file_id, "revised": file.revised, **replaced,
                 "previous_sha256": file.previous_sha256},
            )  # fmt: skip
        yield file


class _SortedRecords:
    """Records by FileID in sorted runs on disk, merged on each read: a revision's marks and
    withdrawn files, in bounded memory whatever their number, as the entries are."""

    def __init__(self, directory: str, name: str, run_entries: int) -> None:
        self._directory, self._name, self._run_entries = directory, name, run_entries
        self._run: list[str] = []
        self._paths: list[str] = []
        self.count = 0

    def add(self, file_id: str, record: dict[str, Any]) -> None:
        """Keep `record` (the FileID first on its line: plain line order is FileID order)."""
        self._run.append(f"{file_id}\t{canonical_json(record)}\n")
        self.count += 1
        if len(self._run) >= self._run_entries:
            self._flush()

    def _flush(self) -> None:
        if self._run:
            path = os.path.join(self._directory, f"{self._name}-{len(self._paths):05d}.jsonl")
            with open(path, "w", encoding="ascii") as out:
                out.writelines(sorted(self._run))
            self._paths.append(path)
            self._run = []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._flush()
        files = [open(path, encoding="ascii") for path in self._paths]  # noqa: SIM115 (closed below)
        try:
            for line in heapq.merge(*files):
                yield json.loads(line.partition("\t")[2])
        finally:
            for handle in files:
                handle.close()


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

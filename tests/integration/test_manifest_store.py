"""S3ManifestStore against moto over HTTP: a manifest large enough for a multipart upload,
sorted across runs, verified on a replay; a conflicting manifest; the pointer's condition."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.domain.manifest import (
    DayPointer,
    ManifestConflictError,
    ManifestHeader,
    PublishedFile,
    StoredObject,
    parse_manifest,
)
from dlpipe.local.provision import Provisioned
from tests.support import unique_day

pytestmark = pytest.mark.integration
FILES = 20_000  # ~7 MB of manifest (348 B a file here): two parts of a multipart upload
SHA = "ab" * 32


class ObjectsThere(S3ManifestStore):
    """The real store, whose HEADs of the listed files answer as if each were published (20,000
    PutObjects would only slow the test); the manifest's own key is HEADed for real."""

    def head(self, key: str, version_id: str | None = None) -> StoredObject | None:
        if key.startswith("_dlpipe/"):
            return super().head(key, version_id)
        return StoredObject(f"v-{key[-12:]}", 7, SHA)


def _counted(clients: AwsClients) -> Counter[str]:
    calls: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    clients.s3.meta.events.register("before-call.s3", count)
    return calls


def _header(day: str) -> ManifestHeader:
    batch = f"batch-{day}-0b5e6f3c-9d1a-4c7e-8f2b-1a2b3c4d5e6f"
    stamp = "2026-03-01T06:00:00.000Z"
    return ManifestHeader("default", day, batch, "completed", FILES, FILES, 0, 0, stamp, stamp)


def _files(day: str) -> list[PublishedFile]:
    files = [
        PublishedFile(f"e{n:06d}-{day}", f"e{n:06d}", f"e{n:06d}/{day}/e{n:06d}-{day}", 7, SHA)
        for n in range(FILES)
    ]
    random.Random(7).shuffle(files)  # BatchIndex order is no FileID order
    return files


def test_a_large_manifest_goes_up_in_parts_sorted_and_a_replay_writes_nothing(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """20,000 shuffled files in runs of 1,000: one multipart upload, entries in FileID order,
    its SHA-256 in the object's metadata; the same write again PUTs nothing."""
    bucket, day = str(provisioned.destination_bucket), unique_day()
    calls = _counted(clients)
    store = ObjectsThere(clients.s3, bucket, run_entries=1_000)
    ref = store.write(_header(day), _files(day))
    assert calls["CompleteMultipartUpload"] == 1
    assert calls["UploadPart"] == 2
    body = clients.s3.get_object(Bucket=bucket, Key=ref.key)["Body"].read()
    head = clients.s3.head_object(Bucket=bucket, Key=ref.key)
    assert (ref.size, ref.sha256) == (len(body), hashlib.sha256(body).hexdigest())
    assert head["Metadata"]["sha256"] == ref.sha256
    assert ref.version_id == head["VersionId"]
    entries = parse_manifest(body).entries
    assert [e.file_id for e in entries] == sorted(f.file_id for f in _files(day))
    assert entries[0].version_id == f"v-{entries[0].key[-12:]}"
    before = calls.copy()
    assert store.write(_header(day), _files(day)) == ref
    assert calls["PutObject"] == before["PutObject"]
    assert calls["CreateMultipartUpload"] == before["CreateMultipartUpload"]


def test_other_bytes_at_the_key_are_a_conflict_never_overwritten(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """A manifest key already holding another manifest refuses the write and keeps its bytes."""
    bucket, day = str(provisioned.destination_bucket), unique_day()
    store = ObjectsThere(clients.s3, bucket)
    ref = store.write(_header(day), _files(day)[:3])
    with pytest.raises(ManifestConflictError, match="conflicts"):
        store.write(_header(day), _files(day)[:4])
    body = clients.s3.get_object(Bucket=bucket, Key=ref.key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == ref.sha256


def test_the_pointer_is_written_only_over_the_one_it_was_read_as(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """If-None-Match when there is none, If-Match on the ETag read: a stale write is refused."""
    bucket, day = str(provisioned.destination_bucket), unique_day()
    store = S3ManifestStore(clients.s3, bucket)
    first = DayPointer("default", day, "a", "failed", "t1", "t1", "k1", None, "s", 1)
    second = DayPointer("default", day, "b", "completed", "t2", "t2", "k2", None, "s", 1)
    assert store.read_pointer("default", day) is None
    assert store.put_pointer(first, etag=None)
    assert not store.put_pointer(second, etag=None)  # one exists now
    found = store.read_pointer("default", day)
    assert found is not None
    assert found[0] == first
    assert store.put_pointer(second, etag=found[1])
    assert not store.put_pointer(first, etag=found[1])  # the ETag it was read as is gone
    again = store.read_pointer("default", day)
    assert again is not None
    assert again[0] == second

"""A revision's publish replaces the previous revision's object and nothing else: the sink's
`replaces_etag` sends `If-Match: <ETag>` on PutObject and CompleteMultipartUpload, over HTTP to
the emulator (moto completes a multipart upload whatever its If-Match says: dlpipe/local/moto_s3.py
makes it refuse as S3 does)."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.sink import MIN_PART_BYTES, MultipartSink
from dlpipe.domain.download_errors import ObjectExists
from dlpipe.local.provision import Provisioned

pytestmark = pytest.mark.integration
SMALL = b"corrected small file\n"
LARGE = b"x" * (MIN_PART_BYTES + 1024)  # two parts: CompleteMultipartUpload at publish


def _versions(clients: AwsClients, bucket: str, key: str) -> list[dict[str, Any]]:
    listing = clients.s3.list_object_versions(Bucket=bucket, Prefix=key)
    return [dict(v) for v in listing.get("Versions", []) if v["Key"] == key]


def _first(clients: AwsClients, bucket: str) -> tuple[str, str]:
    """A fresh key holding revision 1; (the key, its ETag)."""
    key = f"restated/{uuid.uuid4().hex}.csv"
    etag = clients.s3.put_object(Bucket=bucket, Key=key, Body=b"revision 1\n")["ETag"]
    return key, etag


def _publish(clients: AwsClients, bucket: str, key: str, body: bytes, etag: str) -> None:
    sink = MultipartSink(clients.s3, bucket, key, part_bytes=MIN_PART_BYTES, replaces_etag=etag)
    try:
        sink.write(body)
        sink.publish(hashlib.sha256(body).hexdigest())
    finally:
        sink.abort()


@pytest.mark.parametrize("body", [SMALL, LARGE], ids=["put-object", "multipart"])
def test_a_revision_replaces_the_previous_revisions_object_with_one_new_version(
    clients: AwsClients, provisioned: Provisioned, body: bytes
) -> None:
    """If-Match on the current ETag: one new version over revision 1, holding the new bytes."""
    bucket = str(provisioned.destination_bucket)
    key, etag = _first(clients, bucket)
    _publish(clients, bucket, key, body, etag)
    assert len(_versions(clients, bucket, key)) == 2
    assert clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body


@pytest.mark.parametrize("body", [SMALL, LARGE], ids=["put-object", "multipart"])
def test_a_revision_over_another_object_is_refused_and_writes_nothing(
    clients: AwsClients, provisioned: Provisioned, body: bytes
) -> None:
    """The key moved on since the previous revision (a stale ETag): ObjectExists, and the key
    keeps its two versions; a key holding nothing is refused too."""
    bucket = str(provisioned.destination_bucket)
    key, stale = _first(clients, bucket)
    clients.s3.put_object(Bucket=bucket, Key=key, Body=b"someone else's revision 2\n")
    with pytest.raises(ObjectExists, match="holds another object"):
        _publish(clients, bucket, key, body, stale)
    assert len(_versions(clients, bucket, key)) == 2
    with pytest.raises(ObjectExists, match="holds no object"):
        _publish(clients, bucket, f"restated/{uuid.uuid4().hex}.csv", body, stale)

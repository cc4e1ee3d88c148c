"""The moto memory fixes (dlpipe/local/moto_memory.py) in-process, against moto's own S3 and SQS
backends: ListObjectVersions answers as moto's own function does while copying only the keys under
its prefix, and no model object outlives its last reference."""

from __future__ import annotations

import gc
import itertools
import tracemalloc
import uuid
import weakref
from typing import Any

import pytest

from dlpipe.local.moto_memory import apply_fixes

ACCOUNT = "123456789012"


@pytest.fixture(scope="module")
def s3() -> Any:
    """moto's S3 backend with the fixes, on a fresh account."""
    apply_fixes()
    # Imported here: moto is heavy, and only these tests need it in-process.
    from moto.s3.models import s3_backends

    return s3_backends[str(uuid.uuid4().int)[:12]]["aws"]


def _bucket(s3: Any, versioned: bool = True) -> str:
    name = f"mem-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(name, "us-east-1")
    if versioned:
        s3.put_bucket_versioning(name, "Enabled")
    return name


def _pages(list_versions: Any, backend: Any, bucket: str, **request: Any) -> list[Any]:
    """Every page of a listing, markers followed, as comparable tuples."""
    pages: list[Any] = []
    key_marker = version_marker = None
    for _ in range(100):
        versions, prefixes, markers, key_marker, version_marker = list_versions(
            backend, bucket, key_marker=key_marker, version_id_marker=version_marker, **request
        )
        pages.append(
            (
                [(v.name, v.version_id, v.is_latest) for v in versions],
                list(prefixes),
                [(m.name, m.version_id, m.is_latest) for m in markers],
                key_marker,
                version_marker,
            )
        )
        if key_marker is None:
            return pages
    raise AssertionError("the listing never ended")


def test_list_object_versions_answers_as_moto_does(s3: Any) -> None:
    """Prefixes, delimiters, page sizes, several versions and delete markers: the same pages."""
    from moto.s3.models import S3Backend

    original = S3Backend.list_object_versions.__wrapped__
    bucket = _bucket(s3)
    for name in ["a/b/1", "a/b/2", "a/c", "ab", "b/1", "b/2/x", "c"]:
        for version in range(3 if name.endswith("1") else 1):
            s3.put_object(bucket, name, f"{name}-{version}".encode())
    s3.delete_object(bucket, "a/c")  # a delete marker over a version
    s3.delete_object(bucket, "b/2/x")
    for prefix, delimiter, max_keys in itertools.product(
        ["", "a", "a/", "a/b/", "b/2/x", "zz"], [None, "/"], [1000, 1, 2, 3]
    ):
        request = {"prefix": prefix, "delimiter": delimiter, "max_keys": max_keys}
        want = _pages(original, s3, bucket, **request)
        got = _pages(S3Backend.list_object_versions, s3, bucket, **request)
        assert got == want, request
    assert len(_pages(original, s3, bucket, prefix="a/b/1")[0][0]) == 3  # the checks saw versions


def test_a_listing_copies_only_the_keys_under_its_prefix(s3: Any) -> None:
    """moto deep-copies the versions it lists, values included: 20 MiB of other keys must not
    be copied to list one small key (they were, on every call, before the fix)."""
    bucket = _bucket(s3)
    for i in range(20):
        s3.put_object(bucket, f"big/{i}", bytes(1024 * 1024))
    s3.put_object(bucket, "small/one", b"x" * 100)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        versions = s3.list_object_versions(bucket, prefix="small/one")[0]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [v.name for v in versions] == ["small/one"]
    assert peak - before < 2 * 1024 * 1024


def test_a_listings_copies_are_freed_with_its_answer(s3: Any) -> None:
    """The versions a listing returns are copies; once its answer is dropped they are gone
    (moto kept every one in `instances_tracked`: ~2.8 MB a call in the soak's checks)."""
    bucket = _bucket(s3)
    s3.put_object(bucket, "k", b"v")
    versions = s3.list_object_versions(bucket, prefix="k")[0]
    copies = [weakref.ref(v) for v in versions]
    assert copies
    del versions
    gc.collect()
    assert [ref() for ref in copies] == [None] * len(copies)


def test_an_overwritten_key_and_a_deleted_message_are_freed(s3: Any) -> None:
    """Nothing but the emulator's state holds a model object: an overwritten S3 key and a
    deleted SQS message are freed, where moto kept every one it ever made."""
    from moto.sqs.models import sqs_backends

    bucket = _bucket(s3, versioned=False)
    s3.put_object(bucket, "k", b"first")
    first = weakref.ref(s3.get_object(bucket, "k"))
    s3.put_object(bucket, "k", b"second")
    sqs = sqs_backends[str(uuid.uuid4().int)[:12]]["us-east-1"]
    sqs.create_queue("mem")
    sent = weakref.ref(sqs.send_message("mem", "body"))
    (received,) = sqs.receive_message("mem", count=1, wait_seconds_timeout=0, visibility_timeout=30)
    sqs.delete_message("mem", received.receipt_handle)
    del received
    gc.collect()
    assert first() is None
    assert sent() is None

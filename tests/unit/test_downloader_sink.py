"""The multipart sink against a recording fake S3: part sizes, bounded buffers, abort."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from dlpipe.adapters.sink import MIN_PART_BYTES, MultipartSink, ObjectExists
from dlpipe.domain.download_errors import DestinationUnavailableError

PART = MIN_PART_BYTES


class FakeS3:
    """Records every call; UploadPart can be slowed down or made to fail."""

    def __init__(
        self,
        part_delay_s: float = 0.0,
        fail_code: str | None = None,
        publish_error: tuple[str, int] | None = None,
    ) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.part_sizes: dict[int, int] = {}
        self.part_delay_s, self.fail_code = part_delay_s, fail_code
        self.publish_error = publish_error  # (code, HTTP status) answered to the publish
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()

    def _record(self, name: str, **request: Any) -> None:
        with self._lock:
            self.calls.append((name, request))

    def create_multipart_upload(self, **request: Any) -> dict[str, str]:
        self._record("create", **request)
        return {"UploadId": "u1"}

    def upload_part(self, **request: Any) -> dict[str, str]:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        time.sleep(self.part_delay_s)
        with self._lock:
            self.in_flight -= 1
            self.part_sizes[request["PartNumber"]] = len(request["Body"])
        if self.fail_code:
            raise ClientError({"Error": {"Code": self.fail_code}}, "UploadPart")
        return {"ETag": f"e{request['PartNumber']}"}

    def complete_multipart_upload(self, **request: Any) -> None:
        self._record("complete", **request)
        self._refuse_publish("CompleteMultipartUpload")

    def _refuse_publish(self, operation: str) -> None:
        if self.publish_error:
            code, status = self.publish_error
            error: Any = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
            raise ClientError(error, operation)

    def abort_multipart_upload(self, **request: Any) -> None:
        self._record("abort", **request)

    def put_object(self, **request: Any) -> None:
        self._record("put", **request)
        self._refuse_publish("PutObject")

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def feed(sink: MultipartSink, total: int, chunk: int = 1_000_003) -> None:
    for start in range(0, total, chunk):
        sink.write(b"x" * min(chunk, total - start))


@pytest.mark.parametrize("in_flight", [0, 2])
def test_parts_are_exactly_part_sized_but_the_last(in_flight: int) -> None:
    """2.5 parts of plaintext: two full parts and a half one, completed in order."""
    s3 = FakeS3()
    sink = MultipartSink(
        s3, "b", "k", part_bytes=PART, max_in_flight=in_flight, expected_sha256="a" * 64
    )  # type: ignore[arg-type]
    feed(sink, PART * 5 // 2)
    sink.publish("a" * 64)
    assert s3.part_sizes == {1: PART, 2: PART, 3: PART // 2}
    assert s3.names() == ["create", "complete"]
    create, complete = s3.calls[0][1], s3.calls[1][1]
    assert create["Metadata"] == {"sha256": "a" * 64}
    assert [p["PartNumber"] for p in complete["MultipartUpload"]["Parts"]] == [1, 2, 3]


def test_in_flight_parts_and_buffers_stay_bounded() -> None:
    """Ten parts with slow uploads: never more than max_in_flight at once, buffers reused."""
    s3 = FakeS3(part_delay_s=0.02)
    sink = MultipartSink(s3, "b", "k", part_bytes=PART, max_in_flight=2)  # type: ignore[arg-type]
    feed(sink, PART * 10)
    sink.publish("a" * 64)
    assert s3.max_in_flight == 2
    assert len(sink._spare) + 1 <= 3  # buffers ever allocated: in flight + the one filling


def test_a_small_file_is_one_put_with_its_sha256_and_no_multipart() -> None:
    """Below one part (and zero bytes) the object is a single PutObject at publish."""
    for size in (0, 10):
        s3 = FakeS3()
        sink = MultipartSink(s3, "b", "k", part_bytes=PART)  # type: ignore[arg-type]
        feed(sink, size)
        assert s3.calls == []
        sink.publish("f" * 64)
        ((name, request),) = s3.calls
        assert (name, len(request["Body"]), request["Metadata"]) == (
            "put",
            size,
            {"sha256": "f" * 64},
        )


def test_abort_after_parts_aborts_the_upload_once_and_never_completes() -> None:
    """abort() abandons the upload; a second abort() does nothing."""
    s3 = FakeS3()
    sink = MultipartSink(s3, "b", "k", part_bytes=PART, max_in_flight=2)  # type: ignore[arg-type]
    feed(sink, PART * 2)
    sink.abort()
    sink.abort()
    assert s3.names() == ["create", "abort"]


class RefusingAbortS3(FakeS3):
    """AbortMultipartUpload is refused for good (not throttling, not a 5xx)."""

    def abort_multipart_upload(self, **request: Any) -> None:
        super().abort_multipart_upload(**request)
        raise ClientError({"Error": {"Code": "AccessDenied"}}, "AbortMultipartUpload")


def test_a_refused_abort_is_a_domain_error_naming_the_code() -> None:
    """No botocore type leaves the sink: the caller logs a DestinationUnavailableError."""
    s3 = RefusingAbortS3()
    sink = MultipartSink(s3, "b", "k", part_bytes=PART, max_in_flight=1)  # type: ignore[arg-type]
    feed(sink, PART * 2)
    with pytest.raises(DestinationUnavailableError, match="AccessDenied") as caught:
        sink.abort()
    assert isinstance(caught.value.__cause__, ClientError)
    assert s3.names() == ["create", "abort"]


def test_abort_after_publish_does_nothing() -> None:
    """A published object is never aborted by the finally that guards failures."""
    s3 = FakeS3()
    sink = MultipartSink(s3, "b", "k", part_bytes=PART)  # type: ignore[arg-type]
    feed(sink, PART + 1)
    sink.publish("a" * 64)
    sink.abort()
    assert s3.names() == ["create", "complete"]


@pytest.mark.parametrize("code", ["SlowDown", "InternalError", "NoSuchUpload"])
def test_s3_throttling_and_5xx_are_transient(code: str) -> None:
    """SlowDown, InternalError and NoSuchUpload surface as DestinationUnavailableError."""
    sink = MultipartSink(FakeS3(fail_code=code), "b", "k", part_bytes=PART)  # type: ignore[arg-type]
    with pytest.raises(DestinationUnavailableError, match=code):
        feed(sink, PART)


def test_other_s3_errors_are_not_disguised_as_transient() -> None:
    """AccessDenied is re-raised as it is (a configuration fault, not a retryable one)."""
    sink = MultipartSink(FakeS3(fail_code="AccessDenied"), "b", "k", part_bytes=PART)  # type: ignore[arg-type]
    with pytest.raises(ClientError):
        feed(sink, PART)


def test_parts_below_the_s3_minimum_are_refused() -> None:
    """A part size S3 would reject at completion is refused up front."""
    with pytest.raises(ValueError, match="at least"):
        MultipartSink(FakeS3(), "b", "k", part_bytes=PART - 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [10, PART * 2])
def test_every_publish_is_create_only(size: int) -> None:
    """PutObject and CompleteMultipartUpload both carry If-None-Match: *."""
    s3 = FakeS3()
    sink = MultipartSink(s3, "b", "k", part_bytes=PART)  # type: ignore[arg-type]
    feed(sink, size)
    sink.publish("a" * 64)
    assert s3.calls[-1][1]["IfNoneMatch"] == "*"


@pytest.mark.parametrize("size", [10, PART * 2])
def test_a_412_is_object_exists_and_the_upload_is_left_to_abort(size: int) -> None:
    """PreconditionFailed: ObjectExists, nothing marked published, abort() then cleans up."""
    s3 = FakeS3(publish_error=("PreconditionFailed", 412))
    sink = MultipartSink(s3, "b", "k", part_bytes=PART)  # type: ignore[arg-type]
    feed(sink, size)
    with pytest.raises(ObjectExists, match="already exists"):
        sink.publish("a" * 64)
    assert not sink.published
    sink.abort()
    assert s3.names()[-1] == ("abort" if size > PART else "put")


def test_a_conflicting_conditional_write_is_transient() -> None:
    """409 ConditionalRequestConflict (a concurrent conditional write): retry, not a verdict."""
    s3 = FakeS3(publish_error=("ConditionalRequestConflict", 409))
    sink = MultipartSink(s3, "b", "k", part_bytes=PART)  # type: ignore[arg-type]
    feed(sink, 10)
    with pytest.raises(DestinationUnavailableError, match="ConditionalRequestConflict"):
        sink.publish("a" * 64)

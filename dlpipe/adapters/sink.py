"""Plaintext into one S3 object by multipart upload, part by part, published only on request.

Memory is bounded by (max_in_flight + 1) part buffers whatever the file size. Nothing is
visible in the bucket before `publish`; `abort` (idempotent, for a finally) leaves no
object and no in-progress upload behind.

Publication is conditional (`If-None-Match: *` on PutObject and CompleteMultipartUpload):
S3 refuses it with 412 when the key exists, so however long a worker paused after its last
lease check, it can never add a second version or overwrite: it gets ObjectExists instead.
A restated file's new revision is published with `If-Match: <ETag>` of the previous
revision's object instead (`replaces_etag`): one version per revision, ObjectExists otherwise.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.domain.download_errors import DestinationUnavailableError, ObjectExists

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

MIN_PART_BYTES = 5 * 1024 * 1024  # S3's minimum for every part but the last
SHA256_METADATA = "sha256"  # stored as x-amz-meta-sha256
# NoSuchUpload: a worker that took the file over aborted our upload; the retry's lease check
# then finds the lease lost. ConditionalRequestConflict (409): a conditional write raced
# another one on the same key; the retry then gets 412 or succeeds.
_TRANSIENT_CODES = frozenset(
    {"SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "Throttling"}
    | {"ThrottlingException", "RequestLimitExceeded", "NoSuchUpload"}
    | {"ConditionalRequestConflict"}
)
_EXISTS_CODES = frozenset({"PreconditionFailed", "412"})
_MISSING_CODES = frozenset({"404", "NoSuchKey", "NotFound"})


def _code(exc: BaseException | None) -> str:
    return (
        str(exc.response.get("Error", {}).get("Code", "")) if isinstance(exc, ClientError) else ""
    )


def multipart_etag(part_etags: list[str]) -> str:
    """The ETag S3 gives the object a multipart upload of these parts completes into."""
    joined = b"".join(bytes.fromhex(tag.strip('"')) for tag in part_etags)
    return f'"{hashlib.md5(joined, usedforsecurity=False).hexdigest()}-{len(part_etags)}"'


def _refused_because_exists(exc: ClientError) -> bool:
    code = exc.response.get("Error", {}).get("Code", "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return code in _EXISTS_CODES or status == 412


T = TypeVar("T")


def s3_call(operation: str, call: Callable[..., T], **request: Any) -> T:
    """One S3 call; throttling, 5xx and connection faults become DestinationUnavailableError."""
    try:
        return call(**request)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code in _TRANSIENT_CODES or status >= 500:
            raise DestinationUnavailableError(f"{operation} failed: {code or status}") from exc
        raise
    except BotoCoreError as exc:
        raise DestinationUnavailableError(f"{operation} failed: {type(exc).__name__}") from exc


class MultipartSink:
    """Writes plaintext to s3://bucket/key; small files become one PutObject at publish."""

    def __init__(
        self,
        s3: S3Client,
        bucket: str,
        key: str,
        *,
        part_bytes: int,
        max_in_flight: int = 0,
        expected_sha256: str | None = None,
        replaces_etag: str | None = None,
    ) -> None:
        if part_bytes < MIN_PART_BYTES:
            raise ValueError(f"part_bytes must be at least {MIN_PART_BYTES} (S3 minimum)")
        self._s3, self.bucket, self.key = s3, bucket, key
        self._expected_sha256 = expected_sha256
        # A revision's publish replaces the object of this ETag (the previous revision's) and
        # nothing else; None: the key's first object, create-only.
        self._replaces_etag = replaces_etag
        self._buffer, self._filled, self._spare = bytearray(part_bytes), 0, list[bytearray]()
        self._max_in_flight = max_in_flight
        self._pool = ThreadPoolExecutor(max_in_flight) if max_in_flight else None
        self._in_flight: deque[tuple[Future[str], bytearray]] = deque()
        self._etags: list[str] = []
        self._size = 0  # plaintext bytes written
        self.upload_id: str | None = None
        self.published = False

    @property
    def part_count(self) -> int:
        """Parts uploaded (or uploading) so far."""
        return len(self._etags) + len(self._in_flight)

    def write(self, data: bytes) -> None:
        """Append plaintext; every full buffer becomes one part."""
        view, size = memoryview(data), len(self._buffer)
        self._size += len(data)
        while view:
            take = min(len(view), size - self._filled)
            self._buffer[self._filled : self._filled + take] = view[:take]
            self._filled += take
            view = view[take:]
            if self._filled == size:
                self._flush_part()

    def _flush_part(self) -> None:
        if self.upload_id is None:
            self.upload_id = self._create()
        number, buffer = self.part_count + 1, self._buffer
        body = buffer if self._filled == len(buffer) else bytes(memoryview(buffer)[: self._filled])
        self._filled = 0
        if self._pool is None:
            self._etags.append(self._upload_part(number, body))
            return
        while len(self._in_flight) >= self._max_in_flight:
            self._collect_oldest()
        self._in_flight.append((self._pool.submit(self._upload_part, number, body), buffer))
        # The submitted buffer belongs to its upload until collected: fill another one.
        self._buffer = self._spare.pop() if self._spare else bytearray(len(buffer))

    def _collect_oldest(self) -> None:
        future, buffer = self._in_flight.popleft()
        self._spare.append(buffer)
        self._etags.append(future.result())

    def _create(self) -> str:
        extra: dict[str, Any] = {}
        if self._expected_sha256:
            extra["Metadata"] = {SHA256_METADATA: self._expected_sha256}
        response = s3_call(
            "CreateMultipartUpload",
            self._s3.create_multipart_upload,
            Bucket=self.bucket,
            Key=self.key,
            **extra,
        )
        return response["UploadId"]

    def _upload_part(self, number: int, body: bytes | bytearray) -> str:
        response = s3_call(
            "UploadPart",
            self._s3.upload_part,
            Bucket=self.bucket,
            Key=self.key,
            UploadId=str(self.upload_id),
            PartNumber=number,
            Body=body,
        )
        return response["ETag"]

    def publish(self, sha256_hex: str) -> None:
        """Make the object visible unless the key exists; ObjectExists if it does (nothing
        is written then, and the upload stays open for `abort`)."""
        if self.upload_id is None:
            body = bytes(memoryview(self._buffer)[: self._filled])
            self._conditional(
                "PutObject",
                self._s3.put_object,
                Body=body,
                Metadata={SHA256_METADATA: sha256_hex},
            )
        else:
            if self._filled:
                self._flush_part()
            while self._in_flight:
                self._collect_oldest()
            self._complete(sha256_hex)
        self.published = True
        self._shutdown_pool()

    def _complete(self, sha256_hex: str) -> None:
        parts: Any = [{"PartNumber": n, "ETag": tag} for n, tag in enumerate(self._etags, 1)]
        try:
            self._conditional(
                "CompleteMultipartUpload",
                self._s3.complete_multipart_upload,
                UploadId=str(self.upload_id),
                MultipartUpload={"Parts": parts},
            )
        except DestinationUnavailableError as exc:
            # botocore re-sends a completion whose response was lost; S3 may answer the
            # re-send NoSuchUpload, since the upload is gone because it completed. Only the
            # object tells that apart from an upload a successor aborted: look before anything
            # else is tried (an abort, a second upload).
            if _code(exc.__cause__) != "NoSuchUpload" or not self._completed_already(sha256_hex):
                raise

    def _completed_already(self, sha256_hex: str) -> bool:
        """True when the object at the key is this upload, completed; ObjectExists when it is
        another object; False when there is none (the upload was aborted: a transient fault)."""
        try:
            head = s3_call("HeadObject", self._s3.head_object, Bucket=self.bucket, Key=self.key)
        except ClientError as exc:
            if _code(exc) in _MISSING_CODES:
                return False
            raise
        stored_sha256 = head.get("Metadata", {}).get(SHA256_METADATA)
        ours = (
            head.get("ETag") == multipart_etag(self._etags)
            and head.get("ContentLength") == self._size
            and stored_sha256 in (None, sha256_hex.lower())
        )
        if not ours:
            raise ObjectExists(f"CompleteMultipartUpload: {self.key} holds another object")
        return True

    def _conditional(self, operation: str, call: Callable[..., Any], **request: Any) -> None:
        # If-None-Match: * makes the write create-only: the one race that must never produce a
        # second version (a stale worker publishing after a successor) is decided by S3 itself.
        # A revision's If-Match: <previous ETag> likewise adds one version over the previous
        # revision's object only: 412 when the key holds another, 404 when it holds none.
        if self._replaces_etag is None:
            condition = {"IfNoneMatch": "*"}
        else:
            condition = {"IfMatch": self._replaces_etag}
        try:
            s3_call(operation, call, Bucket=self.bucket, Key=self.key, **condition, **request)
        except ClientError as exc:
            if _refused_because_exists(exc):
                what = "already exists" if self._replaces_etag is None else "holds another object"
                raise ObjectExists(f"{operation} refused: {self.key} {what}") from exc
            if self._replaces_etag is not None and _code(exc) in _MISSING_CODES:
                raise ObjectExists(f"{operation} refused: {self.key} holds no object") from exc
            raise

    def abort(self) -> None:
        """Abandon an unpublished upload so that no part survives; safe to call twice."""
        # Parts still uploading would outlive an abort issued before they finish.
        wait([future for future, _ in self._in_flight])
        self._in_flight.clear()
        self._shutdown_pool()
        if self.published or self.upload_id is None:
            return
        upload_id, self.upload_id = self.upload_id, None
        try:
            s3_call(
                "AbortMultipartUpload",
                self._s3.abort_multipart_upload,
                Bucket=self.bucket,
                Key=self.key,
                UploadId=upload_id,
            )
        except ClientError as exc:
            # A refusal (access denied, no such upload) is only logged by the caller, and the
            # bucket's lifecycle rule aborts what is left; no botocore type leaves the adapter.
            raise DestinationUnavailableError(
                f"AbortMultipartUpload failed: {_code(exc) or 'refused'}"
            ) from exc

    def _shutdown_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

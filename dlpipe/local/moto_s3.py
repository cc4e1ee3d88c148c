"""A defect of moto's S3 that dlpipe relies on AWS for: CompleteMultipartUpload ignores `If-Match`.

S3 completes a multipart upload with `If-Match: <ETag>` only while the key's current object has
that ETag: 412 PreconditionFailed when it has another, 404 NoSuchKey when there is none (AWS S3
User Guide, "Add preconditions to S3 operations with conditional requests"; API Reference,
CompleteMultipartUpload, `If-Match`). moto 5 checks `If-Match` on PutObject and `If-None-Match`
on both, but publishes a completion whatever its `If-Match` says, so a revision's conditional
publish (one version per revision) would pass locally where AWS refuses it. `apply_fixes()`
checks it before moto's own handler runs. Drop it, and its test in
tests/integration/test_sink_if_match.py, once moto checks the header itself.
"""

from __future__ import annotations

import threading
from typing import Any

_MARKER = "_dlpipe_if_match_fix"
_apply_lock = threading.Lock()


def apply_fixes() -> None:
    """Make moto's CompleteMultipartUpload honour If-Match in this process (idempotent)."""
    from moto.s3.responses import S3Response  # noqa: PLC0415 - emulator child only

    with _apply_lock:
        if not getattr(S3Response, _MARKER, False):
            S3Response._key_response_post = _if_match_first(S3Response._key_response_post)  # type: ignore[method-assign]
            setattr(S3Response, _MARKER, True)


def _if_match_first(original: Any) -> Any:
    def key_response_post(  # noqa: PLR0917 - moto's own signature
        self: Any, request: Any, body: bytes, bucket_name: str, query: Any, key_name: str
    ) -> Any:
        if_match = self.headers.get("If-Match")
        if query.get("uploadId") and if_match:
            from moto.s3.exceptions import MissingKey, PreconditionFailed  # noqa: PLC0415

            current = self.backend.get_object(bucket_name, key_name)
            upload = current.multipart if current is not None else None
            if upload is not None and upload.id == query["uploadId"][0]:
                return original(self, request, body, bucket_name, query, key_name)  # a re-send
            if current is None:
                raise MissingKey(key=key_name)
            if if_match.replace('"', "") != current.etag.replace('"', ""):
                raise PreconditionFailed("If-Match")
        return original(self, request, body, bucket_name, query, key_name)

    return key_response_post

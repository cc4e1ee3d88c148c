"""The downloader's errors: permanent (the job ends `error`) or transient (retry may help).

Every class carries a short, stable `code` that operators see in the job's ErrorMessage;
callers branch on the type (`PermanentError` / `TransientError`), never on the text.
Messages never include key material, IVs or plaintext.
"""

from __future__ import annotations

import re
from typing import ClassVar

from dlpipe.domain.redaction import redact

_CODE = re.compile(r"^[a-z][a-z0-9_]{1,39}$")


class DownloadError(Exception):
    """Base of every error the downloader raises on purpose."""

    code: ClassVar[str] = "download_error"
    default_message: ClassVar[str] = "the download failed"

    def __init_subclass__(cls, **kwargs: object) -> None:
        # Codes are a contract with operators: each class states its own, never inherits one.
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__ or not _CODE.match(cls.code):
            raise TypeError(f"{cls.__name__} must define its own snake_case `code`")

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(detail or self.default_message)

    @property
    def error_message(self) -> str:
        """The text stored in the job's ErrorMessage: `code: message`, redacted."""
        return redact(f"{self.code}: {self}")


class PermanentError(DownloadError):
    """Retrying cannot help (bad data, bad key, bad input): the job ends `error`."""

    code = "permanent_error"
    default_message = "the file cannot be processed"


class TransientError(DownloadError):
    """Retrying may help: the job ends `failed` once its retries run out."""

    code = "transient_error"
    default_message = "a temporary fault interrupted the download"


# --- permanent: keys and parameters -------------------------------------------------------


class InvalidPrivateKeyError(PermanentError):
    """Our configured RSA private key cannot be loaded (not RSA, not PEM, wrong password)."""

    code = "invalid_private_key"
    default_message = "the configured RSA private key could not be loaded"


class WrongKeyError(PermanentError):
    """RSA-OAEP unwrap failed: the file was wrapped for another key, or the wrap is corrupt."""

    code = "wrong_key"
    default_message = (
        "could not unwrap the AES key: it was wrapped for a different RSA key, or it is corrupted"
    )


class MalformedKeyMaterial(PermanentError):
    """The wrapped key is not valid base64, or the unwrapped AES key is not 32 bytes."""

    code = "malformed_key"
    default_message = "the encrypted AES key is malformed"


class InvalidIVError(PermanentError):
    """The IV/nonce is not valid base64 or has the wrong length for its cipher."""

    code = "invalid_iv"
    default_message = "the IV is malformed"


class UnknownCipherError(PermanentError):
    """The file names a cipher other than AES-256-CBC or AES-256-GCM."""

    code = "unknown_cipher"
    default_message = "unsupported cipher"


class InvalidMetadataError(PermanentError):
    """The provider's declared size or SHA-256 is malformed, so the file cannot be verified."""

    code = "invalid_metadata"
    default_message = "the declared size or SHA-256 is malformed"


# --- permanent: the ciphertext or plaintext is wrong --------------------------------------


class PaddingError(PermanentError):
    """CBC plaintext has bad PKCS7 padding, or the ciphertext is not whole blocks."""

    code = "bad_padding"
    default_message = "bad PKCS7 padding: the file is truncated or tampered with"


class AuthenticationError(PermanentError):
    """The GCM tag does not match: the ciphertext or tag was tampered with or truncated."""

    code = "tag_mismatch"
    default_message = "GCM authentication failed: the file is tampered with or truncated"


class TruncatedError(PermanentError):
    """The ciphertext is too short to be valid (shorter than a GCM tag, or empty CBC)."""

    code = "truncated"
    default_message = "the ciphertext is truncated"


class SizeMismatchError(PermanentError):
    """The plaintext size differs from the declared size."""

    code = "size_mismatch"

    def __init__(self, expected: int, actual: int, complete: bool = True) -> None:
        # complete=False: refused early, `actual` is only what was read before refusing.
        what = (
            f"{actual} bytes" if complete else f"more than {expected} bytes (refused at {actual})"
        )
        super().__init__(f"plaintext size mismatch: expected {expected} bytes, got {what}")
        self.expected = expected
        self.actual = actual
        self.complete = complete

    def __reduce__(self) -> tuple[object, ...]:
        # Exceptions pickle through `args` (here the message): rebuild from the fields instead.
        return (type(self), (self.expected, self.actual, self.complete))


class ChecksumMismatchError(PermanentError):
    """The plaintext's SHA-256 differs from the declared one."""

    code = "checksum_mismatch"

    def __init__(self, expected: str, actual: str) -> None:
        super().__init__(f"plaintext SHA-256 mismatch: expected {expected}, got {actual}")
        self.expected = expected
        self.actual = actual

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.expected, self.actual))


# --- the job record, the source URL and the destination bucket ----------------------------


class InvalidJobError(PermanentError):
    """The job record cannot be processed as stored (bad entity, date or FileID)."""

    code = "invalid_job"
    default_message = "the job record is malformed"


class FeedNotConfiguredError(PermanentError):
    """The job's feed is configured nowhere this downloader looks: no key, provider or
    destination of its own, and another feed's must never stand in."""

    code = "unknown_feed"
    default_message = "the job's feed is not configured"


class DestinationConflictError(PermanentError):
    """The destination key already holds different bytes: it is never overwritten."""

    code = "destination_conflict"
    default_message = "the destination already holds a different object"


class SourceNotFoundError(PermanentError):
    """The presigned URL answers 404: the provider's object does not exist."""

    code = "source_not_found"
    default_message = "the source object does not exist (HTTP 404)"


class SourceRejectedError(PermanentError):
    """The presigned URL answers a 4xx that no retry or refresh can fix."""

    code = "source_rejected"
    default_message = "the source refused the request"


class ProviderRejectedError(PermanentError):
    """The provider refused to re-sign the URL for good (unknown file, bad token, bad answer)."""

    code = "provider_rejected"
    default_message = "the provider refused to sign a fresh URL"


class SourceUnavailableError(TransientError):
    """Connection error, timeout, broken body, 5xx or 429 from the source; may carry Retry-After."""

    code = "source_unavailable"
    default_message = "the source could not be read"

    def __init__(self, detail: str | None = None, retry_after_s: float | None = None) -> None:
        super().__init__(detail)
        self.retry_after_s = retry_after_s


class UrlNotAllowedError(PermanentError):
    """The URL policy refuses the provider's URL (scheme, host, userinfo, address, redirect)."""

    code = "url_refused"
    default_message = "the URL is not allowed"


class UrlRefusedError(TransientError):
    """The presigned URL answers 403: a freshly signed URL may work."""

    code = "url_rejected"
    default_message = "the presigned URL was refused (HTTP 403)"


class UrlExpiredError(UrlRefusedError):
    """The presigned URL has expired (403 "Request has expired")."""

    code = "url_expired"
    default_message = "the presigned URL has expired"


class ProviderSlowError(TransientError):
    """The file's source sent fewer bytes than the stall floor in a whole window
    (dlpipe/domain/stall.py): abandoned, its claim given back for a later attempt."""

    code = "provider_slow"
    default_message = "the source is below the stall floor"


class ProviderUnreachableError(TransientError):
    """The provider could not sign a fresh URL just now (unreachable, 5xx, throttled)."""

    code = "provider_unavailable"
    default_message = "the provider is unavailable"


class DestinationUnavailableError(TransientError):
    """The destination bucket throttled, failed (5xx) or could not be reached."""

    code = "destination_unavailable"
    default_message = "the destination bucket is unavailable"


class QueueUnavailableError(TransientError):
    """SQS refused or could not be reached while receiving (no message was taken)."""

    code = "queue_unavailable"
    default_message = "the download queue is unavailable"


class ObjectExists(Exception):
    """The conditional publish was refused: an object already exists at the key."""


# --- capacity (large-files) -------------------------------------------------------------------


class TooLargeForWorkerError(TransientError):
    """The file cannot finish in this worker's time budget at the minimum throughput.

    Transient, so the job ends `failed` (requeue-able): a worker with more time, e.g. the
    long-poll worker behind the large-file queue, can still finish it.
    """

    code = "too_large_for_worker"
    default_message = "the file cannot finish in this worker's time budget"

"""Presigned GET URLs for the stub provider, including honestly expired ones.

An expired URL is signed by botocore's own SigV4 query signer with a signing time in the
past: a valid signature whose X-Amz-Date + X-Amz-Expires lies behind us, exactly what a
provider that minted the URL an hour ago would have handed out. No sleeping, no editing of
a signed URL; S3 (and the strict emulator) refuse it with 403 "Request has expired".
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from botocore.auth import SIGV4_TIMESTAMP, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config

from dlpipe.adapters.aws import new_session

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from dlpipe.config import Settings

_EXPIRED_FOR = timedelta(minutes=1)  # how long ago an "expired" URL stopped working


@dataclass(frozen=True)
class SignedUrl:
    """A presigned GET URL and when it stops working."""

    url: str
    expires_at: datetime

    @property
    def expires_at_iso(self) -> str:
        """`expires_at` as ISO 8601 UTC, seconds precision."""
        return self.expires_at.isoformat(timespec="seconds").replace("+00:00", "Z")


class _SignedAtQueryAuth(S3SigV4QueryAuth):
    """botocore's S3 presign signer, with the signing time given instead of read from the clock."""

    def __init__(self, credentials: Any, region: str, expires_s: int, signed_at: datetime) -> None:
        super().__init__(credentials, "s3", region, expires=expires_s)
        self._signed_at = signed_at

    def add_auth(self, request: AWSRequest) -> None:
        # SigV4Auth.add_auth, minus its clock read (its two hooks are missing from the stubs).
        signer: Any = self
        request.context["timestamp"] = self._signed_at.strftime(SIGV4_TIMESTAMP)
        signer._modify_request_before_signing(request)
        canonical = self.canonical_request(request)
        signature = self.signature(self.string_to_sign(request, canonical), request)
        signer._inject_signature_to_request(request, signature)


class Presigner:
    """SigV4 presigned GET URLs for objects at the configured S3 endpoint."""

    def __init__(self, settings: Settings) -> None:
        session = new_session(settings.region)
        config = Config(signature_version="s3v4", s3={"addressing_style": "path"})
        self._s3: S3Client = session.client(
            "s3", endpoint_url=settings.endpoint_for("s3"), config=config
        )
        credentials = session.get_credentials()
        if credentials is None:
            raise RuntimeError("no AWS credentials to presign with (see local_environment)")
        self._credentials = credentials
        self._region = settings.region

    def url(self, bucket: str, key: str, ttl_s: int) -> SignedUrl:
        """A URL valid for `ttl_s` seconds from now."""
        now = datetime.now(UTC).replace(microsecond=0)
        url = self._s3.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=ttl_s
        )
        return SignedUrl(url, now + timedelta(seconds=ttl_s))

    def signed_at(self, bucket: str, key: str, ttl_s: int, signed_at: datetime) -> SignedUrl:
        """A URL signed at `signed_at` (UTC) for `ttl_s` seconds."""
        endpoint = self._s3.meta.endpoint_url.rstrip("/")
        request = AWSRequest(method="GET", url=f"{endpoint}/{bucket}/{quote(key, safe='/~')}")
        credentials = self._credentials.get_frozen_credentials()
        naive_utc = signed_at.astimezone(UTC).replace(tzinfo=None)
        _SignedAtQueryAuth(credentials, self._region, ttl_s, naive_utc).add_auth(request)
        return SignedUrl(str(request.url), signed_at + timedelta(seconds=ttl_s))

    def batch(self, bucket: str, ttl_s: int) -> BatchSigner:
        """A signer of many keys of `bucket`, signed now: ~10 us a URL instead of ~300 us."""
        return BatchSigner(
            self._s3.meta.endpoint_url.rstrip("/"),
            self._credentials.get_frozen_credentials(),
            self._region,
            bucket,
            ttl_s,
            datetime.now(UTC).replace(microsecond=0),
        )

    def expired_url(self, bucket: str, key: str, ttl_s: int) -> SignedUrl:
        """A correctly signed URL whose validity ended a minute ago."""
        signed_at = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=ttl_s)
        return self.signed_at(bucket, key, ttl_s, signed_at - _EXPIRED_FOR)


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _encode(value: str) -> str:
    return quote(value, safe="-_.~")


class BatchSigner:
    """SigV4 query presigning of many GET URLs at one signing time (the stub's large listings).

    The same algorithm as botocore's S3SigV4QueryAuth (a test compares the two signatures),
    with the signing key and the auth parameters computed once instead of per URL.
    """

    def __init__(  # noqa: PLR0917 - the inputs of a signature
        self,
        endpoint: str,
        credentials: Any,
        region: str,
        bucket: str,
        ttl_s: int,
        signed_at: datetime,
    ) -> None:
        self._bucket = bucket
        split = urlsplit(endpoint)
        self._origin = f"{split.scheme}://{split.netloc}"
        self._host, self._base_path = split.netloc, split.path.rstrip("/")
        self._stamp = signed_at.astimezone(UTC).strftime(SIGV4_TIMESTAMP)
        day = self._stamp[:8]
        self._scope = f"{day}/{region}/s3/aws4_request"
        key = _hmac(f"AWS4{credentials.secret_key}".encode(), day)
        for part in (region, "s3", "aws4_request"):
            key = _hmac(key, part)
        self._signing_key = key
        params = {
            "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
            "X-Amz-Credential": f"{credentials.access_key}/{self._scope}",
            "X-Amz-Date": self._stamp,
            "X-Amz-Expires": str(ttl_s),
            "X-Amz-SignedHeaders": "host",
        }
        if credentials.token is not None:
            params["X-Amz-Security-Token"] = credentials.token
        self._query = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(params.items()))
        self.expires_at_iso = SignedUrl("", signed_at + timedelta(seconds=ttl_s)).expires_at_iso

    def url(self, key: str) -> str:
        """The presigned GET URL of `key`."""
        path = f"{self._base_path}/{self._bucket}/{quote(key, safe='/~')}"
        canonical = f"GET\n{path}\n{self._query}\nhost:{self._host}\n\nhost\nUNSIGNED-PAYLOAD"
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        to_sign = f"AWS4-HMAC-SHA256\n{self._stamp}\n{self._scope}\n{digest}"
        signature = hmac.new(self._signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
        return f"{self._origin}{path}?{self._query}&X-Amz-Signature={signature}"

"""Wiring of the consumer API (dlpipe/handoff.py): the day manifests' reader on the caller's
S3 client and bucket, or on those the environment names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.config import ConfigError, Settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


def consumer_manifests(
    s3_client: S3Client | None = None, bucket: str | None = None
) -> S3ManifestStore:
    """The manifests in `bucket` (default: DLPIPE_DEST_BUCKET) through `s3_client` (default:
    a client on the environment's region and endpoints); ConfigError without a bucket."""
    settings = Settings.from_env() if s3_client is None or bucket is None else None
    chosen = bucket or (settings.destination_bucket if settings else None)
    if not chosen:
        raise ConfigError(
            "no bucket: pass bucket=... or set DLPIPE_DEST_BUCKET (the day manifests live in it)"
        )
    if s3_client is None:
        assert settings is not None  # built above whenever no client was given
        s3_client = AwsClients(settings).s3
    return S3ManifestStore(s3_client, chosen)

"""The hand-off, for a consumer's code: is a feed's day ready, and does its manifest verify?

What `dlpipe handoff wait` and `dlpipe handoff show` run, as two calls for an Airflow or
Dagster sensor or a plain script (README, "Hand-off: a consumer's command and call"):

    from dlpipe.handoff import wait_for_day
    day = wait_for_day("vendor-b", "2026-02-28", timeout=3600, bucket="dlpipe-data-...")
    if day.ready:
        load(day.manifest_uri, day.revision)  # a restated day: revision 2, 3, ...

Each call reads the day's pointer (`_dlpipe/manifests/{feed}/{date}/latest.json`) and the
manifest it names through `s3_client` (default: a boto3 client on the environment's region and
endpoints) in `bucket` (default: DLPIPE_DEST_BUCKET). Errors: ValueError for a feed name or
date that is none, HandoffError when the pointer or its manifest cannot be trusted,
dlpipe.config.ConfigError without a bucket, and the AWS errors of dlpipe.domain.errors.

A restated day's pointer moves to its latest revision's manifest: `.revision` says which (1
for a day never restated) and `.revised` its changed, added and withdrawn counts, so a sensor
that keys its runs on (date, revision) loads each revision once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlpipe.bootstrap.handoff import consumer_manifests
from dlpipe.config import ConfigError
from dlpipe.services.ops import handoff as _service
from dlpipe.services.ops.handoff import (
    DayHandoff,
    DayState,
    DayVerification,
    HandoffError,
    ReadyDays,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

DEFAULT_INTERVAL_S = 30.0


def wait_for_day(
    feed: str,
    date: str,
    *,
    timeout: float = 0.0,
    interval: float = DEFAULT_INTERVAL_S,
    s3_client: S3Client | None = None,
    bucket: str | None = None,
    verify: bool = False,
) -> DayHandoff:
    """Look every `interval` seconds until feed `feed`'s day `date` (YYYY-MM-DD) completed or
    failed, or `timeout` seconds passed (0: look once, as a sensor's poke does); the last
    look. `.ready` is True when the day completed; `.state` says which of completed, failed,
    timeout (provisional: a repair may still complete it) or not_yet; `.revision` which
    revision of the day the manifest is (1: not restated). `verify=True`: a
    completed day is ready only once it verifies as `show_day` checks it (a HEAD of every
    object it lists); one that does not raises HandoffError naming its first problem."""
    if timeout < 0 or interval <= 0:
        raise ValueError(f"timeout must be >= 0 and interval > 0, got {timeout} and {interval}")
    store = consumer_manifests(s3_client, bucket)
    return _service.wait_for_day(
        store, store.bucket, feed, date, timeout_s=timeout, interval_s=interval, verify=verify
    )


def ready_days(
    feed: str,
    first: str,
    last: str,
    *,
    s3_client: S3Client | None = None,
    bucket: str | None = None,
    verify: bool = True,
) -> ReadyDays:
    """Feed `feed`'s days from `first` to `last` (YYYY-MM-DD, inclusive), one look each,
    oldest first, up to the first not completed: `.ready` the completed ones (verified, unless
    `verify=False`; a day with no files among them, its counts saying 0 completed),
    `.next_date` the first not handed on (a sensor's next cursor), `.failed` the failed day
    the walk stopped at, if any. A completed day that does not verify raises HandoffError."""
    store = consumer_manifests(s3_client, bucket)
    return _service.ready_days(store, store.bucket, feed, first, last, verify=verify)


def show_day(
    feed: str,
    date: str,
    *,
    s3_client: S3Client | None = None,
    bucket: str | None = None,
) -> DayVerification:
    """Feed `feed`'s day `date`: its manifest checked against the pointer and every object it
    lists HEADed (version, size, SHA-256), and its JSON Lines file list and COPY manifest
    checked against its entries. `.ok` when all verify; `.problems`, one line each."""
    store = consumer_manifests(s3_client, bucket)
    return _service.show_day(store, store.bucket, feed, date)


__all__ = [
    "ConfigError",
    "DayHandoff",
    "DayState",
    "DayVerification",
    "HandoffError",
    "ReadyDays",
    "ready_days",
    "show_day",
    "wait_for_day",
]

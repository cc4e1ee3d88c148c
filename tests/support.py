"""Small test helpers: a manual clock and record factories."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.feeds import Feed
from dlpipe.domain.listing import FileDescriptor
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus, make_batch_id, make_file_id
from dlpipe.domain.rules import batch_ttl_epoch_s, job_ttl_epoch_s

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from dlpipe.adapters.aws import AwsClients

# 2126-02-28T00:00:00Z: a fixed "now" keeps tests independent of the wall clock. It lies in the
# future because DynamoDB Local, like DynamoDB, deletes items whose TTL has passed in real time:
# a test item stamped with a past "now" would vanish under the test.
BASE_MS = 4_927_910_400_000


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, now_ms: int = BASE_MS) -> None:
        self.now = now_ms

    def now_ms(self) -> int:
        """The current (manual) time."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += int(seconds * 1000)


def new_batch_id(day: str = "2026-02-28") -> str:
    """A fresh BatchID for `day`."""
    return make_batch_id(day, str(uuid.uuid4()))


def make_job(
    entity: str,
    day: str = "2026-02-28",
    *,
    batch_id: str | None = None,
    now_ms: int = BASE_MS,
    **changes: object,
) -> FileJob:
    """An available job as the poller would write it."""
    job = FileJob(
        file_id=make_file_id(entity, day),
        batch_id=batch_id or new_batch_id(day),
        status=JobStatus.AVAILABLE,
        entity=entity,
        download_date=day,
        presigned_url="http://127.0.0.1:1/provider/file?X-Amz-Signature=abc",
        encrypted_aes_key="a2V5",
        encoded_aes_iv="aXY=",
        cipher="AES-256-GCM",
        created_at=iso_from_ms(now_ms),
        status_updated_at_ms=now_ms,
        ttl_epoch_s=job_ttl_epoch_s(now_ms // 1000),
        expected_size=123,
        expected_sha256="0" * 64,
    )
    return replace(job, **changes)  # type: ignore[arg-type]


def make_batch(day: str = "2026-02-28", *, now_ms: int = BASE_MS, **changes: object) -> Batch:
    """An initiated batch as create-batch would write it."""
    batch = Batch(
        batch_id=new_batch_id(day),
        polling_date=day,
        status=BatchStatus.INITIATED,
        start_time=iso_from_ms(now_ms),
        created_at=iso_from_ms(now_ms),
        updated_at=iso_from_ms(now_ms),
        ttl_epoch_s=batch_ttl_epoch_s(now_ms // 1000),
    )
    return replace(batch, **changes)  # type: ignore[arg-type]


_USED_DAYS: set[str] = set()
_DAYS_LOCK = threading.Lock()


def unique_day(first_year: int = 3000, last_year: int = 9999) -> str:
    """A polling date no other test of this process (so of its emulators) uses, in
    first_year..last_year, never repeated: the PollingDateIndex holds only the calling test's
    batches, and a feed-day's S3 keys only its objects."""
    draw = random.SystemRandom()
    with _DAYS_LOCK:
        while True:
            year, month, day_of_month = (
                draw.randint(first_year, last_year),
                draw.randint(1, 12),
                draw.randint(1, 28),
            )
            day = f"{year}-{month:02d}-{day_of_month:02d}"
            if day not in _USED_DAYS:
                _USED_DAYS.add(day)
                return day


def descriptor(entity: str, day: str = "2026-02-28") -> FileDescriptor:
    """A valid listing entry for `entity` on `day` (a URL nothing serves)."""
    return FileDescriptor(
        entity=entity,
        date=day,
        url="https://example.invalid/x",
        encrypted_key="a2V5",
        iv="aXY=",
        cipher="AES-256-GCM",
        size=1,
        sha256="0" * 64,
        expires_at=None,
    )


# A named feed as the operator tests configure it (its deadline: 09:00 Berlin time).
VENDOR_B = Feed(
    name="vendor-b",
    schedule="cron(0 5 * * ? *)",
    time_zone="Europe/Berlin",
    provider_base_url="https://b.example.com",
    token_secret="b-token",
    private_key_secret="b-key",
    destination_prefix="vendor-b",
    deadline="09:00",
)


@contextmanager
def own_table(clients: AwsClients, which: int = 0, tag: str = "own") -> Iterator[str]:
    """A tracking table of the caller's own (0: jobs, 1: batches), as terraform/ defines it,
    named `{name}-{tag}-{8 hex}` and deleted afterwards: for a test that weighs what a poll
    reads (the sweeper's StatusIndex Queries would read any job other tests left pending in
    the session's shared table) or that needs a table to itself."""
    from dlpipe.local.provision import table_definitions
    from dlpipe.local.terraform import TerraformModule

    definition = table_definitions(TerraformModule.load())[which]
    name = f"{definition.name}-{tag}-{uuid.uuid4().hex[:8]}"
    clients.dynamodb.create_table(**dict(definition.create_request, TableName=name))
    clients.dynamodb.get_waiter("table_exists").wait(TableName=name)
    try:
        yield name
    finally:
        clients.dynamodb.delete_table(TableName=name)


def put_all(client: DynamoDBClient, table: str, items: list[dict[str, Any]]) -> None:
    """`items` into `table`, one BatchWriteItem per 25, unprocessed items sent again."""
    for start in range(0, len(items), 25):
        pending: dict[str, Any] = {
            table: [{"PutRequest": {"Item": i}} for i in items[start : start + 25]]
        }
        while pending:
            pending = dict(client.batch_write_item(RequestItems=pending)["UnprocessedItems"])

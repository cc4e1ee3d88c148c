"""Which feed a record belongs to, and the operator's choice of feeds (one, or all of them).

The feed is read from the record's key (parse_batch_key, parse_file_key), the one spelling
that every index returns; a key that does not parse falls back to the item's `Feed`. Every
filter here runs after an indexed query: a date's batches are a handful (PollingDateIndex
returns every feed's), and a StatusIndex or DLQ read is already bounded by its limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import Batch, FileJob, parse_batch_key, parse_file_key

# None: every feed (the listings' default); a name: that feed only.
FeedChoice = str | None
T = TypeVar("T", Batch, FileJob)


def batch_feed(batch: Batch) -> str:
    """The feed whose day `batch` runs, from its BatchID."""
    try:
        return parse_batch_key(batch.batch_id)[0]
    except InvalidIdentifierError:
        return batch.feed


def file_feed(file_id: str) -> str | None:
    """The feed a FileID belongs to; None if it is no FileID."""
    try:
        return parse_file_key(file_id)[0]
    except InvalidIdentifierError:
        return None


def job_feed(job: FileJob) -> str:
    """The feed `job` belongs to, from its FileID."""
    return file_feed(job.file_id) or job.feed


def record_feed(record: Batch | FileJob) -> str:
    """The feed of a batch or a job."""
    return batch_feed(record) if isinstance(record, Batch) else job_feed(record)


def chosen(feed: FeedChoice, records: Iterable[T]) -> list[T]:
    """The records of `feed` (all of them for None), in their order."""
    return [r for r in records if feed is None or record_feed(r) == feed]


def feed_order(names: Iterable[str]) -> list[str]:
    """Feed names without repeats: the default feed first, then by name."""
    unique = set(names)
    return sorted(unique, key=lambda n: (n != DEFAULT_FEED_NAME, n))


def feeds_shown(feed: FeedChoice, configured: Iterable[str], batches: Sequence[Batch]) -> list[str]:
    """The feeds a day's screen shows: the chosen one, else every configured feed and every
    feed seen in the date's batches (on AWS, where no feeds file is read, the data alone)."""
    if feed is not None:
        return [feed]
    return feed_order([*configured, *(batch_feed(b) for b in batches)])

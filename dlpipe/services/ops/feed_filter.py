"""Which feed a record belongs to, and the operator's choice of feeds (one, or all of them).

A record's feed is the one its key names (domain/model.py's `batch_feed`, `file_feed`), the
spelling every index returns; a key that does not parse falls back to the item's `Feed`. Every
filter here runs after an indexed query: a date's batches are a handful (PollingDateIndex
returns every feed's), and a StatusIndex or DLQ read is already bounded by its limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import Batch, FileJob, batch_feed, file_feed

# None: every feed (the listings' default); a name: that feed only.
FeedChoice = str | None
T = TypeVar("T", Batch, FileJob)


def record_feed(record: Batch | FileJob) -> str:
    """The feed of a batch or a job: the one its key names, else its `Feed` attribute."""
    if isinstance(record, Batch):
        return batch_feed(record.batch_id, default=record.feed)
    return file_feed(record.file_id, default=record.feed)


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
    return feed_order([*configured, *(record_feed(b) for b in batches)])

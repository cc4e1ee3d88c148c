"""A feed's batches of a date: the day create-batch attaches to, a poll counts across, the
manifest lists and the restatement check compares. Another feed's batch of the same date is
not this day (its files, jobs and objects are its own)."""

from __future__ import annotations

from dlpipe.domain.model import Batch
from dlpipe.services.orchestrator.store_ports import BatchStore


def feed_batches(batches: BatchStore, date: str, feed: str) -> list[Batch]:
    """The batches of `date` that belong to `feed`, in the store's order."""
    return [b for b in batches.query_by_date(date) if b.feed == feed]

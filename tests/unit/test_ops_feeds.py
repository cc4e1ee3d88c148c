"""The ops use cases' feed choice and freshness, on the in-memory batches table (tests/fakes)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace

from dlpipe.domain.clock import ms_from_iso
from dlpipe.domain.feeds import DEFAULT_FEED
from dlpipe.domain.model import Batch, BatchStatus, make_batch_id, make_file_id
from dlpipe.services.ops.backfill import backfill
from dlpipe.services.ops.feed_filter import feeds_shown, record_feed
from dlpipe.services.ops.freshness import day_freshness
from dlpipe.services.ops.queries import day_batches
from tests.fakes.stores import FakeBatchesTable
from tests.support import VENDOR_B, ManualClock, make_batch, make_job

DAY = "2026-02-28"
FEED = "vendor-b"
# 09:00 in Berlin on the day after DAY (winter: UTC+1) is 08:00Z.
DEADLINE_MS = ms_from_iso("2026-03-01T08:00:00Z")
FEEDS = {
    DEFAULT_FEED.name: DEFAULT_FEED,
    FEED: VENDOR_B,
}


def _named(status: BatchStatus = BatchStatus.QUEUED, updated: str | None = None) -> Batch:
    batch_id = make_batch_id(DAY, str(uuid.uuid4()), FEED)
    batch = make_batch(DAY, batch_id=batch_id, feed=FEED, status=status)
    return batch if updated is None else replace(batch, updated_at=updated)


def _table(batches: Sequence[Batch]) -> FakeBatchesTable:
    table = FakeBatchesTable(ManualClock())
    for batch in batches:
        table.create(batch)
    return table


def test_a_records_feed_is_read_from_its_key() -> None:
    """The default feed's keys name no feed; a named feed's name it before the '.'."""
    assert record_feed(make_batch(DAY)) == "default"
    assert record_feed(_named()) == FEED
    named_job = make_job("accounts", DAY, file_id=make_file_id("accounts", DAY, FEED), feed=FEED)
    assert record_feed(named_job) == FEED
    assert record_feed(make_job("accounts", DAY)) == "default"


def test_a_record_whose_key_does_not_parse_is_of_its_feed_attribute() -> None:
    """The item's `Feed` stands in for a key that names no feed."""
    assert record_feed(replace(make_job("accounts", DAY), file_id="x", feed=FEED)) == FEED
    assert record_feed(replace(make_batch(DAY), batch_id="x", feed=FEED)) == FEED


def test_a_date_shows_every_configured_feed_and_every_feed_its_batches_name() -> None:
    """Default first, then by name; a chosen feed alone."""
    seen = [_named(), make_batch(DAY)]
    assert feeds_shown(None, ["default"], seen) == ["default", FEED]
    assert feeds_shown(None, ["zeta", "default"], []) == ["default", "zeta"]
    assert feeds_shown("zeta", ["default"], seen) == ["zeta"]


def test_day_batches_keeps_the_chosen_feeds_batches() -> None:
    """One PollingDateIndex read, every feed's batches, the chosen one's kept."""
    default, named = make_batch(DAY), _named()
    table = _table([default, named])
    assert {b.batch_id for b in day_batches(table, DAY)} == {default.batch_id, named.batch_id}
    assert day_batches(table, DAY, feed=FEED) == [named]
    assert day_batches(table, DAY, feed="default") == [default]


def test_backfill_decides_each_feed_from_its_own_batches() -> None:
    """The default feed's completed day leaves vendor-b's to start."""
    table = _table([make_batch(DAY, status=BatchStatus.COMPLETED)])
    (default,) = backfill(table, [DAY], rerun=False, starter=None)
    (named,) = backfill(table, [DAY], rerun=False, starter=None, feed=FEED)
    assert (default.start, named.start) == (False, True)


def _fresh(batches: Sequence[Batch], now_ms: int, feed: str = FEED) -> str | None:
    found = day_freshness(FEEDS, feed, DAY, batches, now_ms=now_ms, date_offset_days=1)
    return None if found is None else found.label()


def test_a_day_is_due_before_its_deadline_and_late_after_it() -> None:
    """Not completed: due until 08:00Z, then late by the minutes since (rounded up)."""
    assert _fresh([_named()], DEADLINE_MS - 1) == "due"
    assert _fresh([_named()], DEADLINE_MS + 61_000) == "late by 2 min"


def test_a_completed_day_is_on_time_or_late_by_its_completion() -> None:
    """The first completed batch's last write decides, whatever the time now."""
    on_time = _named(BatchStatus.COMPLETED, "2026-03-01T07:59:00.000Z")
    late = _named(BatchStatus.COMPLETED, "2026-03-01T08:30:00.000Z")
    assert _fresh([on_time], DEADLINE_MS + 86_400_000) == "on time"
    assert _fresh([late], DEADLINE_MS + 86_400_000) == "completed, 30 min after its deadline"
    failed_then_late = _fresh([_named(BatchStatus.FAILED), late], DEADLINE_MS)
    assert failed_then_late == "completed, 30 min after its deadline"
    # A rerun completed after the deadline does not make an on-time day late.
    assert _fresh([on_time, late], DEADLINE_MS + 86_400_000) == "on time"


def test_a_feed_without_a_deadline_or_configuration_has_no_freshness() -> None:
    """The default feed (no deadline) and a feed only the data names show nothing."""
    assert _fresh([make_batch(DAY)], DEADLINE_MS, feed="default") is None
    assert _fresh([], DEADLINE_MS, feed="vendor-c") is None

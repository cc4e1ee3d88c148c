"""The batches repository against the emulator over HTTP."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.items import batch_to_item
from dlpipe.domain.errors import BatchExistsError, BatchTransitionRefusedError, CorruptRecordError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import SETS_MAX_FILES, BatchStatus, make_batch_id
from dlpipe.local.provision import Provisioned
from tests.support import BASE_MS, make_batch, unique_day

pytestmark = pytest.mark.integration


def test_created_batch_reads_back_and_a_second_create_is_refused(batches: BatchesTable) -> None:
    """create is idempotent-safe: the same BatchID cannot be written twice (a retry of the
    same create is its success: tests/integration/test_retried_writes.py)."""
    batch = batches.create(make_batch())
    assert batches.get(batch.batch_id) == batch
    with pytest.raises(BatchExistsError) as refused:
        batches.create(replace(batch, start_time="2026-02-28T01:00:00.000+00:00"))
    assert refused.value.current == batch


def test_mark_queued_adds_expected_files_and_a_replay_changes_nothing(
    batches: BatchesTable,
) -> None:
    """ADD to the ExpectedFiles set is idempotent, so a replayed fetch-and-queue is harmless."""
    batch = batches.create(make_batch())
    files = {f"e{i}-2026-02-28" for i in range(3)}
    queued = batches.mark_queued(batch.batch_id, files)
    assert (queued.status, queued.expected_files) == (BatchStatus.QUEUED, files)
    assert batches.mark_queued(batch.batch_id, files).expected_files == files


def test_mark_queued_writes_a_day_at_the_cap_whole(batches: BatchesTable) -> None:
    """A day of SETS_MAX_FILES files lands whole in the one UpdateItem."""
    batch = batches.create(make_batch())
    files = {f"e{i}-2026-02-28" for i in range(SETS_MAX_FILES)}
    assert batches.mark_queued(batch.batch_id, files).expected_files == files


def test_outcome_sets_are_set_with_the_counts_and_a_repaired_file_leaves_failed_files(
    batches: BatchesTable,
) -> None:
    """record_counts SETs CompletedFiles/FailedFiles with the counts: a later poll that finds
    a failed file completed moves it, and an empty set is removed."""
    batch = batches.create(make_batch())
    batches.mark_queued(batch.batch_id, {"a-2026-02-28", "b-2026-02-28", "c-2026-02-28"})
    after = batches.record_counts(
        batch.batch_id,
        completed=1,
        failed=1,
        error=0,
        completed_files={"a-2026-02-28"},
        failed_files={"b-2026-02-28"},
    )
    assert (after.completed_files, after.failed_files) == ({"a-2026-02-28"}, {"b-2026-02-28"})
    assert (after.completed, after.unsuccessful, after.pending) == (1, 1, 1)
    repaired = batches.record_counts(
        batch.batch_id,
        completed=2,
        failed=0,
        error=0,
        completed_files={"a-2026-02-28", "b-2026-02-28"},
        failed_files=set(),
    )
    assert repaired.completed_files == {"a-2026-02-28", "b-2026-02-28"}
    assert repaired.failed_files == frozenset()
    assert repaired.pending_files == {"c-2026-02-28"}


def test_finish_follows_the_batch_status_machine(batches: BatchesTable) -> None:
    """queued -> timeout sets TimeoutAt; timeout -> completed is allowed; completed is final."""
    batch = batches.create(make_batch())
    with pytest.raises(BatchTransitionRefusedError):
        batches.finish(batch.batch_id, BatchStatus.COMPLETED)  # still initiated
    batches.mark_queued(batch.batch_id, {"a-2026-02-28"})
    timed_out = batches.finish(
        batch.batch_id, BatchStatus.TIMEOUT, timeout_at="2026-02-28T06:00:00.000+00:00"
    )
    assert (timed_out.status, timed_out.timeout_at) == (
        BatchStatus.TIMEOUT,
        "2026-02-28T06:00:00.000+00:00",
    )
    assert batches.finish(batch.batch_id, BatchStatus.COMPLETED).status is BatchStatus.COMPLETED
    with pytest.raises(BatchTransitionRefusedError) as refused:
        batches.finish(batch.batch_id, BatchStatus.FAILED)
    assert refused.value.current.status is BatchStatus.COMPLETED


def test_initiated_batch_may_fail_with_a_message(batches: BatchesTable) -> None:
    """A provider outage before queueing ends the batch failed with ErrorMessage."""
    batch = batches.create(make_batch())
    failed = batches.finish(
        batch.batch_id, BatchStatus.FAILED, error_message="provider unreachable"
    )
    assert (failed.status, failed.error_message) == (BatchStatus.FAILED, "provider unreachable")


def test_polling_date_index_lists_a_days_batches_by_status(batches: BatchesTable) -> None:
    """PollingDateIndex: a date's batches, all or only timed-out ones."""
    day = unique_day()
    first = batches.create(make_batch(day))
    second = batches.create(make_batch(day, now_ms=BASE_MS + 1000))
    batches.mark_queued(second.batch_id, {"a-2026-02-28"})
    batches.finish(second.batch_id, BatchStatus.TIMEOUT)
    assert [b.batch_id for b in batches.query_by_date(day)] == [first.batch_id, second.batch_id]
    assert [b.batch_id for b in batches.query_by_date(day, BatchStatus.TIMEOUT)] == [
        second.batch_id
    ]


def test_stored_batch_ttl_is_epoch_seconds_ninety_days_ahead(
    clients: AwsClients, provisioned: Provisioned, batches: BatchesTable
) -> None:
    """The raw item's TTL is a Number of seconds, 90 days after creation."""
    batch = batches.create(make_batch())
    raw = clients.dynamodb.get_item(
        TableName=provisioned.batches_table, Key={"BatchID": {"S": batch.batch_id}}
    )["Item"]
    assert int(raw["TTL"]["N"]) - BASE_MS // 1000 == 90 * 86_400


def test_mark_queued_records_why_listed_entries_were_refused(batches: BatchesTable) -> None:
    """Provider entries that could not become jobs leave an ErrorMessage on the batch."""
    batch = batches.create(make_batch())
    queued = batches.mark_queued(
        batch.batch_id, {"a-2026-02-28"}, error_message="entry ../../etc rejected"
    )
    assert (queued.status, queued.error_message) == (BatchStatus.QUEUED, "entry ../../etc rejected")


def test_a_replayed_mark_queued_sets_the_same_expected_count(batches: BatchesTable) -> None:
    """ExpectedCount is SET to the listing's total, so a replayed fetch-and-queue never doubles it."""
    batch = batches.create(make_batch(unique_day()))
    files = {f"e{i}-2026-02-28" for i in range(5)}
    batches.mark_queued(batch.batch_id, files)
    again = batches.mark_queued(batch.batch_id, files)
    assert (again.expected_count, again.queued_count, again.expected_files) == (5, 5, files)


def test_a_day_over_the_cap_keeps_counts_and_drops_its_sets(batches: BatchesTable) -> None:
    """Past SETS_MAX_FILES the item carries SetsTruncated and no ExpectedFiles."""
    batch = batches.create(make_batch(unique_day()))
    files = {f"e{i}-2026-02-28" for i in range(SETS_MAX_FILES + 1)}
    queued = batches.mark_queued(batch.batch_id, files)
    assert (queued.expected, queued.sets_truncated, queued.expected_files) == (
        SETS_MAX_FILES + 1,
        True,
        frozenset(),
    )


def test_counts_are_recorded_until_the_batch_is_final_then_refused_with_what_it_holds(
    batches: BatchesTable,
) -> None:
    """record_counts lands on a queued or timed-out batch and is refused, with the stored
    batch, once it completed or failed (a second poller's stale counts never overwrite it)."""
    queued = batches.create(make_batch())
    batches.mark_queued(queued.batch_id, {"a-2026-02-28", "b-2026-02-28"})
    assert batches.record_counts(queued.batch_id, completed=1, failed=0, error=0).completed == 1
    batches.finish(queued.batch_id, BatchStatus.TIMEOUT, timeout_at="x")
    assert batches.record_counts(queued.batch_id, completed=2, failed=0, error=0).completed == 2
    for final in (BatchStatus.COMPLETED, BatchStatus.FAILED):
        batch = batches.create(make_batch())
        batches.mark_queued(batch.batch_id, {"a-2026-02-28"})
        batches.record_counts(batch.batch_id, completed=1, failed=0, error=0)
        batches.finish(batch.batch_id, final)
        with pytest.raises(BatchTransitionRefusedError) as refused:
            batches.record_counts(batch.batch_id, completed=0, failed=0, error=0)
        assert refused.value.current is not None
        assert (refused.value.current.status, refused.value.current.completed) == (final, 1)
        assert batches.require(batch.batch_id).completed == 1


def test_finish_writes_the_deciding_polls_counts_and_sets_over_a_slower_pollers(
    batches: BatchesTable,
) -> None:
    """The deciding poll records the final counts; a slower poller's progress counts land
    next; the end of the batch carries the deciding poll's again, sets included."""
    files = {"a-2026-02-28", "b-2026-02-28"}
    batch = batches.create(make_batch())
    batches.mark_queued(batch.batch_id, files)
    decided = batches.record_counts(
        batch.batch_id, completed=2, failed=0, error=0, completed_files=files, failed_files=()
    )
    batches.record_counts(
        batch.batch_id,
        completed=1,
        failed=0,
        error=0,
        completed_files={"a-2026-02-28"},
        failed_files=(),
    )
    ended = batches.finish(batch.batch_id, BatchStatus.COMPLETED, counts_of=decided)
    stored = batches.require(batch.batch_id)
    for seen in (ended, stored):
        assert (seen.status, seen.completed_count, seen.completed_files) == (
            BatchStatus.COMPLETED,
            2,
            frozenset(files),
        )


def test_a_batch_item_written_before_feeds_reads_back_as_the_default_feeds_unchanged(
    clients: AwsClients, provisioned: Provisioned, batches: BatchesTable
) -> None:
    """No Feed attribute: the default feed; written back, the item is the same, byte for byte."""
    day = unique_day()
    seed: dict[str, Any] = {
        "BatchID": {"S": make_batch_id(day, str(uuid.uuid4()))},
        "PollingDate": {"S": day},
        "Status": {"S": "queued"},
        "StartTime": {"S": "2126-02-28T00:00:00.000+00:00"},
        "CreatedAt": {"S": "2126-02-28T00:00:00.000+00:00"},
        "UpdatedAt": {"S": "2126-02-28T00:00:01.000+00:00"},
        "TTL": {"N": str(BASE_MS // 1000 + 90 * 86_400)},
        "ExpectedFiles": {"SS": [f"a-{day}", f"b-{day}"]},
        "ExpectedCount": {"N": "2"},
        "QueuedCount": {"N": "2"},
    }
    clients.dynamodb.put_item(TableName=provisioned.batches_table, Item=seed)
    batch = batches.get(seed["BatchID"]["S"])
    assert batch is not None
    assert batch.feed == DEFAULT_FEED_NAME
    written = batch_to_item(batch)
    assert sorted(written.pop("ExpectedFiles")["SS"]) == seed.pop("ExpectedFiles")["SS"]
    assert written == seed


def test_a_named_feeds_batch_carries_feed_in_its_item_and_reads_back(
    clients: AwsClients, provisioned: Provisioned, batches: BatchesTable
) -> None:
    """Feed is written for a named feed; PollingDateIndex returns every feed's batches."""
    day = unique_day()
    named = make_batch(
        day, batch_id=make_batch_id(day, str(uuid.uuid4()), "vendor-b"), feed="vendor-b"
    )
    default = batches.create(make_batch(day))
    batches.create(named)
    raw = clients.dynamodb.get_item(
        TableName=provisioned.batches_table, Key={"BatchID": {"S": named.batch_id}}
    )["Item"]
    assert raw["Feed"] == {"S": "vendor-b"}
    assert batches.get(named.batch_id) == named
    assert {b.batch_id for b in batches.query_by_date(day)} == {named.batch_id, default.batch_id}


def test_a_batch_item_whose_feed_disagrees_with_its_key_is_corrupt(
    clients: AwsClients, provisioned: Provisioned, batches: BatchesTable
) -> None:
    """A named feed's BatchID without its Feed attribute is not a batch of either feed."""
    day = unique_day()
    named = make_batch(day, batch_id=make_batch_id(day, str(uuid.uuid4()), "vendor-b"))
    clients.dynamodb.put_item(TableName=provisioned.batches_table, Item=batch_to_item(named))
    with pytest.raises(CorruptRecordError, match="names feed"):
        batches.get(named.batch_id)

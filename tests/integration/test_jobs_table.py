"""The jobs repository against the emulator over HTTP: every access pattern and every race."""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.items import job_to_item
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.errors import (
    ClaimRefusedError,
    CorruptRecordError,
    JobExistsError,
    LeaseLostError,
    ListedTwiceError,
    RequeueRefusedError,
)
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import JobStatus, make_batch_id, make_file_id
from dlpipe.domain.shards import batch_shard, status_shard
from dlpipe.local.provision import Provisioned
from tests.support import BASE_MS, ManualClock, make_job, new_batch_id

pytestmark = pytest.mark.integration
LEASE_S = 60


def test_created_job_reads_back_field_for_field(jobs: JobsTable, entity: str) -> None:
    """A job written with create is returned unchanged by GetItem."""
    job = make_job(entity)
    jobs.create(job)
    assert jobs.get(job.file_id) == job


def test_second_create_of_same_file_id_is_refused_with_the_stored_job(
    jobs: JobsTable, entity: str
) -> None:
    """attribute_not_exists(FileID): the second write loses and learns what is stored."""
    first = jobs.create(make_job(entity))
    with pytest.raises(JobExistsError) as refused:
        jobs.create(make_job(entity, batch_id=new_batch_id()))
    assert refused.value.current == first


def test_claim_moves_available_to_downloading_with_owner_and_lease(
    jobs: JobsTable, entity: str, clock: ManualClock
) -> None:
    """A claim sets the owner, a lease LEASE_S ahead, StatusUpdatedAt and one attempt."""
    job = jobs.create(make_job(entity))
    clock.advance(5)
    claimed = jobs.claim(job.file_id, "w1", LEASE_S)
    assert (claimed.status, claimed.lease_owner, claimed.attempts) == (
        JobStatus.DOWNLOADING,
        "w1",
        1,
    )
    assert claimed.lease_expires_at_ms == clock.now + LEASE_S * 1000
    assert claimed.status_updated_at_ms == clock.now


def test_claim_race_of_eight_threads_has_exactly_one_winner_every_round(
    jobs: JobsTable, entity: str
) -> None:
    """Over 40 rounds, 8 threads racing one claim always produce exactly one winner."""
    for round_no in range(40):
        job = jobs.create(make_job(f"{entity}r{round_no}"))
        winners: list[str] = []
        barrier = threading.Barrier(8)

        def contend(
            owner: str,
            file_id: str = job.file_id,
            barrier: threading.Barrier = barrier,
            winners: list[str] = winners,
        ) -> None:
            barrier.wait()
            try:
                jobs.claim(file_id, owner, LEASE_S)
                winners.append(owner)
            except ClaimRefusedError:
                pass

        threads = [threading.Thread(target=contend, args=(f"w{i}",)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(winners) == 1, f"round {round_no}: winners {winners}"
        assert jobs.require(job.file_id).lease_owner == winners[0]


def test_live_lease_refuses_a_second_claim_and_says_who_holds_it(
    jobs: JobsTable, entity: str
) -> None:
    """While w1's lease is live, w2's claim fails and carries the current record."""
    job = jobs.create(make_job(entity))
    jobs.claim(job.file_id, "w1", LEASE_S)
    with pytest.raises(ClaimRefusedError) as refused:
        jobs.claim(job.file_id, "w2", LEASE_S)
    assert refused.value.current.lease_owner == "w1"


def test_expired_lease_is_taken_over_and_old_owner_can_no_longer_complete(
    clients: AwsClients, provisioned: Provisioned, entity: str
) -> None:
    """After the lease expires w2 takes over; w1's late completion is refused, w2's lands."""
    clock = ManualClock()
    jobs = JobsTable(clients.dynamodb, provisioned.jobs_table, clock)
    job = jobs.create(make_job(entity))
    jobs.claim(job.file_id, "w1", LEASE_S)
    clock.advance(LEASE_S + 1)
    taken = jobs.claim(job.file_id, "w2", LEASE_S)
    assert (taken.lease_owner, taken.attempts) == ("w2", 2)
    with pytest.raises(LeaseLostError):
        jobs.complete(job.file_id, "w1", byte_count=1, sha256="a" * 64, destination_key="x")
    done = jobs.complete(job.file_id, "w2", byte_count=7, sha256="b" * 64, destination_key="e/d/f")
    assert (done.status, done.byte_count, done.destination_key) == (JobStatus.COMPLETED, 7, "e/d/f")
    assert done.lease_owner is None
    assert done.completed_at is not None


def test_completed_job_is_never_claimed_again(jobs: JobsTable, entity: str) -> None:
    """A stale message arriving after completion cannot claim the job."""
    job = jobs.create(make_job(entity))
    jobs.claim(job.file_id, "w1", LEASE_S)
    jobs.complete(job.file_id, "w1", byte_count=1, sha256="c" * 64, destination_key="k")
    with pytest.raises(ClaimRefusedError) as refused:
        jobs.claim(job.file_id, "w2", LEASE_S)
    assert refused.value.current.status is JobStatus.COMPLETED


def test_missing_job_cannot_be_claimed(jobs: JobsTable, entity: str) -> None:
    """Claiming a FileID that was never written fails with no record attached."""
    with pytest.raises(ClaimRefusedError) as refused:
        jobs.claim(f"{entity}-2026-02-28", "w1", LEASE_S)
    assert refused.value.current is None


def test_extend_lease_moves_expiry_only_for_the_owner(
    jobs: JobsTable, entity: str, clock: ManualClock
) -> None:
    """The owner pushes its lease out; anyone else is refused."""
    job = jobs.create(make_job(entity))
    jobs.claim(job.file_id, "w1", LEASE_S)
    clock.advance(30)
    assert (
        jobs.extend_lease(job.file_id, "w1", LEASE_S).lease_expires_at_ms
        == clock.now + LEASE_S * 1000
    )
    with pytest.raises(LeaseLostError):
        jobs.extend_lease(job.file_id, "w2", LEASE_S)


@pytest.mark.parametrize("final", [JobStatus.FAILED, JobStatus.ERROR])
def test_owner_ends_a_job_failed_or_error_with_a_message(
    jobs: JobsTable, entity: str, final: JobStatus
) -> None:
    """failed/error carry ErrorMessage and drop the lease."""
    job = jobs.create(make_job(entity))
    jobs.claim(job.file_id, "w1", LEASE_S)
    ended = jobs.finish_unsuccessfully(
        job.file_id, "w1", final, "tag_mismatch: GCM tag did not verify"
    )
    assert (ended.status, ended.error_message, ended.lease_owner) == (
        final,
        "tag_mismatch: GCM tag did not verify",
        None,
    )


def test_release_returns_a_claim_to_available(jobs: JobsTable, entity: str) -> None:
    """A clean shutdown gives the job back for another worker."""
    job = jobs.create(make_job(entity))
    jobs.claim(job.file_id, "w1", LEASE_S)
    released = jobs.release(job.file_id, "w1")
    assert (released.status, released.lease_owner) == (JobStatus.AVAILABLE, None)
    assert released.error_message is None


def test_a_release_with_a_reason_keeps_it_as_the_last_error_until_completion(
    jobs: JobsTable, entity: str
) -> None:
    """A slow source's claim given back carries `provider_slow: ...` while available; the
    next claim's completion clears it."""
    job = jobs.create(make_job(entity))
    jobs.claim(job.file_id, "w1", LEASE_S)
    released = jobs.release(job.file_id, "w1", error_message="provider_slow: 3 bytes in 30 s")
    assert released.status is JobStatus.AVAILABLE
    assert released.error_message == "provider_slow: 3 bytes in 30 s"
    jobs.claim(job.file_id, "w2", LEASE_S)
    done = jobs.complete(job.file_id, "w2", byte_count=1, sha256="0" * 64, destination_key="k")
    assert (done.status, done.error_message) == (JobStatus.COMPLETED, None)


def test_update_url_stores_a_fresh_url_for_the_owner_only(jobs: JobsTable, entity: str) -> None:
    """The owner replaces an expired URL (its expiry stored in the records' one ISO form);
    a non-owner cannot."""
    job = jobs.create(make_job(entity))
    jobs.claim(job.file_id, "w1", LEASE_S)
    fresh = jobs.update_url(
        job.file_id, "w1", "http://127.0.0.1:1/fresh", "2026-03-01T01:00:00+01:00"
    )
    assert (fresh.presigned_url, fresh.url_expires_at) == (
        "http://127.0.0.1:1/fresh",
        "2026-03-01T00:00:00.000Z",
    )
    with pytest.raises(LeaseLostError):
        jobs.update_url(job.file_id, "w2", "http://127.0.0.1:1/other", None)


def test_requeue_returns_failed_error_and_expired_claims_but_not_live_or_completed(
    jobs: JobsTable, entity: str, clock: ManualClock
) -> None:
    """requeue: error -> available; a live claim only with force; completed never."""
    errored = jobs.create(make_job(f"{entity}e"))
    jobs.claim(errored.file_id, "w1", LEASE_S)
    jobs.finish_unsuccessfully(errored.file_id, "w1", JobStatus.ERROR, "wrong_key")
    requeued = jobs.requeue(errored.file_id)
    assert (requeued.status, requeued.error_message) == (JobStatus.AVAILABLE, None)

    live = jobs.create(make_job(f"{entity}l"))
    jobs.claim(live.file_id, "w1", LEASE_S)
    with pytest.raises(RequeueRefusedError):
        jobs.requeue(live.file_id)
    assert jobs.requeue(live.file_id, force=True).status is JobStatus.AVAILABLE

    expired = jobs.create(make_job(f"{entity}x"))
    jobs.claim(expired.file_id, "w1", LEASE_S)
    clock.advance(LEASE_S + 1)
    assert jobs.requeue(expired.file_id).status is JobStatus.AVAILABLE

    done = jobs.create(make_job(f"{entity}d"))
    jobs.claim(done.file_id, "w1", LEASE_S)
    jobs.complete(done.file_id, "w1", byte_count=1, sha256="d" * 64, destination_key="k")
    with pytest.raises(RequeueRefusedError):
        jobs.requeue(done.file_id, force=True)


def test_batch_get_reads_more_than_one_call_worth_and_skips_missing(
    jobs: JobsTable, entity: str
) -> None:
    """130 jobs come back through BatchGetItem's 100-key limit; unknown ids are absent."""
    ids = [jobs.create(make_job(f"{entity}n{i}")).file_id for i in range(130)]
    found = jobs.batch_get([*ids, f"{entity}missing-2026-02-28"])
    assert set(found) == set(ids)


def test_status_index_returns_only_jobs_older_than_the_cut_oldest_first(
    clients: AwsClients, provisioned: Provisioned, entity: str
) -> None:
    """StatusIndex: Status = available AND StatusUpdatedAt < cut, ascending."""
    # Far in the past, so that no other test's jobs fall below the cut.
    clock = ManualClock(BASE_MS - 10 * 365 * 86_400_000)
    jobs = JobsTable(clients.dynamodb, provisioned.jobs_table, clock)
    created = []
    for i in range(5):
        created.append(jobs.create(make_job(f"{entity}s{i}", now_ms=clock.now)))
        clock.advance(60)
    cut = created[3].status_updated_at_ms
    older = [j.file_id for j in jobs.query_by_status(JobStatus.AVAILABLE, older_than_ms=cut)]
    assert older == [j.file_id for j in created[:3]]


def test_status_index_follows_pagination_to_the_end(
    clients: AwsClients, provisioned: Provisioned, entity: str
) -> None:
    """A query spanning several 1 MB pages still returns every job (LastEvaluatedKey followed)."""
    clock = ManualClock(BASE_MS - 20 * 365 * 86_400_000)
    jobs = JobsTable(clients.dynamodb, provisioned.jobs_table, clock)
    big = "x" * 60_000  # ~60 KB items: 40 of them exceed one 1 MB query page
    ids = {
        jobs.create(make_job(f"{entity}p{i}", now_ms=clock.now, presigned_url=big)).file_id
        for i in range(40)
    }
    found = {
        j.file_id for j in jobs.query_by_status(JobStatus.AVAILABLE, older_than_ms=clock.now + 1)
    }
    assert ids <= found


def test_batch_index_lists_a_batchs_jobs_by_status(jobs: JobsTable, entity: str) -> None:
    """BatchIndex: all jobs of a batch, or only those in one status."""
    batch_id = new_batch_id()
    ids = [jobs.create(make_job(f"{entity}b{i}", batch_id=batch_id)).file_id for i in range(3)]
    jobs.claim(ids[0], "w1", LEASE_S)
    assert {j.file_id for j in jobs.query_by_batch(batch_id)} == set(ids)
    assert [j.file_id for j in jobs.query_by_batch(batch_id, JobStatus.DOWNLOADING)] == [ids[0]]


def test_items_past_their_ttl_read_as_absent(
    jobs: JobsTable, entity: str, clock: ManualClock
) -> None:
    """DynamoDB deletes expired items only eventually (hours to days); until then GetItem,
    BatchGetItem and queries ignore them."""
    batch_id = new_batch_id()
    job = jobs.create(
        replace(make_job(entity, batch_id=batch_id), ttl_epoch_s=clock.now // 1000 - 1)
    )
    assert jobs.get(job.file_id) is None
    assert jobs.batch_get([job.file_id]) == {}
    assert list(jobs.query_by_batch(batch_id)) == []


def test_stored_ttl_is_epoch_seconds_thirty_days_ahead(
    clients: AwsClients, provisioned: Provisioned, jobs: JobsTable, entity: str
) -> None:
    """The raw item's TTL is a Number of seconds, about 30 days after creation."""
    job = jobs.create(make_job(entity))
    raw = clients.dynamodb.get_item(
        TableName=provisioned.jobs_table, Key={"FileID": {"S": job.file_id}}
    )["Item"]
    assert int(raw["TTL"]["N"]) - BASE_MS // 1000 == 30 * 86_400
    assert int(raw["StatusUpdatedAt"]["N"]) == BASE_MS


def test_adopt_moves_an_unfinished_job_of_an_earlier_batch_but_never_a_completed_one(
    jobs: JobsTable, entity: str
) -> None:
    """A rerun's batch takes over a failed job (as available); a completed job stays put."""
    old_batch, new_batch = new_batch_id(), new_batch_id()
    failed = jobs.create(make_job(f"{entity}f", batch_id=old_batch))
    jobs.claim(failed.file_id, "w1", LEASE_S)
    jobs.finish_unsuccessfully(failed.file_id, "w1", JobStatus.FAILED, "http_5xx: gave up")
    adopted = jobs.adopt(failed.file_id, new_batch)
    assert (adopted.batch_id, adopted.status, adopted.error_message) == (
        new_batch,
        JobStatus.AVAILABLE,
        None,
    )

    done = jobs.create(make_job(f"{entity}c", batch_id=old_batch))
    jobs.claim(done.file_id, "w1", LEASE_S)
    jobs.complete(done.file_id, "w1", byte_count=1, sha256="e" * 64, destination_key="k")
    with pytest.raises(RequeueRefusedError):
        jobs.adopt(done.file_id, new_batch)
    assert jobs.require(done.file_id).batch_id == old_batch


def test_mark_listed_takes_one_entry_of_a_listing_and_refuses_another_naming_the_first(
    jobs: JobsTable, entity: str
) -> None:
    """A rerun marks a completed job of an earlier batch as named by entry 4; the same entry
    again (a replay) is accepted, entry 9 of that listing is refused with the mark it met, a
    later rerun's listing marks it anew, and nothing else of the job changes."""
    old_batch, rerun, later = new_batch_id(), new_batch_id(), new_batch_id()
    done = jobs.create(make_job(entity, batch_id=old_batch))
    jobs.claim(done.file_id, "w1", LEASE_S)
    completed = jobs.complete(
        done.file_id, "w1", byte_count=1, sha256="e" * 64, destination_key="k"
    )

    assert jobs.mark_listed(done.file_id, rerun, 4).listed_by == f"{rerun}#4"
    assert jobs.mark_listed(done.file_id, rerun, 4).listed_by == f"{rerun}#4"
    with pytest.raises(ListedTwiceError) as refused:
        jobs.mark_listed(done.file_id, rerun, 9)
    assert refused.value.current.listed_by == f"{rerun}#4"
    assert jobs.mark_listed(done.file_id, later, 9).listed_by == f"{later}#9"
    assert replace(jobs.require(done.file_id), listed_by=None) == completed
    with pytest.raises(ListedTwiceError) as gone:
        jobs.mark_listed(make_job(f"{entity}gone").file_id, rerun, 4)  # never written
    assert gone.value.current is None


def test_an_unreadable_item_is_skipped_and_reported_not_fatal(
    clients: AwsClients, provisioned: Provisioned, entity: str
) -> None:
    """A half-written item in StatusIndex is reported through on_unreadable; good jobs still come back."""
    clock = ManualClock(BASE_MS - 30 * 365 * 86_400_000)
    jobs = JobsTable(clients.dynamodb, provisioned.jobs_table, clock)
    good = jobs.create(make_job(f"{entity}ok", now_ms=clock.now))
    broken = f"{entity}bad-2026-02-28"
    clients.dynamodb.put_item(
        TableName=provisioned.jobs_table,
        Item={
            "FileID": {"S": broken},
            "Status": {"S": "available"},
            "StatusShard": {"S": str(status_shard(JobStatus.AVAILABLE, broken))},
            "StatusUpdatedAt": {"N": str(clock.now)},
        },
    )
    reported: list[str] = []
    try:
        found = [
            j.file_id
            for j in jobs.query_by_status(
                JobStatus.AVAILABLE,
                older_than_ms=clock.now + 1,
                on_unreadable=lambda e: reported.append(e.key),
            )
        ]
    finally:
        clients.dynamodb.delete_item(
            TableName=provisioned.jobs_table, Key={"FileID": {"S": broken}}
        )
    assert good.file_id in found
    assert reported == [broken]


def _seed_job_item(file_id: str, batch_id: str, entity: str) -> dict[str, Any]:
    """A job item attribute for attribute as the code before feeds wrote it (no Feed)."""
    return {
        "FileID": {"S": file_id},
        "BatchID": {"S": batch_id},
        "Status": {"S": "available"},
        "Entity": {"S": entity},
        "DownloadDate": {"S": "2026-02-28"},
        "PresignedURL": {"S": "https://x.test/f?X-Amz-Signature=abc"},
        "EncryptedAESKey": {"S": "a2V5"},
        "EncodedAESIV": {"S": "aXY="},
        "Cipher": {"S": "AES-256-GCM"},
        "CreatedAt": {"S": "2126-02-28T00:00:00.000+00:00"},
        "StatusUpdatedAt": {"N": str(BASE_MS)},
        "TTL": {"N": str(BASE_MS // 1000 + 30 * 86_400)},
        "ExpectedSize": {"N": "123"},
        "ExpectedSHA256": {"S": "0" * 64},
        "Attempts": {"N": "0"},
    }


def test_a_job_item_written_before_feeds_reads_back_as_the_default_feeds_unchanged(
    clients: AwsClients, provisioned: Provisioned, jobs: JobsTable, entity: str
) -> None:
    """No Feed attribute: the default feed; written back, the item is the same, byte for byte,
    with its index shards."""
    file_id, batch_id = f"{entity}-2026-02-28", new_batch_id()
    seed = _seed_job_item(file_id, batch_id, entity)
    clients.dynamodb.put_item(TableName=provisioned.jobs_table, Item=seed)
    job = jobs.require(seed["FileID"]["S"])
    assert job.feed == DEFAULT_FEED_NAME
    assert job_to_item(job) == {
        **seed,
        "BatchShard": {"S": batch_shard(batch_id, file_id)},
        "StatusShard": {"S": str(status_shard(JobStatus.AVAILABLE, file_id))},
    }


def test_a_named_feeds_job_carries_feed_in_its_item_and_reads_back(
    clients: AwsClients, provisioned: Provisioned, jobs: JobsTable, entity: str
) -> None:
    """Feed is written for a named feed, next to the key that carries it too."""
    job = replace(
        make_job(entity, batch_id=make_batch_id("2026-02-28", str(uuid.uuid4()), "vendor-b")),
        file_id=make_file_id(entity, "2026-02-28", "vendor-b"),
        feed="vendor-b",
    )
    jobs.create(job)
    raw = clients.dynamodb.get_item(
        TableName=provisioned.jobs_table, Key={"FileID": {"S": job.file_id}}
    )["Item"]
    assert raw["Feed"] == {"S": "vendor-b"}
    assert jobs.get(job.file_id) == job


def test_a_job_item_naming_no_valid_feed_is_corrupt_not_a_traceback(
    clients: AwsClients, provisioned: Provisioned, jobs: JobsTable, entity: str
) -> None:
    """A damaged Feed attribute is a CorruptRecordError naming the item."""
    seed = _seed_job_item(f"{entity}-2026-02-28", new_batch_id(), entity)
    clients.dynamodb.put_item(
        TableName=provisioned.jobs_table, Item={**seed, "Feed": {"S": "Vendor B"}}
    )
    with pytest.raises(CorruptRecordError, match="is not a feed name"):
        jobs.get(seed["FileID"]["S"])


@pytest.mark.parametrize(
    ("file_id_feed", "stored_feed"),
    [("vendor-b", None), ("default", "vendor-b"), ("vendor-b", "vendor-c")],
)
def test_a_job_item_whose_feed_disagrees_with_its_key_is_corrupt(
    clients: AwsClients,
    provisioned: Provisioned,
    jobs: JobsTable,
    entity: str,
    file_id_feed: str,
    stored_feed: str | None,
) -> None:
    """The key and the Feed attribute name one feed, or the item is not a job of either."""
    seed = _seed_job_item(make_file_id(entity, "2026-02-28", file_id_feed), new_batch_id(), entity)
    if stored_feed is not None:
        seed["Feed"] = {"S": stored_feed}
    clients.dynamodb.put_item(TableName=provisioned.jobs_table, Item=seed)
    with pytest.raises(CorruptRecordError, match="names feed"):
        jobs.get(seed["FileID"]["S"])

"""A failed day reads at a glance: the orchestrator's outcome summary on the batch item, shown
by `dlpipe status` and `dlpipe batch show` (the CLI entry point, against the emulator)."""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.download_errors import WrongKeyError
from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.domain.outcome import MAX_CODES, MAX_SUMMARY_BYTES
from dlpipe.domain.rules import batch_ttl_epoch_s, job_ttl_epoch_s
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import FetchFailed
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world
from tests.provider_support import StubFactory, fast_client
from tests.support import BASE_MS, ManualClock, make_job

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below
FILES = 20


def day_flow(
    world: World, stub_factory: StubFactory, entity: str, **client: Any
) -> BatchFlowService:
    """A flow on the world's tables and queue, listing FILES files of `entity` (`client`:
    the provider client's options, e.g. a token the stub refuses)."""
    stub = stub_factory([StubFileSpec(f"{entity}{n:02d}", 64, CIPHER_GCM) for n in range(FILES)])
    return BatchFlowService(
        jobs=world.jobs,
        batches=world.batches,
        provider=fast_client(stub, **client),
        queue=JobQueue(world.clients.sqs, world.ops.settings.queue_url or ""),
        # Real time, not the world's far-past clock: DynamoDB Local deletes items whose TTL
        # (set from this clock) has passed in real time.
        clock=ManualClock(int(time.time() * 1000)),
        new_uuid=lambda: str(uuid.uuid4()),
    )


def wrong_key_day(world: World, flow: BatchFlowService, entity: str) -> str:
    """The day's 20 files each end `error` as the downloader ends a file wrapped for another
    RSA key; the completion check ends the batch."""
    batch_id = flow.create_batch(world.day)
    world.created_batches.append(batch_id)
    flow.fetch_and_queue(batch_id, world.day)
    for n in range(FILES):
        file_id = f"{entity}{n:02d}-{world.day}"
        world.created_jobs.append(file_id)
        world.jobs.claim(file_id, "w1", 60)
        world.jobs.finish_unsuccessfully(
            file_id, "w1", JobStatus.ERROR, WrongKeyError().error_message
        )
    assert flow.check_completion(batch_id, 1, False).status == "failed"
    return batch_id


def test_a_wrong_key_day_shows_its_errors_grouped_by_code_in_status_and_batch_show(
    world: World, dlpipe_cli: CliRunner, stub_factory: StubFactory, entity: str
) -> None:
    """20 wrong_key errors read as one line, 'wrong_key: 20 (first FileIDs, ...)', in the
    tables and in --json, and the counts say `error`, not `failed`."""
    batch_id = wrong_key_day(world, day_flow(world, stub_factory, entity), entity)
    first = ", ".join(f"{entity}{n:02d}-{world.day}" for n in range(3))
    line = f"{batch_id} failed: wrong_key: 20 ({first}, ...)"
    for command in ("status", "batch"):
        args = ("status",) if command == "status" else ("batch", "show")
        shown = dlpipe_cli(*args, "--date", world.day)
        # `status` exits 1 for a failed day (its health); `batch show` 0 (it found the batch).
        assert shown.code == (1 if command == "status" else 0), shown.err
        assert line in shown.out
        as_json = dlpipe_cli(*args, "--date", world.day, "--json").json()
        (batch,) = as_json["batches"]
        assert (batch["failed_count"], batch["error_count"]) == (0, FILES)
        assert batch["outcome"]["codes"] == [
            {"code": "wrong_key", "count": FILES, "files": first.split(", ")}
        ]


def test_the_summary_survives_a_replay_of_the_final_check(
    world: World, stub_factory: StubFactory, entity: str
) -> None:
    """A replayed check-completion step after the batch ended reports the same summary, and
    the item keeps it (the summary landed with the final status, in one write)."""
    flow = day_flow(world, stub_factory, entity)
    batch_id = wrong_key_day(world, flow, entity)
    stored = world.batches.require(batch_id).outcome
    replayed = flow.check_completion(batch_id, 1, False)
    assert stored is not None
    assert (replayed.status, replayed.failed, replayed.error) == ("failed", 0, FILES)
    assert replayed.outcome == stored.to_dict()
    assert world.batches.require(batch_id).outcome == stored


def test_a_rerun_links_the_first_batch_to_the_batch_that_adopted_its_files(
    world: World, dlpipe_cli: CliRunner, stub_factory: StubFactory, entity: str
) -> None:
    """After a rerun adopts the files, the first batch keeps its cause and says where they went."""
    flow = day_flow(world, stub_factory, entity)
    first = wrong_key_day(world, flow, entity)
    rerun = flow.create_batch(world.day, rerun=True)
    world.created_batches.append(rerun)
    assert flow.fetch_and_queue(rerun, world.day).sent == FILES
    shown = dlpipe_cli("batch", "show", "--date", world.day)
    assert shown.code == 0, shown.err
    assert f"{first} failed: wrong_key: 20 (" in shown.out
    assert f"{first}: its unfinished files were adopted by rerun {rerun}" in shown.out
    rows = dlpipe_cli("status", "--date", world.day, "--json").json()["batches"]
    assert [(b["batch_id"], b["adopted_by"]) for b in rows] == [(first, rerun), (rerun, None)]


def test_a_batch_the_provider_refused_shows_its_cause(
    world: World, dlpipe_cli: CliRunner, stub_factory: StubFactory, entity: str
) -> None:
    """A listing refused (401) fails the batch as a whole: status names the cause on its line."""
    flow = day_flow(world, stub_factory, entity, token="not-the-token-0000")
    batch_id = flow.create_batch(world.day)
    world.created_batches.append(batch_id)
    with pytest.raises(FetchFailed) as caught:
        flow.fetch_and_queue(batch_id, world.day)
    flow.fail_batch(batch_id, str(caught.value))
    shown = dlpipe_cli("status", "--date", world.day)
    assert shown.code == 1, shown.err  # a failed day: `status` says so in its exit code
    assert f"{batch_id} failed: provider_refused: " in shown.out
    assert "HTTP 401" in shown.out.split(f"{batch_id} failed: ")[1]


def test_thousands_of_distinct_errors_keep_the_batch_item_within_its_budget(
    world: World, stub_factory: StubFactory, entity: str
) -> None:
    """1,500 error jobs over 30 codes, every FileID distinct: the final check stores a summary
    of at most MAX_SUMMARY_BYTES (MAX_CODES lines, every job counted), the item stays small."""
    size, far_job_ttl = 1_500, job_ttl_epoch_s(BASE_MS // 1000)
    far_batch_ttl = batch_ttl_epoch_s(BASE_MS // 1000)
    batch = world.batch(
        status=BatchStatus.QUEUED,
        expected_count=size,
        queued_count=size,
        sets_truncated=True,
        ttl_epoch_s=far_batch_ttl,
    )
    jobs = [
        make_job(
            f"{entity}x{n:04d}",
            world.day,
            batch_id=batch.batch_id,
            status=JobStatus.ERROR,
            error_message=f"code_{n % 30:02d}_{'x' * 30}: bad input",
            ttl_epoch_s=far_job_ttl,
        )
        for n in range(size)
    ]
    world.created_jobs += [job.file_id for job in jobs]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(world.jobs.create, jobs))
    flow = day_flow(world, stub_factory, entity)
    assert flow.check_completion(batch.batch_id, 1, False).status == "failed"
    item = world.clients.dynamodb.get_item(
        TableName=world.batches.table_name, Key={"BatchID": {"S": batch.batch_id}}
    )["Item"]
    stored = item["OutcomeSummary"]["S"]
    assert len(stored.encode()) <= MAX_SUMMARY_BYTES
    codes = json.loads(stored)["codes"]
    assert (len(codes), sum(c["count"] for c in codes)) == (MAX_CODES, size)
    assert len(json.dumps(item)) < 2 * MAX_SUMMARY_BYTES

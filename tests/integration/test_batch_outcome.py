"""A failed day reads at a glance: the orchestrator's outcome summary on the batch item, shown
by `dlpipe status` and `dlpipe batch show` (the CLI entry point, against the emulator)."""

from __future__ import annotations

import time
import uuid

import pytest

from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.download_errors import WrongKeyError
from dlpipe.domain.model import JobStatus
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world
from tests.provider_support import StubFactory, fast_client
from tests.support import ManualClock

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below
FILES = 20


def day_flow(world: World, stub_factory: StubFactory, entity: str) -> BatchFlowService:
    """A flow on the world's tables and queue, listing FILES files of `entity`."""
    stub = stub_factory([StubFileSpec(f"{entity}{n:02d}", 64, CIPHER_GCM) for n in range(FILES)])
    return BatchFlowService(
        jobs=world.jobs,
        batches=world.batches,
        provider=fast_client(stub),
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
        assert shown.code == 0, shown.err
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

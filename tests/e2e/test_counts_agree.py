"""A batch's counts are the same on every screen after a rerun adopted files: a named feed's
day whose first run ends `failed` with some files completed and one unfinished (its URL stays
expired), then, the cause fixed, the documented repair (`dlpipe run --date D --feed F` again: a
rerun that adopts the unfinished file and completes the day). `dlpipe status` (text and JSON),
`dlpipe batch show --json`, the day page and the grid must show each batch's
completed/failed/error/expected alike, and the completed day all of its files completed.
Likewise a day repaired by `dlpipe jobs requeue` while it ran (a claim whose worker died): the
requeued file counts once."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.queue import JobQueue
from dlpipe.config import (
    ENV_ALLOW_HTTP_URLS,
    ENV_BATCHES_TABLE,
    ENV_FEEDS_FILE,
    ENV_MAX_POLLS,
    ENV_POLL_INTERVAL_SECONDS,
    ENV_RESEND_AFTER_SECONDS,
)
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import BatchStatus
from dlpipe.domain.transitions import lease_live
from dlpipe.local.events import received_events
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.e2e.test_repair_closes_day import (
    FEED,
    POLLS,
    ROOT,
    _client,
    _day_closed,
    _dlpipe,
    _feeds_file,
    _page,
)
from tests.e2e.test_worker_kit import WorkerProcess, queues, wait_until, worker_env
from tests.integration.test_downloader_kit import wall_clock_jobs
from tests.provider_support import StubFactory, fast_client
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, stub_factory
ENTITIES = ("accounts", "positions", "trades", "prices")
UNFINISHED = "trades"  # its URL stays expired in the first run: `failed`, retries used up


def _screens(
    env: dict[str, str], cwd: Path, day: str, feed: str = FEED
) -> dict[tuple[str, str], tuple[int, ...]]:
    """(BatchID, screen) -> (completed, failed, error, expected) for each batch of the day."""
    seen: dict[tuple[str, str], tuple[int, ...]] = {}
    for command in ("status", "batch"):
        args = ("status",) if command == "status" else ("batch", "show")
        done = _dlpipe(env, cwd, *args, "--date", day, "--feed", feed, "--json")
        assert done.returncode == 0, (done.stdout, done.stderr)
        assert done.stdout.startswith("{"), done.stdout
        for row in json.loads(done.stdout)["batches"]:
            c = row["job_counts"]
            counts = (c["completed"], c["failed"], c["error"], row["expected_files"])
            seen[row["batch_id"], f"{command} --json"] = counts
    text = _dlpipe(env, cwd, "status", "--date", day, "--feed", feed).stdout
    for batch_id, _ in list(seen):
        line = next((ln for ln in text.splitlines() if batch_id in ln), "")
        words = dict(re.findall(r"(\w+)=(\d+)", line))
        # The text table's jobs-by-status column (its expected column: the JSON's).
        seen[batch_id, "status"] = tuple(
            int(words.get(k, -1)) for k in ("completed", "failed", "error")
        )
    client = _client(env)
    grid = _page(client, f"/?feed={feed}&end={day}")
    for batch_id in {b for b, _ in seen}:
        page = _page(client, f"/day/{day}?feed={feed}&batch={batch_id}")
        shown = dict(re.findall(r'id="count-(\w+)">(\d+)<', page))
        keys = ("completed", "failed", "error", "expected")
        seen[batch_id, "day page"] = tuple(int(shown[k]) for k in keys)
        cell = re.search(
            rf'data-batch="{re.escape(batch_id)}".*?: (\d+)/(\d+) completed, (\d+) failed,'
            r" (\d+) error",
            grid,
            re.S,
        )
        assert cell is not None, grid
        done_n, expected, failed, error = map(int, cell.groups())
        seen[batch_id, "grid"] = (done_n, failed, error, expected)
    assert {screen for _, screen in seen} == {
        "status", "status --json", "batch --json", "day page", "grid"
    }  # fmt: skip
    return seen


def test_a_rerun_that_adopted_files_and_the_batch_it_adopted_count_alike_everywhere(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    rsa_keypair: tuple[bytes, bytes],
    tmp_path: Path,
) -> None:
    day = unique_day()
    faults = Faults(always_expired_entities=frozenset({UNFINISHED}))
    stub = stub_factory([StubFileSpec(e, 256, CIPHER_GCM) for e in ENTITIES], faults)
    key_file = tmp_path / "feed.pem"
    key_file.write_bytes(rsa_keypair[0])
    received_events(clients, str(provisioned.downstream_queue_url), rounds=1)  # earlier tests'
    with queues(clients) as q:
        settings = {
            ENV_BATCHES_TABLE: provisioned.batches_table,
            ENV_ALLOW_HTTP_URLS: "true",
            ENV_POLL_INTERVAL_SECONDS: "1",
            ENV_MAX_POLLS: POLLS,
            ENV_RESEND_AFTER_SECONDS: "5",
            ENV_FEEDS_FILE: str(_feeds_file(tmp_path, stub, key_file)),
        }
        env = worker_env(aws_env, provisioned, q.url, key_file, lease_seconds=10, **settings)
        env["PYTHONPATH"] = ROOT
        worker = WorkerProcess(env, tmp_path / "w.log")
        try:
            first = _dlpipe(env, tmp_path, "run", "--date", day, "--feed", FEED)
            assert first.returncode == 1, (first.stdout, first.stderr)
            faults.set(always_expired_entities=frozenset())  # the provider signs again
            rerun = _dlpipe(env, tmp_path, "run", "--date", day, "--feed", FEED)
            assert rerun.returncode == 0, (rerun.stdout, rerun.stderr)
        finally:
            worker.stop()
        # (The screens read the queues' depths: inside the block that keeps them.)
        assert _day_closed(clients, provisioned, day) == []
        batches = BatchesTable(clients.dynamodb, provisioned.batches_table).query_by_date(day)
        assert [b.status for b in batches] == [BatchStatus.FAILED, BatchStatus.COMPLETED]
        earlier, repair = batches[0].batch_id, batches[1].batch_id
        assert json.loads(rerun.stdout)["adopted_from"] == [earlier], rerun.stdout
        assert batches[0].adopted_by == repair
        files = len(ENTITIES)
        # The ended batch keeps what it ended with; the rerun counts every file the day listed:
        # the one it adopted and downloaded, and those completed under the earlier batch.
        want = {earlier: (files - 1, 1, 0, files), repair: (files, 0, 0, files)}
        seen = _screens(env, tmp_path, day)
        wrong = {k: v for k, v in seen.items() if v != want[k[0]][: len(v)]}
        assert wrong == {}, (want, seen)
        # The grid's "files done" row: the day's last batch, all its files.
        grid = _page(_client(env), f"/?feed={FEED}&end={day}")
        assert f"<td>{files}/{files}</td>" in grid


def test_a_day_repaired_by_jobs_requeue_counts_the_requeued_file_once_everywhere(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    rsa_keypair: tuple[bytes, bytes],
    tmp_path: Path,
) -> None:
    day = unique_day()
    key_file = tmp_path / "private.pem"
    key_file.write_bytes(rsa_keypair[0])
    jobs = wall_clock_jobs(clients, provisioned)
    stub = stub_factory([StubFileSpec(e, 256, CIPHER_GCM) for e in ENTITIES])
    with queues(clients) as q:
        flow = BatchFlowService(
            jobs=jobs,
            batches=BatchesTable(clients.dynamodb, provisioned.batches_table, SystemClock()),
            provider=fast_client(stub),
            queue=JobQueue(clients.sqs, q.url),
            clock=SystemClock(),
            new_uuid=lambda: str(uuid.uuid4()),
        )
        batch_id = flow.create_batch(day)
        flow.fetch_and_queue(batch_id, day)
        dead = f"{UNFINISHED}-{day}"
        jobs.claim(dead, "worker-that-died", 1)  # its lease runs out with nobody to end it
        wait_until(
            lambda: not lease_live(jobs.require(dead), SystemClock().now_ms()), 15, "the lease"
        )
        env = worker_env(aws_env, provisioned, q.url, key_file, stub=stub, lease_seconds=10)
        env.update({ENV_BATCHES_TABLE: provisioned.batches_table, "PYTHONPATH": ROOT})
        requeued = _dlpipe(env, tmp_path, "jobs", "requeue", dead)
        assert requeued.returncode == 0, requeued.stderr
        worker = WorkerProcess(env, tmp_path / "w.log")
        try:
            wait_until(
                lambda: all(jobs.require(f"{e}-{day}").is_terminal for e in ENTITIES),
                60,
                "the worker to end every file",
            )
        finally:
            worker.stop()
        assert flow.check_completion(batch_id, 1, False).status == "completed"
        files = len(ENTITIES)
        seen = _screens(env, tmp_path, day, DEFAULT_FEED_NAME)
        assert {k: v for k, v in seen.items() if v != (files, 0, 0, files)[: len(v)]} == {}, seen

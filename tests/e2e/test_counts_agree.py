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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.config import ENV_BATCHES_TABLE
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import BatchStatus
from dlpipe.domain.transitions import lease_live
from dlpipe.local.stub.faults import Faults
from tests.e2e import test_repair_kit as kit
from tests.e2e.test_worker_kit import WorkerProcess, queues, wait_until, worker_env
from tests.integration.test_downloader_kit import wall_clock_jobs
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack
ENTITIES = ("accounts", "positions", "trades", "prices")
UNFINISHED = "trades"  # its URL stays expired in the first run: `failed`, retries used up


def _screens(
    env: dict[str, str], cwd: Path, day: str, feed: str = kit.FEED
) -> dict[tuple[str, str], tuple[int, ...]]:
    """(BatchID, screen) -> (completed, failed, error, expected) for each batch of the day."""
    seen: dict[tuple[str, str], tuple[int, ...]] = {}
    for command in ("status", "batch"):
        args = ("status",) if command == "status" else ("batch", "show")
        done = kit.run_dlpipe(env, cwd, *args, "--date", day, "--feed", feed, "--json")
        assert done.returncode == 0, (done.stdout, done.stderr)
        assert done.stdout.startswith("{"), done.stdout
        for row in json.loads(done.stdout)["batches"]:
            c = row["job_counts"]
            counts = (c["completed"], c["failed"], c["error"], row["expected_files"])
            seen[row["batch_id"], f"{command} --json"] = counts
    text = kit.run_dlpipe(env, cwd, "status", "--date", day, "--feed", feed).stdout
    for batch_id, _ in list(seen):
        line = next((ln for ln in text.splitlines() if batch_id in ln), "")
        words = dict(re.findall(r"(\w+)=(\d+)", line))
        # The text table's jobs-by-status column (its expected column: the JSON's).
        seen[batch_id, "status"] = tuple(
            int(words.get(k, -1)) for k in ("completed", "failed", "error")
        )
    seen.update(kit.page_counts(env, day, feed, {b for b, _ in seen}))
    assert {screen for _, screen in seen} == {
        "status", "status --json", "batch --json", "day page", "grid"
    }  # fmt: skip
    return seen


def test_a_rerun_that_adopted_files_and_the_batch_it_adopted_count_alike_everywhere(
    stack: kit.Stack, tmp_path: Path
) -> None:
    day = unique_day()
    faults = Faults(always_expired_entities=frozenset({UNFINISHED}))
    stub = stack.stub(ENTITIES, faults)
    key_file = kit.write_key(tmp_path, "feed.pem", stack.rsa_keypair[0])
    with queues(stack.clients) as q, ThreadPoolExecutor(1) as pool:
        # Earlier tests' events are taken off while the first run goes (its own Day Failed may
        # go with them: only the rerun's Day Completed is looked for, sent after the drain).
        drained = pool.submit(kit.drain_events, stack)
        env = kit.feed_env(stack, q.url, tmp_path, stub, key_file)
        worker = WorkerProcess(env, tmp_path / "w.log")
        try:
            first = kit.run_dlpipe(env, tmp_path, "run", "--date", day, "--feed", kit.FEED)
            assert first.returncode == 1, (first.stdout, first.stderr)
            drained.result()
            faults.set(always_expired_entities=frozenset())  # the provider signs again
            rerun = kit.run_dlpipe(env, tmp_path, "run", "--date", day, "--feed", kit.FEED)
            assert rerun.returncode == 0, (rerun.stdout, rerun.stderr)
        finally:
            worker.stop()
        # (The screens read the queues' depths: inside the block that keeps them.)
        assert kit.day_closed(stack, day) == []
        table = BatchesTable(stack.clients.dynamodb, stack.provisioned.batches_table)
        batches = table.query_by_date(day)
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
        grid = kit.get_page(kit.ui_client(env), f"/?feed={kit.FEED}&end={day}")
        assert f"<td>{files}/{files}</td>" in grid


def test_a_day_repaired_by_jobs_requeue_counts_the_requeued_file_once_everywhere(
    stack: kit.Stack, tmp_path: Path
) -> None:
    day = unique_day()
    key_file = kit.write_key(tmp_path, "private.pem", stack.rsa_keypair[0])
    jobs = wall_clock_jobs(stack.clients, stack.provisioned)
    stub = stack.stub(ENTITIES)
    with queues(stack.clients) as q:
        flow, batch_id = kit.queued_day(stack, jobs, stub, q.url, day)
        dead = f"{UNFINISHED}-{day}"
        jobs.claim(dead, "worker-that-died", 1)  # its lease runs out with nobody to end it
        wait_until(
            lambda: not lease_live(jobs.require(dead), SystemClock().now_ms()), 15, "the lease"
        )
        env = worker_env(
            stack.aws_env, stack.provisioned, q.url, key_file, stub=stub, lease_seconds=10
        )
        env.update({ENV_BATCHES_TABLE: stack.provisioned.batches_table, "PYTHONPATH": kit.ROOT})
        requeued = kit.run_dlpipe(env, tmp_path, "jobs", "requeue", dead)
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

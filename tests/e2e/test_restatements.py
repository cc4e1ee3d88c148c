"""Restatements through `dlpipe run` (the console script against the emulator, a `dlpipe worker`
doing the files): a completed day run again with `--rerun` and an unchanged listing writes
nothing new."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.manifest import day_prefix
from tests.e2e.test_repair_kit import Stack, run_dlpipe, run_settings, write_key
from tests.e2e.test_worker_kit import WorkerProcess, queues, worker_env
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack
FILES = 3


def _day_objects(stack: Stack, day: str) -> list[tuple[str, str]]:
    """Every (key, version) under the day's manifest prefix."""
    listed: Any = stack.clients.s3.list_object_versions(
        Bucket=str(stack.provisioned.destination_bucket), Prefix=day_prefix("default", day)
    )
    return sorted((v["Key"], v["VersionId"]) for v in listed.get("Versions", []))


def test_a_rerun_of_an_unchanged_completed_day_writes_nothing_and_says_so(
    stack: Stack, entity: str, tmp_path: Path
) -> None:
    """`dlpipe run --date D --rerun` after D completed, the listing unchanged: exit 0, the
    same batch, no new batch item, no new manifest object or version, and a line saying so."""
    day = unique_day()
    stub = stack.stub([f"{entity}{n}" for n in range(FILES)])
    with queues(stack.clients) as q:
        settings = run_settings(stack.provisioned, "2000")  # > the recovery bound at 1 s a poll
        key = write_key(tmp_path, "ours.pem", stack.rsa_keypair[0])
        env = worker_env(stack.aws_env, stack.provisioned, q.url, key, stub=stub, **settings)
        worker = WorkerProcess(env, tmp_path / "w1.log")
        try:
            first = run_dlpipe(env, tmp_path, "run", "--date", day, columns=None)
        finally:
            worker.stop()
        assert first.returncode == 0, first.stderr
        before = _day_objects(stack, day)
        assert before  # the manifest, its lists and the pointer

        again = run_dlpipe(env, tmp_path, "run", "--date", day, "--rerun", columns=None)
    assert again.returncode == 0, again.stderr
    result, done = json.loads(again.stdout), json.loads(first.stdout)
    assert (result["batch_id"], result["status"]) == (done["batch_id"], "completed")
    said = " ".join(again.stderr.split())  # the terminal's lines, unwrapped
    assert "the day's batch ended before this run: unchanged, nothing queued or written" in said
    batches = BatchesTable(stack.clients.dynamodb, stack.provisioned.batches_table, SystemClock())
    assert [b.batch_id for b in batches.query_by_date(day)] == [done["batch_id"]]
    assert _day_objects(stack, day) == before

"""Every operator command that writes checks what it needs before its first write: run as the
console script against the emulator with one setting unset (or naming a table that does not
exist), each says so in one `dlpipe:` line, exits nonzero, and leaves the job, the download
queue and the DLQ as they were."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dlpipe
from dlpipe.config import (
    ENV_BATCHES_TABLE,
    ENV_DLQ_URL,
    ENV_JOBS_TABLE,
    ENV_ORCHESTRATOR_ARN,
    ENV_QUEUE_URL,
)
from dlpipe.domain.messages import JobMessage, decode_message, encode_message
from dlpipe.domain.model import FileJob, JobStatus
from tests.integration.test_ops_fixtures import World, no_scan, world

pytestmark = pytest.mark.e2e
__all__ = ["no_scan", "world"]  # fixtures used by the tests below
DLPIPE = Path(sys.executable).with_name("dlpipe")
ROOT = str(Path(dlpipe.__file__).resolve().parents[1])  # this tree's code, whatever the cwd
UNSET = ""  # an empty variable is an unset setting (Settings.from_env: `or None`)
NO_TABLE = "dlpipe-no-such-table"
ORCHESTRATOR = "arn:aws:lambda:us-east-1:000000000000:function:dlpipe-orchestrator:live"

# (id, argv with {file} for the seeded FileID and {day} for its date, the variables changed).
CASES = [
    ("redrive-no-dlq", ["dlq", "redrive"], {ENV_DLQ_URL: UNSET}),
    ("redrive-no-queue", ["dlq", "redrive"], {ENV_QUEUE_URL: UNSET}),
    ("redrive-no-jobs-table", ["dlq", "redrive"], {ENV_JOBS_TABLE: NO_TABLE}),
    ("redrive-no-batches-table", ["dlq", "redrive"], {ENV_BATCHES_TABLE: NO_TABLE}),
    ("requeue-no-queue", ["jobs", "requeue", "{file}"], {ENV_QUEUE_URL: UNSET}),
    ("requeue-no-batches-table", ["jobs", "requeue", "{file}"], {ENV_BATCHES_TABLE: NO_TABLE}),
    ("backfill-no-orchestrator", ["backfill", "--from", "{day}", "--to", "{day}"], {}),
    (
        "backfill-no-batches-table",
        ["backfill", "--from", "{day}", "--to", "{day}"],
        {ENV_ORCHESTRATOR_ARN: ORCHESTRATOR, ENV_BATCHES_TABLE: NO_TABLE},
    ),
]


def _env(world: World, changed: dict[str, str]) -> dict[str, str]:
    """The environment of an operator's shell on the emulator: every setting of the world's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLPIPE_")}
    settings = world.ops.settings
    env.update(
        {
            ENV_JOBS_TABLE: settings.jobs_table,
            ENV_BATCHES_TABLE: settings.batches_table,
            ENV_QUEUE_URL: settings.queue_url or "",
            ENV_DLQ_URL: settings.dlq_url or "",
            "PYTHONPATH": ROOT,
            "COLUMNS": "200",
            **changed,
        }
    )
    return env


def _failed_job(world: World, entity: str) -> FileJob:
    """A running batch's failed job, its message in the DLQ."""
    batch = world.batch()
    job = world.job(entity, batch_id=batch.batch_id)
    world.jobs.claim(job.file_id, "w", 60)
    world.jobs.finish_unsuccessfully(job.file_id, "w", JobStatus.FAILED, "timeouts")
    body = encode_message(JobMessage(job.file_id, batch.batch_id))
    world.clients.sqs.send_message(QueueUrl=world.ops.settings.dlq_url or "", MessageBody=body)
    return job


def _dlq_bodies(world: World) -> list[str]:
    """Every message body in the DLQ (drained: the test's last look)."""
    return world.drain(world.ops.settings.dlq_url or "")


@pytest.mark.parametrize(("argv", "changed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_missing_setting_is_one_line_and_nothing_written(
    world: World, entity: str, tmp_path: Path, argv: list[str], changed: dict[str, str]
) -> None:
    """One `dlpipe:` line, exit not 0; the job, the download queue and the DLQ unchanged."""
    world.clock.now = int(time.time() * 1000)  # the command's clock: the job's TTL is ahead
    job = _failed_job(world, entity)
    before = world.raw_job(job.file_id)
    args = [a.format(file=job.file_id, day=world.day) for a in argv]
    run = subprocess.run(
        [str(DLPIPE), *args],
        env=_env(world, changed),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode not in (0, None), run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith("dlpipe: "), run.stderr
    assert run.stderr.count("\n") == 1, run.stderr
    assert world.raw_job(job.file_id) == before
    assert world.queued() == []
    assert [decode_message(b).file_id for b in _dlq_bodies(world)] == [job.file_id]
    assert world.batches.query_by_date(world.day) == [world.batches.require(job.batch_id)]

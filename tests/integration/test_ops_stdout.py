"""The real `dlpipe` console script's operator commands: stdout holds their tables alone;
log lines go to stderr."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dlpipe.config import ENV_DLQ_URL, ENV_JOBS_TABLE, ENV_QUEUE_URL
from dlpipe.domain.model import JobStatus
from tests.integration.test_ops_dlq import _seed
from tests.integration.test_ops_fixtures import World, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["no_scan", "world"]  # fixtures used by the tests below
DLPIPE = Path(sys.executable).with_name("dlpipe")


def _dlpipe(world: World, aws_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    settings = world.ops.settings
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DLPIPE_")},
        **aws_env,
        ENV_JOBS_TABLE: settings.jobs_table,
        ENV_QUEUE_URL: str(settings.queue_url),
        ENV_DLQ_URL: str(settings.dlq_url),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [str(DLPIPE), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _log_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("{")]


def test_dlq_redrive_and_jobs_requeue_print_tables_on_stdout_and_logs_elsewhere(
    world: World, aws_env: dict[str, str], entity: str
) -> None:
    """`dlq redrive` and `jobs requeue` log what they did, but not one log line on stdout."""
    _seed(world, entity)
    # The world's clock is far in the past; the real command reads the wall clock, before
    # which this job must not have expired.
    failed = world.job(f"{entity}again", ttl_epoch_s=int(time.time()) + 86_400)
    world.jobs.claim(failed.file_id, "w", 60)
    world.jobs.finish_unsuccessfully(failed.file_id, "w", JobStatus.FAILED, "timeouts")
    redrive = _dlpipe(world, aws_env, "dlq", "redrive")
    requeue = _dlpipe(world, aws_env, "jobs", "requeue", failed.file_id)
    assert "DLQ redrive" in redrive.stdout, redrive.stderr[-2000:]
    assert (requeue.returncode, "requeue (1 file(s))" in requeue.stdout) == (0, True), (
        requeue.stdout + requeue.stderr
    )
    assert (_log_lines(redrive.stdout), _log_lines(requeue.stdout)) == ([], [])

"""`dlpipe run` (the console script, against the emulator, a `dlpipe worker` doing the files)
says why a day failed on its final line, and `dlpipe batch show` still says it after a rerun."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlpipe.config import ENV_SECRET_REREAD_SECONDS as ENV_SECRET_REREAD
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_repair_kit import Stack, run_dlpipe, run_settings, write_key
from tests.e2e.test_worker_kit import WorkerProcess, queues, worker_env
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack
FILES = 3


def test_a_wrong_key_day_ends_with_its_cause_and_a_rerun_first_batch_still_names_it(
    stack: Stack, entity: str, tmp_path: Path
) -> None:
    """A worker holding another RSA key ends every file `error` wrong_key: run's final line
    reads 'failed: 0 completed, 0 failed, 3 error, 0 pending; wrong_key: 3 (...)'. A rerun
    with the right key completes; batch show names the first batch's errors and its adopter."""
    day = unique_day()
    specs = [StubFileSpec(f"{entity}{n}", 64, CIPHER_GCM) for n in range(FILES)]
    stub = stack.stub_factory(specs)
    files = [f"{entity}{n}-{day}" for n in range(FILES)]
    aws_env, provisioned = stack.aws_env, stack.provisioned
    with queues(stack.clients) as q:
        settings = run_settings(provisioned, "2000")  # > the recovery bound (30 min) at 1 s a poll
        other_key = write_key(tmp_path, "other.pem", generate_rsa_keypair()[0])
        env = worker_env(aws_env, provisioned, q.url, other_key, stub=stub, **settings)
        # The key is wrong for good: each refusal reads it again at once (no wait for the
        # next allowed re-read, which test_key_fixed_within_bound.py covers).
        env[ENV_SECRET_REREAD] = "0"
        worker = WorkerProcess(env, tmp_path / "w1.log")
        try:
            failed = run_dlpipe(env, tmp_path, "run", "--date", day, columns=None)
        finally:
            worker.stop()
        assert failed.returncode == 1, (failed.stdout, failed.stderr)
        result = json.loads(failed.stdout)
        assert (result["status"], result["failed"], result["error"]) == ("failed", 0, FILES)
        line = failed.stderr.strip().splitlines()[-1]
        assert line == (
            f"batch {result['batch_id']} failed: 0 completed, 0 failed, 3 error, 0 pending;"
            f" wrong_key: 3 ({', '.join(files)})"
        )
        assert "0 failed, 3 error, 0 pending; batch failed; wrong_key: 3" in failed.stderr

        right_key = write_key(tmp_path, "ours.pem", stack.rsa_keypair[0])
        env = worker_env(aws_env, provisioned, q.url, right_key, stub=stub, **settings)
        worker = WorkerProcess(env, tmp_path / "w2.log")
        try:
            rerun = run_dlpipe(env, tmp_path, "run", "--date", day, columns=None)
        finally:
            worker.stop()
        assert rerun.returncode == 0, rerun.stderr
        adopter = json.loads(rerun.stdout)["batch_id"]
        shown = run_dlpipe(env, tmp_path, "batch", "show", "--date", day, columns="300")
    assert shown.returncode == 0, shown.stderr
    out = " ".join(shown.stdout.split())
    assert f"{result['batch_id']} failed: wrong_key: 3 ({', '.join(files)})" in out
    assert f"{result['batch_id']}: its unfinished files were adopted by rerun {adopter}" in out

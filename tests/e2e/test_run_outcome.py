"""`dlpipe run` (the console script, against the emulator, a `dlpipe worker` doing the files)
says why a day failed on its final line, and `dlpipe batch show` still says it after a rerun."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import (
    ENV_ALLOW_HTTP_URLS,
    ENV_BATCHES_TABLE,
    ENV_MAX_POLLS,
    ENV_POLL_INTERVAL_SECONDS,
)
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_worker_kit import WorkerProcess, queues, worker_env
from tests.provider_support import StubFactory
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, stub_factory
DLPIPE = Path(sys.executable).with_name("dlpipe")
FILES = 3


def _dlpipe(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DLPIPE), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _key(tmp_path: Path, name: str, pem: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(pem)
    return path


def test_a_wrong_key_day_ends_with_its_cause_and_a_rerun_first_batch_still_names_it(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    rsa_keypair: tuple[bytes, bytes],
    entity: str,
    tmp_path: Path,
) -> None:
    """A worker holding another RSA key ends every file `error` wrong_key: run's final line
    reads 'failed: 0 completed, 0 failed, 3 error, 0 pending; wrong_key: 3 (...)'. A rerun
    with the right key completes; batch show names the first batch's errors and its adopter."""
    day = unique_day()
    stub = stub_factory([StubFileSpec(f"{entity}{n}", 64, CIPHER_GCM) for n in range(FILES)])
    files = [f"{entity}{n}-{day}" for n in range(FILES)]
    with queues(clients) as q:
        settings = {
            ENV_BATCHES_TABLE: provisioned.batches_table,
            ENV_ALLOW_HTTP_URLS: "true",
            ENV_POLL_INTERVAL_SECONDS: "1",
            ENV_MAX_POLLS: "2000",  # > the recovery bound (30 min) at 1 s a poll
        }
        other_key = _key(tmp_path, "other.pem", generate_rsa_keypair()[0])
        env = worker_env(aws_env, provisioned, q.url, other_key, stub=stub, **settings)
        worker = WorkerProcess(env, tmp_path / "w1.log")
        try:
            failed = _dlpipe(env, tmp_path, "run", "--date", day)
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

        right_key = _key(tmp_path, "ours.pem", rsa_keypair[0])
        env = worker_env(aws_env, provisioned, q.url, right_key, stub=stub, **settings)
        worker = WorkerProcess(env, tmp_path / "w2.log")
        try:
            rerun = _dlpipe(env, tmp_path, "run", "--date", day)
        finally:
            worker.stop()
        assert rerun.returncode == 0, rerun.stderr
        adopter = json.loads(rerun.stdout)["batch_id"]
        shown = _dlpipe({**env, "COLUMNS": "300"}, tmp_path, "batch", "show", "--date", day)
    assert shown.returncode == 0, shown.stderr
    out = " ".join(shown.stdout.split())
    assert f"{result['batch_id']} failed: wrong_key: 3 ({', '.join(files)})" in out
    assert f"{result['batch_id']}: its unfinished files were adopted by rerun {adopter}" in out

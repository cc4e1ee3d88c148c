"""A key follows its secret: a named feed's private key in Secrets Manager (the emulator's) is
another key, so its day ends with every file `error` (wrong_key, naming the key by its
fingerprint); the secret is given the right key, and the repair `dlpipe status` prints, run as
printed, completes the day on the same `dlpipe worker` process, which reads the secret again."""

from __future__ import annotations

import re
import shlex
import uuid
from pathlib import Path
from typing import Any

import pytest

from dlpipe.adapters.crypto import load_private_key
from dlpipe.adapters.keys import key_fingerprint
from dlpipe.config import ENV_FEEDS_FILE, ENV_SECRET_REREAD_SECONDS
from dlpipe.local.stub.crypto import generate_rsa_keypair
from tests.e2e import test_repair_kit as kit
from tests.e2e.test_worker_kit import WorkerProcess, queues
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack
ENTITIES = ("accounts", "positions")


def repair_after_the_key_is_fixed(
    stack: kit.Stack, tmp_path: Path, entities: tuple[str, ...], reread_s: int
) -> list[dict[str, Any]]:
    """A named feed's day of `entities` run with a wrong key in its secret (every file ends
    `error` wrong_key, naming that key), the secret given the right key, and the repair
    `status` prints run as printed on the same worker (DLPIPE_SECRET_REREAD_SECONDS =
    `reread_s`): the day completes. The worker's log events."""
    secrets = stack.clients.secretsmanager
    day, secret = unique_day(), f"e2e-key-{uuid.uuid4().hex[:10]}"
    stub = stack.stub(entities)
    wrong = generate_rsa_keypair()[0]
    secrets.create_secret(Name=secret, SecretString=wrong.decode())
    default_key = kit.write_key(tmp_path, "default.pem", stack.rsa_keypair[0])
    kit.drain_events(stack)
    try:
        with queues(stack.clients) as q:
            env = kit.feed_env(stack, q.url, tmp_path, stub, default_key)
            feeds = Path(env[ENV_FEEDS_FILE])
            text = re.sub(
                r'private_key_secret = "[^"]*"',
                f'private_key_secret = "{secret}"',
                feeds.read_text(),
            )
            feeds.write_text(text)
            env[ENV_SECRET_REREAD_SECONDS] = str(reread_s)
            worker = WorkerProcess(env, tmp_path / "worker.log")
            try:
                first = kit.run_dlpipe(env, tmp_path, "run", "--date", day, "--feed", kit.FEED)
                assert first.returncode == 1, (first.stdout, first.stderr)
                status = kit.run_dlpipe(env, tmp_path, "status", "--date", day, "--feed", kit.FEED)
                assert f"wrong_key: {len(entities)}" in status.stdout, status.stdout

                secrets.put_secret_value(
                    SecretId=secret, SecretString=stack.rsa_keypair[0].decode()
                )
                repairs = re.findall(r"dlpipe run --date \S+ --feed \S+", status.stdout)
                assert repairs, status.stdout
                done = kit.run_dlpipe(env, tmp_path, *shlex.split(repairs[0])[1:])
                assert done.returncode == 0, (done.stdout, done.stderr)
                assert kit.day_closed(stack, day) == []
            finally:
                worker.stop()
    finally:
        secrets.delete_secret(SecretId=secret, ForceDeleteWithoutRecovery=True)
    events = worker.events()
    failed = [e for e in events if e["event"] == "job.error"]
    named = f"(our key {key_fingerprint(load_private_key(wrong))})"
    assert len(failed) == len(entities), failed
    assert all(e["error"].startswith("wrong_key: ") and named in e["error"] for e in failed)
    assert [e["event"] for e in events].count("job.completed") == len(entities)
    return events


def test_a_key_restored_in_its_secret_completes_the_day_on_the_running_worker(
    stack: kit.Stack, tmp_path: Path
) -> None:
    # Every refused key is read again (the bound, once a minute, is a unit test's).
    events = repair_after_the_key_is_fixed(stack, tmp_path, ENTITIES, reread_s=0)
    assert "secret.reread_changed" in [e["event"] for e in events]

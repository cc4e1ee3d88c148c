"""A key fixed within the re-read bound: a named feed's private key in Secrets Manager (the
emulator's) is another key, so its day's file ends `error` (wrong_key) on a fresh re-read; the
secret is given the right key and the repair `dlpipe status` prints is run at once, well within
DLPIPE_SECRET_REREAD_SECONDS (here 8 s, not 0) of that re-read. The repair's file is not ended
`error` on the old read: it is given back until the interval is spent, then the worker reads the
secret again and the day completes on the same `dlpipe worker` process."""

from __future__ import annotations

import re
import shlex
import uuid
from pathlib import Path

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
ENTITIES = ("accounts",)
REREAD_S = 8  # longer than `status` + the repair take to start, so the fix lands inside it


def test_a_key_fixed_within_the_re_read_bound_completes_the_repair_after_it(
    stack: kit.Stack, tmp_path: Path
) -> None:
    secrets = stack.clients.secretsmanager
    day, secret = unique_day(), f"e2e-key-{uuid.uuid4().hex[:10]}"
    stub = stack.stub(ENTITIES)
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
            env[ENV_SECRET_REREAD_SECONDS] = str(REREAD_S)
            worker = WorkerProcess(env, tmp_path / "worker.log")
            try:
                first = kit.run_dlpipe(env, tmp_path, "run", "--date", day, "--feed", kit.FEED)
                assert first.returncode == 1, (first.stdout, first.stderr)
                status = kit.run_dlpipe(env, tmp_path, "status", "--date", day, "--feed", kit.FEED)
                assert f"wrong_key: {len(ENTITIES)}" in status.stdout, status.stdout

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
    assert len(failed) == len(ENTITIES), failed
    assert all(e["error"].startswith("wrong_key: ") and named in e["error"] for e in failed)
    assert [e["event"] for e in events].count("job.completed") == len(ENTITIES)
    names = [e["event"] for e in events]
    # The repair's file met the fix inside the bound: given back once, then read again.
    due = [i for i, name in enumerate(names) if name == "job.key_reread_due"]
    # (a copy SQS hands back a moment early is given back again for the moment left)
    assert due, names
    assert names.count("secret.reread_changed") == 1, names
    assert due[-1] < names.index("secret.reread_changed"), names

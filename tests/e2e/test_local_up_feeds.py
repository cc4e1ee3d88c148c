"""`dlpipe local up --feeds N`: one stub provider per feed, each with its own port, token and
key pair, each named feed an SSM parameter in the emulator (DLPIPE_FEEDS_PARAMETER_PATH in the
export lines) with its secrets in the emulator's Secrets Manager, as Terraform leaves a feed on
AWS: enough for a second shell to run a named feed's day."""

from __future__ import annotations

import base64
import os
import queue
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.feed_parameters import feeds_under_path
from dlpipe.bootstrap.orchestrator import build_orchestrator_handler
from dlpipe.config import Settings
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.local.events import HANDOFF_RULE_NAME
from dlpipe.local.stub.crypto import oaep_sha256
from tests.e2e.test_two_shells import DLPIPE, _exports, _lines, _until
from tests.iam.recorder import FILE_ENV, TEST_ENV
from tests.support import unique_day

pytestmark = pytest.mark.e2e


def _secret(clients: AwsClients, arn: str | None) -> str:
    """A feed's secret, read where the functions read it: Secrets Manager, by ARN."""
    assert arn is not None
    assert arn.startswith("arn:aws:secretsmanager:"), arn
    return str(clients.secretsmanager.get_secret_value(SecretId=arn)["SecretString"])


def _accounts_key(url: str, token: str, day: str) -> tuple[int, bytes | None]:
    """The listing's answer code, and the wrapped AES key of its `accounts` entry."""
    answer = requests.get(
        f"{url}/v1/files",
        params={"date": day},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    if answer.status_code != 200:
        return answer.status_code, None
    entry = next(e for e in answer.json()["files"] if e["entity"] == "accounts")
    return 200, base64.b64decode(entry["encrypted_key"])


def _unwraps(private_pem: bytes, wrapped: bytes) -> bool:
    key = serialization.load_pem_private_key(private_pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    try:
        return len(key.decrypt(wrapped, oaep_sha256())) == 32
    except ValueError:
        return False


def _printed(lines: queue.Queue[str | None], timeout_s: float) -> list[str]:
    """The stdout lines up to and with the closing comment (`# Ctrl-C ...`)."""
    return _until(lines, "# Ctrl-C", timeout_s)


def _replayed(printed: list[str]) -> queue.Queue[str | None]:
    """`printed` as a stream of lines, for the shared parser of the export lines."""
    lines: queue.Queue[str | None] = queue.Queue()
    for line in [*printed, None]:
        lines.put(line)
    return lines


@pytest.fixture(scope="module")
def up3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], str, Path]]:
    """`dlpipe local up --feeds 3` on free ports: its exports, its day, its folder. SIGINT
    after the module's tests stops it and every child it started."""
    day, folder = unique_day(), tmp_path_factory.mktemp("up3")
    ports = ["--port", "0", "--dynamodb-port", "0", "--stub-port", "0"]
    with (folder / "local-up.err").open("w") as err:
        up = subprocess.Popen(  # stopped by PID below
            [str(DLPIPE), "local", "up", *ports, "--date", day, "--files", "2", "--feeds", "3"],
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        printed = _printed(_lines(up.stdout), timeout_s=90)
        (folder / "local-up.out").write_text("".join(printed))
        exports = _exports(_replayed(printed), timeout_s=1)
        children = psutil.Process(up.pid).children(recursive=True)
        yield exports, day, folder
        up.send_signal(signal.SIGINT)
        assert up.wait(30) == 0
        _, alive = psutil.wait_procs(children, timeout=10)
        assert alive == []
    finally:
        if up.poll() is None:
            for child in psutil.Process(up.pid).children(recursive=True):
                child.kill()
            up.kill()
            up.wait(10)


def test_local_up_serves_one_stub_per_feed_each_with_its_own_token_and_key(
    up3: tuple[dict[str, str], str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--feeds 3: the exports name the parameter path holding feed-2 and feed-3; every stub
    answers its own token only, and its `accounts` key unwraps with its own feed's key only."""
    exports, day, _ = up3
    assert "DLPIPE_FEEDS_FILE" not in exports
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(name, exports[name])  # the exports' dummy credentials
    clients = AwsClients(Settings.from_env(exports))
    path = exports["DLPIPE_FEEDS_PARAMETER_PATH"]
    feeds = feeds_under_path(clients.ssm, path, local=True)
    assert sorted(feeds) == ["feed-2", "feed-3"]
    secrets = {
        "default": (
            exports["DLPIPE_PROVIDER_URL"],
            exports["DLPIPE_PROVIDER_TOKEN"],
            Path(exports["DLPIPE_PRIVATE_KEY_FILE"]).read_bytes(),
        )
    }
    for name in ("feed-2", "feed-3"):
        feed = feeds[name]
        assert feed.provider_base_url is not None
        token = _secret(clients, feed.token_secret)
        secrets[name] = (
            feed.provider_base_url,
            token,
            _secret(clients, feed.private_key_secret).encode(),
        )
    assert len({url for url, _, _ in secrets.values()}) == 3
    for name, (url, token, private_pem) in secrets.items():
        code, wrapped = _accounts_key(url, token, day)
        assert (code, wrapped is not None) == (200, True), name
        assert wrapped is not None
        others = [s for other, s in secrets.items() if other != name]
        assert [_accounts_key(url, o_token, day)[0] for _, o_token, _ in others] == [401, 401]
        assert _unwraps(private_pem, wrapped), name
        assert not any(_unwraps(o_pem, wrapped) for _, _, o_pem in others), name


def test_a_second_shell_runs_a_named_feeds_day_with_only_the_printed_exports(
    up3: tuple[dict[str, str], str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `dlpipe worker` started with the exports alone downloads feed-2's day (its key, its
    prefix), the poller run on the same exports with `"feed": "feed-2"` completes it."""
    exports, day, folder = up3
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.setenv(name, exports[name])  # the poller here: the exports' dummy credentials
    shell = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], **exports}
    # The IAM checker's recording reaches the worker too (tests/iam/plugin.py): its reads of
    # feed-2's parameter and key are checked against the ECS task's role.
    shell |= {k: os.environ[k] for k in ("PYTHONPATH", FILE_ENV, TEST_ENV) if k in os.environ}
    settings = Settings.from_env(exports)
    # The Lambda's own wiring: the feed from its SSM parameter, as on AWS.
    handler = build_orchestrator_handler(settings)
    with (folder / "worker.err").open("w") as worker_err:
        worker = subprocess.Popen(  # exits by itself once idle; killed by PID if not
            # A 1 s long poll: the idle worker's last receive of each queue ends within a
            # second of its idle exit (the default 20 s poll held the exit up to 20 s).
            [
                str(DLPIPE),
                "worker",
                "--concurrency",
                "2",
                "--exit-when-idle",
                "5",
                "--wait-seconds",
                "1",
            ],
            env=shell,
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=worker_err,
        )
    try:
        result = run_durable_locally(
            handler, {"date": day, "feed": "feed-2"}, skip_time=False, timeout_seconds=120
        )
        assert (result["status"], result["completed"]) == ("completed", 2), result
        assert str(result["batch_id"]).startswith(f"feed-2.batch-{day}-")
        listed = AwsClients(settings).s3.list_objects_v2(
            Bucket=settings.require("destination_bucket"), Prefix="feed-2/"
        )
        keys = sorted(o["Key"] for o in listed.get("Contents", []))
        assert keys == [
            f"feed-2/accounts/{day}/feed-2.accounts-{day}",
            f"feed-2/positions/{day}/feed-2.positions-{day}",
        ]
        assert worker.wait(60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)


def test_local_up_names_each_feeds_run_and_the_queue_the_hand_off_events_reach(
    up3: tuple[dict[str, str], str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The closing hints name `dlpipe run --date D --feed NAME` for feed-2 and feed-3 besides
    the default feed's run, and the downstream queue URL, which the hand-off rule delivers to."""
    exports, day, folder = up3
    printed = (folder / "local-up.out").read_text().splitlines()
    hints = [line.removeprefix("# then: ") for line in printed if line.startswith("# then: ")]
    # README's second shell activates the virtualenv once: `dlpipe`, as every repair hint.
    assert hints[0].startswith("dlpipe worker > "), hints  # runs until stopped
    assert hints[0].endswith(f"&  dlpipe run --date {day}"), hints
    assert hints[1:] == [f"dlpipe run --date {day} --feed feed-{n}" for n in (2, 3)]
    (events,) = [line for line in printed if line.startswith("# hand-off events")]
    url = events.rsplit(" ", 1)[-1]
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(name, exports[name])  # the exports' dummy credentials
    clients = AwsClients(Settings.from_env(exports))
    arn = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    targets = clients.events.list_targets_by_rule(Rule=HANDOFF_RULE_NAME)["Targets"]
    assert [t["Arn"] for t in targets] == [arn["Attributes"]["QueueArn"]]

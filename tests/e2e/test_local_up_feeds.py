"""`dlpipe local up --feeds N`: one stub provider per feed, each with its own port, token and
key pair, and the feeds file (DLPIPE_FEEDS_FILE) that names them in the export lines."""

from __future__ import annotations

import base64
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from dlpipe.feeds_config import load_feeds_file
from dlpipe.local.stub.crypto import oaep_sha256
from tests.e2e.test_two_shells import DLPIPE, _exports, _lines
from tests.support import unique_day

pytestmark = pytest.mark.e2e


def _secret(value: str | None) -> Path:
    assert value is not None
    assert value.startswith("file:"), value
    return Path(value.removeprefix("file:"))


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


def test_local_up_serves_one_stub_per_feed_each_with_its_own_token_and_key(tmp_path: Path) -> None:
    """--feeds 3: the exports name a feeds file with feed-2 and feed-3; every stub answers its
    own token only, and its `accounts` key unwraps with its own feed's private key only."""
    day = unique_day()
    ports = ["--port", "0", "--dynamodb-port", "0", "--stub-port", "0"]
    with (tmp_path / "local-up.err").open("w") as err:
        up = subprocess.Popen(  # stopped by PID below
            [str(DLPIPE), "local", "up", *ports, "--date", day, "--files", "2", "--feeds", "3"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        exports = _exports(_lines(up.stdout), timeout_s=90)
        feeds = load_feeds_file(exports["DLPIPE_FEEDS_FILE"])
        assert list(feeds) == ["default", "feed-2", "feed-3"]
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
            token = _secret(feed.token_secret).read_text()
            secrets[name] = (
                feed.provider_base_url,
                token,
                _secret(feed.private_key_secret).read_bytes(),
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
        children = psutil.Process(up.pid).children(recursive=True)
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

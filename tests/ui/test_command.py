"""`dlpipe ui` the command: a child process serving on 127.0.0.1, stopped by its PID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from dlpipe.config import ENV_DLQ_URL
from dlpipe.local.provision import Provisioned

pytestmark = pytest.mark.integration


def test_dlpipe_ui_serves_the_grid_on_loopback_until_stopped(
    aws_env: dict[str, str], provisioned: Provisioned, tmp_path: Path
) -> None:
    """The command prints its 127.0.0.1 URL, answers the grid and a 400 for a bad date, and
    ends cleanly on SIGINT (Ctrl-C)."""
    env = {**os.environ, ENV_DLQ_URL: provisioned.dlq_url or ""}
    dlpipe = Path(sys.executable).with_name("dlpipe")
    stderr = tmp_path / "stderr"
    with stderr.open("w") as sink:
        # SIGINT as a terminal's Ctrl-C delivers it: a suite started in the background of a
        # non-interactive shell passes SIGINT down ignored, and the child would never stop.
        child = subprocess.Popen(
            [str(dlpipe), "ui", "--port", "0"],
            env=env,
            stderr=sink,
            preexec_fn=_sigint_default,  # noqa: PLW1509 - resets one signal, nothing else
        )
    try:
        url = _announced_url(stderr, child)
        assert url.startswith("http://127.0.0.1:")
        assert "(14 days)</h1>" in requests.get(url, timeout=10).text
        assert requests.get(url + "day/2026-13-01", timeout=10).status_code == 400
    finally:
        os.kill(child.pid, signal.SIGINT)
        code = child.wait(timeout=10)
    assert code == 0, stderr.read_text()


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _announced_url(stderr: Path, child: subprocess.Popen[bytes]) -> str:
    """Wait (at most 60 s) for `dlpipe ui: URL ...` on the child's stderr."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in stderr.read_text().splitlines():
            if line.startswith("dlpipe ui: http://"):
                return line.split()[2]
        assert child.poll() is None, f"dlpipe ui exited early: {stderr.read_text()}"
        time.sleep(0.1)
    raise AssertionError("dlpipe ui printed no URL within 60 s")

"""What is wrong now, on the local stack with no worker running: `dlpipe run`, `dlpipe status`
and the web view's day page warn that no worker takes the queued files, and the command the day
page suggests for a date without a batch runs as printed and completes the day once a worker is
started (`dlpipe local up`'s exports, with a shorter idle threshold and check interval; every
command a real subprocess)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from dlpipe.config import ENV_IDLE_WARNING_SECONDS, ENV_POLL_INTERVAL_SECONDS
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from tests.e2e.test_two_shells import DLPIPE, FILES, _exports, _lines, _until, local_up
from tests.ui.test_command import _announced_url

pytestmark = pytest.mark.e2e
__all__ = ["local_up"]  # the fixture, shared as is
# Checks every 2 s (local up's exports say 5 s: test_two_shells runs a day on those alone),
# past a 1-second idle threshold: the first check, however late, finds the day idle.
POLL_INTERVAL_S = 2
IDLE_WARNING_S = 1
WARNING = "no worker has received a message for "


def _dlpipe(command: str) -> list[str]:
    """A suggested `dlpipe ...` command as argv, run with this environment's dlpipe."""
    argv = shlex.split(command)
    assert argv[0] == "dlpipe", command
    return [str(DLPIPE), *argv[1:]]


@pytest.fixture
def shell(local_up: tuple[subprocess.Popen[str], str]) -> dict[str, str]:
    """The second shell: local up's exports, PATH and HOME, a 1-second idle threshold and a
    check every 2 s."""
    up, _ = local_up
    exports = _exports(_lines(up.stdout), timeout_s=90)
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}
    timing = {
        ENV_IDLE_WARNING_SECONDS: str(IDLE_WARNING_S),
        ENV_POLL_INTERVAL_SECONDS: str(POLL_INTERVAL_S),
    }
    return {**base, **exports, **timing}


@pytest.fixture
def ui(shell: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """`dlpipe ui` in the second shell; stopped by PID after."""
    stderr = tmp_path / "ui.err"
    with stderr.open("w") as sink:
        child = subprocess.Popen(  # stopped by PID below
            [str(DLPIPE), "ui", "--port", "0"], env=shell, stderr=sink, cwd=tmp_path
        )
    try:
        yield _announced_url(stderr, child).rstrip("/")  # type: ignore[arg-type]
    finally:
        child.kill()
        child.wait(10)


def _code(page: str, element_id: str) -> str:
    """The command in the <code> of the element `element_id`."""
    found = re.search(rf'id="{element_id}"[^>]*>.*?<code>([^<]+)</code>', page, re.S)
    assert found, page
    return found.group(1)


@pytest.mark.parametrize(
    ("local_up", "feed"), [(1, DEFAULT_FEED_NAME), (2, "feed-2")], indirect=["local_up"]
)
def test_no_worker_is_warned_about_and_the_suggested_start_command_completes_the_day(
    local_up: tuple[subprocess.Popen[str], str],
    feed: str,
    shell: dict[str, str],
    ui: str,
    tmp_path: Path,
) -> None:
    """No batch: the day page and status suggest `dlpipe run --date D` (`--feed feed-2` for the
    second feed of `local up --feeds 2`); run as printed without a worker, it warns within the
    threshold, so do status and the day page; a worker then finishes it."""
    _, day = local_up
    named = feed != DEFAULT_FEED_NAME
    element = f"no-batch-{feed}" if named else "no-batch"
    suggested = _code(requests.get(f"{ui}/day/{day}", timeout=10).text, element)
    # No orchestrator here: not backfill.
    assert suggested == f"dlpipe run --date {day}" + (f" --feed {feed}" if named else "")
    status = subprocess.run(
        [str(DLPIPE), "status", "--date", day], env=shell, cwd=tmp_path,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert f"start one:\n{suggested}\n" in status.stdout, status.stdout + status.stderr
    run = subprocess.Popen(  # waited for below; killed by PID if it outlives the test
        _dlpipe(suggested), env=shell, cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    worker: subprocess.Popen[bytes] | None = None
    try:
        stderr = _lines(run.stderr)
        progress = _until(stderr, f"{FILES} file(s) listed, {FILES} queued", 60)
        warned = _until(stderr, f"WARNING: {WARNING}", 120)
        progress += warned
        # The first check after the threshold warns: checks come every 2 s, past the 1 s
        # threshold, so the warning is printed under check 1.
        checks = [found[1] for line in warned if (found := re.match(r"check (\d+)/", line))]
        assert checks == ["1"], "".join(progress)
        status = subprocess.run(
            [str(DLPIPE), "status", "--date", day, "--json"], env=shell, cwd=tmp_path,
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        payload = json.loads(status.stdout)
        assert payload["idle_warning"].startswith(WARNING)
        assert payload["queue"]["visible"] == FILES
        assert payload["queue"]["in_flight"] == 0
        page = requests.get(f"{ui}/day/{day}", timeout=10).text
        assert re.search(rf'id="idle-warning">{WARNING}', page), page
        with (tmp_path / "worker.err").open("w") as worker_err:
            worker = subprocess.Popen(  # exits by itself once idle; killed by PID if not
                [str(DLPIPE), "worker", "--concurrency", "2", "--exit-when-idle", "3"],
                env=shell, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=worker_err,
            )  # fmt: skip
        progress += _until(stderr, "batch completed", 120)
        assert run.wait(30) == 0, "".join(progress)
        assert run.stdout is not None
        result = json.loads(run.stdout.read())
        # The suggested feed's day, keyed by its feed (the default feed's keys as before feeds).
        assert result["batch_id"].startswith(f"{feed}.batch-" if named else "batch-"), result
        assert result["completed"] == FILES
        page = requests.get(f"{ui}/day/{day}", timeout=10).text
        assert 'id="idle-warning"' not in page
    finally:
        for process in (run, worker):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(10)

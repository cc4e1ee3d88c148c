"""`dlpipe local up --feeds-file FILE`: a feed written by hand as README's "Adding a feed
locally" says runs on the long-lived stack, and `dlpipe status` shows its day afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from tests.e2e.test_local_up_feeds import _printed, _replayed
from tests.e2e.test_two_shells import DLPIPE, _exports, _lines
from tests.iam.recorder import FILE_ENV, TEST_ENV
from tests.support import unique_day

pytestmark = pytest.mark.e2e

TEMPLATE = """
[feeds.default]
schedule = "cron(30 6 * * ? *)"
time_zone = "UTC"

[feeds.mine]
schedule = "cron(0 7 * * ? *)"
time_zone = "Europe/London"
destination_prefix = "mine"
"""


def _dlpipe(shell: dict[str, str], folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # bounded by its timeout
        [str(DLPIPE), *args],
        env=shell,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_a_hand_written_feed_runs_on_local_up_and_status_shows_its_day(tmp_path: Path) -> None:
    """The template's feed `mine` gets its stub and SSM parameter; the hints name
    `dlpipe run --date D --feed mine`; a worker and that run with the exports alone
    complete its day, and `status --feed mine` shows the batch completed."""
    day = unique_day()
    (tmp_path / "feeds.toml").write_text(TEMPLATE)
    ports = ["--port", "0", "--dynamodb-port", "0", "--stub-port", "0"]
    args = ["local", "up", *ports, "--date", day, "--files", "2", "--feeds-file", "feeds.toml"]
    with (tmp_path / "local-up.err").open("w") as err:
        up = subprocess.Popen(  # stopped by PID below
            [str(DLPIPE), *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=err, text=True
        )
    try:
        printed = _printed(_lines(up.stdout), timeout_s=90)
        exports = _exports(_replayed(printed), timeout_s=1)
        children = psutil.Process(up.pid).children(recursive=True)
        assert "feed mine: stub provider at" in (tmp_path / "local-up.err").read_text()
        hints = [line.strip() for line in printed if line.startswith("# then: ")]
        assert hints[-1] == f"# then: dlpipe run --date {day} --feed mine", hints
        shell = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], **exports}
        shell |= {k: os.environ[k] for k in ("PYTHONPATH", FILE_ENV, TEST_ENV) if k in os.environ}
        with (tmp_path / "worker.err").open("w") as worker_err:
            worker = subprocess.Popen(  # exits by itself once idle; killed by PID if not
                [str(DLPIPE), "worker", "--concurrency", "2", "--exit-when-idle", "20"],
                env=shell,
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=worker_err,
            )
        try:
            # The hint's command, checked each second rather than the exports' 5 s (the flag
            # only sets the interval: the feed, its provider, key and token come from the
            # exports and the SSM parameter alone).
            hinted = hints[-1].removeprefix("# then: dlpipe ").split()
            run = _dlpipe(shell, tmp_path, *hinted, "--poll-interval", "1")
            assert run.returncode == 0, run.stderr[-2000:]
            status = _dlpipe(shell, tmp_path, "status", "--date", day, "--feed", "mine", "--json")
            assert status.returncode == 0, status.stderr[-2000:]
            (batch,) = json.loads(status.stdout)["batches"]
            assert (batch["batch_id"].startswith(f"mine.batch-{day}-"), batch["status"]) == (
                True,
                "completed",
            ), batch
        finally:
            if worker.poll() is None:
                worker.kill()
            worker.wait(10)
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

"""`dlpipe local up`'s terminal shows what runs where and the lines to paste, never a JSON log
line: the stub providers' logs (started, published, each request, stopped) go to a log file
in the stack's folder, which local up names once."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.e2e.test_two_shells import DLPIPE, _exports, _lines
from tests.support import unique_day

pytestmark = pytest.mark.e2e
STUB_LOG = Path(".dlpipe") / "local-up" / "stub.log"
FEEDS = 2


def _json_lines(text: str) -> list[str]:
    """The lines of `text` that are a JSON object (a log record)."""
    found = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            found.append(line)
    return found


def _until_ctrl_c(lines: queue.Queue[str | None], timeout_s: float) -> list[str]:
    """stdout's lines up to and with local up's closing `# Ctrl-C` comment."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while not seen or not seen[-1].startswith("# Ctrl-C"):
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        assert line is not None, "".join(seen)
        seen.append(line)
    return seen


def _replayed(printed: list[str]) -> queue.Queue[str | None]:
    lines: queue.Queue[str | None] = queue.Queue()
    for line in [*printed, None]:
        lines.put(line)
    return lines


def test_the_stub_providers_log_to_a_file_local_up_names_once(tmp_path: Path) -> None:
    """--feeds 2 on free ports, one listing request to the default feed's stub, then SIGINT:
    local up's stdout and stderr hold no JSON line and name .dlpipe/local-up/stub.log once;
    that file holds each stub's started, published and stopped records, JSON line by line."""
    day = unique_day()
    ports = ["--port", "0", "--dynamodb-port", "0", "--stub-port", "0"]
    args = [*ports, "--date", day, "--files", "2", "--feeds", str(FEEDS)]
    with (tmp_path / "local-up.err").open("w") as err_file:
        up = subprocess.Popen(  # stopped by PID below
            [str(DLPIPE), "local", "up", *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
        )
    try:
        stdout = _lines(up.stdout)
        printed_out = _until_ctrl_c(stdout, timeout_s=90)
        exports = _exports(_replayed(printed_out), timeout_s=1)
        children = psutil.Process(up.pid).children(recursive=True)
        request = urllib.request.Request(
            f"{exports['DLPIPE_PROVIDER_URL']}/v1/files?date={day}",
            headers={"Authorization": f"Bearer {exports['DLPIPE_PROVIDER_TOKEN']}"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200
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
    out = "".join(printed_out) + "".join(iter(stdout.get, None))
    err = (tmp_path / "local-up.err").read_text()
    printed = out + err
    assert (_json_lines(out), _json_lines(err)) == ([], []), printed
    assert printed.count(str(STUB_LOG)) == 1, printed
    logged = (tmp_path / STUB_LOG).read_text().splitlines()
    assert logged
    assert _json_lines("\n".join(logged)) == logged
    events = [json.loads(line)["event"] for line in logged]
    for event in ("started", "published", "stopped"):
        assert events.count(f"dlpipe.local.stub.server.{event}") == FEEDS, events
    records = [json.loads(line) for line in logged]
    stopped = [r for r in records if r["event"] == "dlpipe.local.stub.server.stopped"]
    assert sum(r["requests"] for r in stopped) >= 1  # logged while it served, too

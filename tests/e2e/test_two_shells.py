"""Two shells: `dlpipe local up` in the first; the second knows only the export lines it
printed, and runs a worker and a day with them."""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support import unique_day

pytestmark = pytest.mark.e2e
DLPIPE = Path(sys.executable).with_name("dlpipe")
FILES = 4


def _lines(stream: object) -> queue.Queue[str | None]:
    """The stream's lines as they come, then None at its end."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _exports(lines: queue.Queue[str | None], timeout_s: float) -> dict[str, str]:
    """The `export K=V` lines printed before the closing comment, parsed as a shell would."""
    found: dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        if line is None or line.startswith("# Ctrl-C"):
            return found
        if line.startswith("export "):
            key, _, value = line.removeprefix("export ").strip().partition("=")
            found[key] = shlex.split(value)[0] if value else ""


def _until(lines: queue.Queue[str | None], text: str, timeout_s: float) -> list[str]:
    """Lines up to the first that holds `text` (AssertionError with them if none does)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while not seen or text not in seen[-1]:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        assert line is not None, "".join(seen)
        seen.append(line)
    return seen


@pytest.fixture
def local_up(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`dlpipe local up` on free ports, publishing a day of FILES files (for each of N feeds,
    the test's indirect parameter, default 1); stopped by PID after."""
    day = unique_day()
    ports = ["--port", "0", "--dynamodb-port", "0", "--stub-port", "0"]
    feeds = ["--feeds", str(getattr(request, "param", 1))]
    with (tmp_path / "local-up.err").open("w") as err:
        process = subprocess.Popen(  # stopped by PID below
            [str(DLPIPE), "local", "up", *ports, "--date", day, "--files", str(FILES), *feeds],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        yield process, day
    finally:
        if process.poll() is None:
            for child in psutil.Process(process.pid).children(recursive=True):
                child.kill()
            process.kill()
            process.wait(10)


def test_a_second_shell_runs_a_day_with_only_the_printed_exports(
    local_up: tuple[subprocess.Popen[str], str], tmp_path: Path
) -> None:
    """Exports of `local up` + PATH/HOME: `dlpipe run --date D` queues the day, a worker started
    then downloads it, the run completes; SIGINT then stops local up and every child it started."""
    up, day = local_up
    exports = _exports(_lines(up.stdout), timeout_s=90)
    key_file = Path(exports["DLPIPE_PRIVATE_KEY_FILE"])
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key_pem = key_file.read_bytes()
    # A second stack from the same folder would rewrite these keys: refused in one line.
    second = subprocess.run(
        [str(DLPIPE), "local", "up", "--port", "0", "--dynamodb-port", "0", "--stub-port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert second.returncode == 1, second.stderr
    assert second.stderr.splitlines() == [
        f"dlpipe: another `dlpipe local up` (PID {up.pid}) holds .dlpipe/local-up: stop it first"
        " (its key files would be rewritten and its days fail wrong_key)"
    ]
    assert key_file.read_bytes() == key_pem
    children = psutil.Process(up.pid).children(recursive=True)
    shell = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], **exports}
    run = subprocess.Popen(  # waited for below; killed by PID if it outlives the test
        [str(DLPIPE), "run", "--date", day],
        env=shell,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    worker: subprocess.Popen[bytes] | None = None
    try:
        stderr = _lines(run.stderr)
        progress = _until(stderr, f"{FILES} file(s) listed, {FILES} queued; first check in 5s", 60)
        with (tmp_path / "worker.err").open("w") as worker_err:
            worker = subprocess.Popen(  # exits by itself once idle; killed by PID if not
                [str(DLPIPE), "worker", "--concurrency", "2", "--exit-when-idle", "3"],
                env=shell,
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=worker_err,
            )
        progress += _until(stderr, "batch completed", 120)
        assert run.wait(30) == 0, "".join(progress)
        assert run.stdout is not None
        assert json.loads(run.stdout.read())["completed"] == FILES
        # Each check printed its counts by status and when the next one is due.
        checks = [line for line in progress if line.startswith("check ")]
        assert checks[-1].startswith(f"check {len(checks)}/120: {FILES} completed, 0 failed")
        assert all("; next check in 5s" in line for line in checks[:-1])
        assert worker.wait(40) == 0
    finally:
        for process in (run, worker):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(10)
    up.send_signal(signal.SIGINT)
    assert up.wait(30) == 0
    _, alive = psutil.wait_procs(children, timeout=10)
    assert len(children) >= 2  # moto and DynamoDB Local's JVM
    assert alive == []

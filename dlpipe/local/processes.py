"""Child processes of the local stack: waited for until they answer, stopped by PID,
boundedly, without tracebacks."""

from __future__ import annotations

import subprocess
import sys

import requests
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed


def wait_until_answers(url: str, timeout_s: float, *, require_ok: bool) -> None:
    """Poll `url` every 0.1 s until it answers (a 2xx if `require_ok`, any HTTP answer
    otherwise); the last requests.RequestException once `timeout_s` has passed."""

    @retry(
        stop=stop_after_delay(timeout_s),
        wait=wait_fixed(0.1),
        retry=retry_if_exception_type(requests.RequestException),
        reraise=True,
    )
    def ping() -> None:
        response = requests.get(url, timeout=2)
        if require_ok:
            response.raise_for_status()

    ping()


def stop_child(process: subprocess.Popen[str], timeout_s: float) -> None:
    """SIGTERM, then SIGKILL if the child lingers past `timeout_s`; never raises. A child that
    survives even SIGKILL that long (a loaded machine freeing gigabytes) is reported on stderr
    and left to the kernel, instead of a traceback at the end of a good run."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        try:
            process.wait(max(timeout_s, 30.0))
        except subprocess.TimeoutExpired:
            print(f"dlpipe: child {process.pid} did not exit after SIGKILL", file=sys.stderr)

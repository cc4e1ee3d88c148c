"""Child processes of the local stack: stopped by PID, boundedly, without tracebacks."""

from __future__ import annotations

import subprocess
import sys


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

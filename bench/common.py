"""What the benchmark scripts share: the machine line, JSON results, RSS sampling, timing."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

MIB = 1024 * 1024


def machine() -> dict[str, Any]:
    """Cores, memory, CPU model, Python and key library versions, and the date (UTC)."""
    import boto3  # noqa: PLC0415
    import cryptography  # noqa: PLC0415
    import moto  # noqa: PLC0415

    return {
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "boto3": boto3.__version__,
        "moto": moto.__version__,
        "cryptography": cryptography.__version__,
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def command_line() -> str:
    """How this script was run, as a copy-pasteable command."""
    script = Path(sys.argv[0])
    with contextlib.suppress(ValueError):
        script = script.resolve().relative_to(Path.cwd())
    return " ".join([".venv/bin/python", str(script), *sys.argv[1:]])


def write_json(path: str | None, figures: dict[str, Any]) -> None:
    """Write a script's figures (with the machine and the command) for run_all.py."""
    if not path:
        return
    payload = {"machine": machine(), "command": command_line(), **figures}
    Path(path).write_text(json.dumps(payload, indent=2, sort_keys=True))


class RssSampler:
    """Samples a process's RSS every `interval_s` in a thread; keeps the peak (bytes)."""

    def __init__(self, pid: int, interval_s: float = 0.02) -> None:
        self._process, self.peak, self._interval_s = psutil.Process(pid), 0, interval_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            try:
                self.peak = max(self.peak, self._process.memory_info().rss)
            except psutil.Error:
                return
            self._done.wait(self._interval_s)

    def stop(self) -> int:
        """Stop sampling and return the peak RSS in bytes."""
        self._done.set()
        self._thread.join()
        return self.peak


def quiet_logs(level: str = "WARNING") -> None:
    """dlpipe's JSON logs to stderr at `level`, its metric lines dropped: figures stay readable."""
    from dlpipe import metrics  # noqa: PLC0415
    from dlpipe.log import configure_logging  # noqa: PLC0415

    configure_logging(level)
    metrics.set_sink(lambda _line: None)


def timed(func: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    started = time.perf_counter()
    result = func()
    return time.perf_counter() - started, result


def verdict(met: bool) -> str:
    """The word a results table uses."""
    return "met" if met else "MISSED"

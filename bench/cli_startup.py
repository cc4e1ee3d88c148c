"""How soon `dlpipe` answers: wall and CPU time of `dlpipe --help` and a few command helps.

    python bench/cli_startup.py [--runs 11] [--json out.json]

Each case runs the installed console script (next to this Python) --runs times as a child;
the figures are the medians of the wall time (perf_counter around the child) and of its CPU
time (user + system, os.wait4), with `python -c pass` as the floor. CPU time moves less than
wall time on a shared machine; the load average before and after is printed with them.
The target (issue 48): `dlpipe --help` and `dlpipe <command> --help` within 0.3 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import write_json

DLPIPE = str(Path(sys.executable).with_name("dlpipe"))
CASES = (
    ("--help",),
    ("status", "--help"),
    ("jobs", "--help"),
    ("run", "--help"),
    ("worker", "--help"),
    ("local", "up", "--help"),
    ("provider-stub", "--help"),
)
TARGET_S = 0.3


def once(argv: list[str]) -> tuple[float, float]:
    """(wall, cpu) seconds of one child running `argv`, which must exit 0."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv} failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    figures: dict[str, object] = {"load_before": os.getloadavg(), "runs": args.runs}
    cases = [("python -c pass", [sys.executable, "-c", "pass"])]
    cases += [("dlpipe " + " ".join(case), [DLPIPE, *case]) for case in CASES]
    for name, argv in cases:
        runs = [once(argv) for _ in range(args.runs)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        figures[name] = {"wall_median_s": round(wall, 3), "cpu_median_s": round(cpu, 3)}
        mark = "" if name.startswith("python") else ("  ok" if wall <= TARGET_S else "  over 0.3 s")
        print(f"{name:28} wall {wall * 1000:6.0f} ms  cpu {cpu * 1000:6.0f} ms{mark}")
    figures["load_after"] = os.getloadavg()
    print(f"load average before {figures['load_before']}, after {figures['load_after']}")
    write_json(args.json, figures)


if __name__ == "__main__":
    main()

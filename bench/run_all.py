"""Run every benchmark once, print its figures, and write BENCHMARKS.md (`make bench`).

    python bench/run_all.py [--fast | --quick] [--out BENCHMARKS.md]

Default (about 13 minutes on 2 shared cores): decrypt stage (256 MiB, best of 5); data path
on 100 MiB (best of 5), 256 MiB (best of 3) and 1 GiB (best of 2) files, CBC and GCM;
worker memory on 100 MiB and 1 GiB files, and on 1 GiB with one part in flight; the
1,000-file day with 1, 2, 4 and 8 workers (requests, capacity, scale-out, latency); the key
heat of a 200-file day and of eight feeds' days at once (DynamoDB WCU per partition key).
--fast leaves out the 1 GiB data path (about 3 minutes, and the ~5 GiB that moto holds
while it serves a 1 GiB file). --quick is a smoke test of the scripts and the report.

Each script runs as its own process (its own emulator), one after the other. A missed target
is a figure like any other: the exit status is non-zero only if a script failed to run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import report
from common import machine

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def run(args: list[str]) -> tuple[str, float, int]:
    """Run `python bench/<script> args`, echoing its stdout; (stdout, seconds, exit code)."""
    cmd = [sys.executable, str(BENCH / args[0]), *args[1:]]
    print(f"\n$ .venv/bin/python bench/{' '.join(args)}", flush=True)
    started = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None
        for line in child.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    return "".join(lines), time.monotonic() - started, child.returncode


def shown(args: list[str]) -> str:
    """The command as BENCHMARKS.md shows it."""
    return " ".join([".venv/bin/python", f"bench/{args[0]}", *args[1:]])


_DECRYPT_ROW = re.compile(
    r"^(AES-256-\w+)\s+(\d+)Mi\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+(\w+)"
)


def parse_decrypt(stdout: str) -> list[dict[str, Any]]:
    """Rows of bench/decrypt_stage.py's table."""
    rows = []
    for line in stdout.splitlines():
        m = _DECRYPT_ROW.match(line)
        if m:
            rows.append(
                {
                    "cipher": m[1],
                    "chunk_mib": int(m[2]),
                    "raw": int(m[3]),
                    "verified": int(m[4]),
                    "verified_ratio": float(m[5]),
                    "ours": int(m[6]),
                    "ratio": float(m[7]),
                }
            )
    return rows


def parse_memory(stdout: str) -> list[dict[str, Any]]:
    """Rows of bench/worker_memory.py's table: cipher, in-flight and the largest RSS figure."""
    rows = []
    for line in stdout.splitlines():
        tokens = line.split()
        if not tokens or not tokens[0].startswith("AES-256-"):
            continue
        mib = [float(t[:-1]) for t in tokens if re.fullmatch(r"[\d.]+M", t)]
        if len(mib) < 2:
            continue
        rows.append(
            {
                "cipher": tokens[0],
                "in_flight": int(tokens[1]),
                "idle_mib": mib[0],
                "peak_mib": max(mib),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="leave out the 1 GiB data path")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: tiny sizes, figures meaningless, written to --out (default: a temp file)",
    )
    parser.add_argument("--out", help="default: BENCHMARKS.md at the top of the repository")
    parser.add_argument(
        "--results",
        default=str(Path(tempfile.gettempdir()) / "dlpipe-bench-results.json"),
        help="where the raw results are kept (JSON)",
    )
    parser.add_argument("--render", metavar="RESULTS", help="only re-render a results file")
    args = parser.parse_args()
    if args.render:
        Path(args.out or ROOT / "BENCHMARKS.md").write_text(
            report.render(json.loads(Path(args.render).read_text()))
        )
        return 0
    out = args.out or (
        str(Path(tempfile.gettempdir()) / "BENCHMARKS.quick.md")
        if args.quick
        else str(ROOT / "BENCHMARKS.md")
    )
    q = args.quick
    started = time.monotonic()
    results: dict[str, Any] = {"machine": machine(), "steps": []}
    failures: list[str] = []

    def step(name: str, script_args: list[str], parse: Any = None) -> Any:
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            wants_json = parse is None
            full_args = [*script_args, "--json", tmp.name] if wants_json else script_args
            stdout, seconds, code = run(full_args)
            results["steps"].append(
                {
                    "name": name,
                    "command": shown(script_args),
                    "seconds": round(seconds),
                    "exit": code,
                }
            )
            if code != 0:
                failures.append(f"{name}: exit {code}")
                return None
            data = json.loads(Path(tmp.name).read_text()) if wants_json else parse(stdout)
            return {"command": shown(script_args), "stdout": stdout, "data": data}

    decrypt = ["--mib", "32", "--repeat", "1"] if q else ["--mib", "256", "--repeat", "5"]
    results["decrypt"] = step("decrypt stage", ["decrypt_stage.py", *decrypt], parse_decrypt)
    data_path = [("20", "1")] if q else [("100", "5"), ("256", "3")]
    if not (q or args.fast):
        data_path.append(("1024", "2"))
    results["data_path"] = [
        step(f"data path {mib} MiB", ["data_path.py", "--sizes", mib, "--repeat", repeat])
        for mib, repeat in data_path
    ]
    results["memory"] = [
        step(f"worker memory {mib} MiB", ["worker_memory.py", "--mib", str(mib)], parse_memory)
        for mib in ((20, 50) if q else (100, 1024))
    ]
    one_part = ["--mib", "50" if q else "1024", "--ciphers", "AES-256-GCM", "--in-flight", "1"]
    results["memory_one_part"] = step(
        "worker memory, one part in flight", ["worker_memory.py", *one_part], parse_memory
    )
    day = ["--files", "100", "--workers", "1,2", "--latency-files", "20"] if q else []
    results["batch_day"] = step("1,000-file day", ["batch_day.py", *day])
    heat = ["--files", "20", "--feeds", "2", "--feed-files", "5"] if q else []
    results["key_heat"] = step("key heat", ["key_heat.py", *heat])
    results["total_seconds"] = round(time.monotonic() - started)
    results["fast"] = args.fast
    flags = " ".join(f for f, on in (("--fast", args.fast), ("--quick", q)) if on)
    results["invocation"] = (
        " ".join([".venv/bin/python bench/run_all.py", *([flags] if flags else [])])
        + f"` (what `make bench{f' BENCH_ARGS={flags}' if flags else ''}` runs) `"
    )
    Path(args.results).write_text(json.dumps(results, indent=1))
    Path(out).write_text(report.render(results))
    print(f"\nwrote {out} in {results['total_seconds']} s")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

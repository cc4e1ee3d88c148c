"""The key-heat report: the DynamoDB writes a real local day makes, per table, index and key.

    python bench/key_heat.py [--files 200] [--feeds 8] [--feed-files 20] [--workers 4]

Runs real local days (the durable poller, the stub provider, the downloader workers:
dlpipe/local/day.py and feed_days.py) with DynamoDB behind the throughput proxy
(dlpipe/local/ddb_throughput.py) at AWS's own per-partition limits (1,000 WCU, 3,000 RCU a
second: a local day stays far below them, so nothing is refused), and reads what the proxy
charged: WCU per file on each table and index, the hottest partition key value, and the
design's ceiling, 1,000 WCU / that key's WCU per file, in files a second for the whole run
(a key's WCU per file is its WCU over all the run's files, so a key only one feed's files
reach counts for its share). The batches table's keys are written once a poll, not once a
file: they are shown apart, with the ceiling they set in batches polling at once at the
deployed poll interval. First one feed's day of --files files, then --feeds feeds'
days at once (8, the local stack's most), --feed-files each (--feeds 0 leaves that out).
Counted at the proxy, from the writes the code made: no model of them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from common import quiet_logs, write_json

from dlpipe.config import BATCHES_TABLE_BASE_NAME, INT_SETTINGS
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.local.day import DayOptions, run_day
from dlpipe.local.ddb_limits import (
    AWS_PARTITION_RCU,
    AWS_PARTITION_WCU,
    ENV_PARTITION_RCU,
    ENV_PARTITION_WCU,
    PartitionHeat,
)
from dlpipe.local.feed_days import local_feeds, run_feed_days
from dlpipe.local.stack import LocalStack, local_stack
from dlpipe.local.stack_feeds import MAX_LOCAL_FEEDS, numbered_feeds
from dlpipe.local.stub.publish import StubFileSpec

FILE_BYTES = 1024
POLL_INTERVAL_S = INT_SETTINGS["poll_interval_seconds"].default  # the deployed default


def specs(count: int, prefix: str = "kh") -> list[StubFileSpec]:
    return [StubFileSpec(f"{prefix}{n:05d}", FILE_BYTES, str(CIPHER_GCM)) for n in range(count)]


def _per_poll(row: PartitionHeat) -> bool:
    """A batches-table key (the table's or PollingDateIndex's): written once a poll of a batch
    (its progress), not once a file, so its load grows with feeds x polls, not with files."""
    return BATCHES_TABLE_BASE_NAME in row.resource


def poll_key(rows: list[PartitionHeat]) -> dict[str, Any] | None:
    """The hottest per-poll key and the ceiling it sets: at the deployed poll interval, each
    batch writes it once an interval, so 1,000 WCU/s holds 1,000 x interval / (WCU a write)
    batches polling at once."""
    polled = [r for r in rows if _per_poll(r) and r.writes]
    if not polled:
        return None
    hot = max(polled, key=lambda r: r.wcu)
    per_write = hot.wcu / hot.writes
    return {
        "resource": hot.resource,
        "key": hot.key,
        "wcu": hot.wcu,
        "writes": hot.writes,
        "wcu_per_write": round(per_write, 2),
        "poll_interval_s": POLL_INTERVAL_S,
        "ceiling_batches_polling": round(AWS_PARTITION_WCU * POLL_INTERVAL_S / per_write),
    }


def figures(rows: list[PartitionHeat], files: int, ok: bool) -> dict[str, Any]:
    """Per-file WCU by table and index; the hottest key written per file (the jobs table and
    its indexes) and the ceiling it sets in files a second; the hottest per-poll key apart."""
    by_resource: dict[str, float] = defaultdict(float)
    for row in rows:
        by_resource[row.resource] += row.wcu
    hottest = max((r for r in rows if not _per_poll(r)), key=lambda r: r.wcu)
    hot_per_file = hottest.wcu / files
    return {
        "files": files,
        "ok": ok,
        "wcu_per_file": {r: round(w / files, 2) for r, w in sorted(by_resource.items())},
        "rcu_per_file": round(sum(r.rcu for r in rows) / files, 2),
        "hottest": {
            "resource": hottest.resource,
            "key": hottest.key,
            "wcu": hottest.wcu,
            "wcu_per_file": round(hot_per_file, 2),
        },
        "ceiling_files_per_s": round(AWS_PARTITION_WCU / hot_per_file, 1),
        "poll_key": poll_key(rows),
        "throttled": sum(r.throttled for r in rows),
        "top_keys": [
            {"resource": r.resource, "key": r.key, "wcu_per_file": round(r.wcu / files, 2)}
            for r in rows[:5]
        ],
    }


def one_feed(stack: LocalStack, files: int, workers: int) -> dict[str, Any]:
    proxy = stack.emulator.throughput
    assert proxy is not None
    proxy.reset()
    report, _ = run_day(stack, specs(files), DayOptions(date="2026-03-01", workers=workers))
    return figures(proxy.heat(), files, report.ok)


def many_feeds(stack: LocalStack, feeds: int, files: int, workers: int) -> dict[str, Any]:
    proxy = stack.emulator.throughput
    assert proxy is not None
    with tempfile.TemporaryDirectory() as folder:
        local = local_feeds(stack, numbered_feeds(feeds), Path(folder), specs(files, "kf"))
        proxy.reset()
        reports = run_feed_days(
            stack, local, DayOptions(date="2026-03-02", workers=workers, max_polls=180)
        )
    out = figures(proxy.heat(), feeds * files, all(r.ok for r in reports))
    out["feeds"] = feeds
    return out


def show(title: str, run: dict[str, Any]) -> None:
    print(f"\n{title}: {run['files']} files, day verified: {run['ok']}")
    print(f"  {'table / index':40} WCU per file")
    for resource, per_file in run["wcu_per_file"].items():
        print(f"  {resource:40} {per_file:>8.2f}")
    per_file = run["wcu_per_file"]
    jobs = sum(w for r, w in per_file.items() if BATCHES_TABLE_BASE_NAME not in r)
    print(
        f"  total: {sum(per_file.values()):.2f} WCU per file ({jobs:.2f} on the jobs table and "
        f"its indexes); {run['rcu_per_file']} RCU per file, all reads"
    )
    hot = run["hottest"]
    print(f"  hottest key: {hot['resource']} = {hot['key']}: {hot['wcu_per_file']} WCU per file")
    print(
        f"  ceiling: {AWS_PARTITION_WCU:,.0f} / {hot['wcu_per_file']} = "
        f"{run['ceiling_files_per_s']} files/s; refused locally: {run['throttled']}"
    )
    if (poll := run["poll_key"]) is not None:
        print(
            f"  hottest per-poll key: {poll['resource']} = {poll['key']}: {poll['wcu']:g} WCU in "
            f"{poll['writes']} writes ({poll['wcu_per_write']} a write, one a batch a poll); at "
            f"a {poll['poll_interval_s']} s poll interval its ceiling is "
            f"{poll['ceiling_batches_polling']:,} batches polling at once"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument(
        "--feeds",
        type=int,
        default=MAX_LOCAL_FEEDS,
        choices=range(MAX_LOCAL_FEEDS + 1),
        metavar=f"0..{MAX_LOCAL_FEEDS}",
    )
    parser.add_argument("--feed-files", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    quiet_logs()
    # AWS's per-partition limits: the proxy counts every unit and refuses what AWS would.
    os.environ[ENV_PARTITION_WCU] = str(AWS_PARTITION_WCU)
    os.environ[ENV_PARTITION_RCU] = str(AWS_PARTITION_RCU)
    out: dict[str, Any] = {}
    with local_stack() as stack:
        out["one_feed"] = one_feed(stack, args.files, args.workers)
        show("one feed's day", out["one_feed"])
        if args.feeds:
            out["many_feeds"] = many_feeds(stack, args.feeds, args.feed_files, args.workers)
            show(f"{args.feeds} feeds' days at once", out["many_feeds"])
    write_json(args.json, out)
    return 0 if all(run["ok"] for run in out.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())

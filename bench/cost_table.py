"""What a day costs on AWS at 10 to 100,000 files, from measured units per file and list prices.

    python bench/cost_table.py [--scale-json figures.json] [--files 10,1000,10000,100000]

Units per file come from measurements (MEASURED below, each with its source); with
--scale-json the orchestration figures are read from a bench/orchestration_scale.py --json
file instead (its largest run). Prices are us-east-1 list prices (PRICES, each with the date
it is cited as of). Free tiers are left out (a month of days would use them up in part), and
so are storage (DynamoDB, S3, durable execution data), data transfer, CloudWatch and KMS.
Rows marked "model" rest on an assumption stated next to it, not on a measurement.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Price:
    """One list price in USD per unit."""

    usd: float
    unit: str
    as_of: str


PRICES = {
    "wru": Price(
        0.625 / 1e6,
        "DynamoDB on-demand write request unit",
        "as published since 2024-11-01 (AWS News Blog on on-demand pricing, updated 2025-01-31)",
    ),
    "rru": Price(
        0.125 / 1e6,
        "DynamoDB on-demand read request unit",
        "as published since 2024-11-01 (same source)",
    ),
    "sqs": Price(
        0.40 / 1e6, "SQS standard request (64 KB chunk)", "as published on 2025-06-01 (SQS pricing)"
    ),
    "s3_put": Price(
        0.005 / 1000, "S3 Standard PUT/COPY/POST/LIST request", "as published on 2025-06-01"
    ),
    "s3_get": Price(
        0.0004 / 1000, "S3 Standard GET/HEAD and other requests", "as published on 2025-06-01"
    ),
    "lambda_request": Price(0.20 / 1e6, "Lambda request", "as published on 2025-06-01"),
    "lambda_gb_s": Price(0.0000166667, "Lambda GB-second (x86)", "as published on 2025-06-01"),
    "durable_op": Price(
        8.00 / 1e6,
        "Lambda durable operation (step, wait, ...)",
        "Lambda pricing page as transcribed on 2026-09-20 (its worked example)",
    ),
}

# Per file unless named per day. Sources: bench/orchestration_scale.py (10,000 files with
# faithful stand-in workers, 2026-11-23 23:46 UTC, after the paged BatchIndex reads and the
# streamed sweep; DynamoDB Local's reported ConsumedCapacity) and bench/batch_day.py / the
# load scenario (the real worker's SQS and S3 calls per file, BENCHMARKS.md section 3).
MEASURED: dict[str, float] = {
    "fanout_wcu": 6.0005,  # PutItem per job: 2 WCU + 4 GSI WCU (two GSIs projecting ALL)
    "worker_wcu": 26.0,  # claim, fence, complete: 6.0 WCU + 20.0 GSI WCU
    "worker_rcu": 1.0,  # the worker's consistent GetItem
    "completion_rcu": 0.2361,  # both completion checks of the day (0.175 at 100,000 files)
    "day_wcu": 7.0,  # batch item: create, mark queued, one record per poll (per day)
    "orchestrator_sqs": 0.1,  # SendMessageBatch of 10
    "worker_sqs": 4.5,  # receive (plus empty long polls), 2 x ChangeMessageVisibility, delete
    "worker_s3_put": 1.0,  # PutObject (files < 8 MiB; a multipart file adds a part a 8 MiB)
    "worker_s3_get": 1.0,  # HeadObject before publishing
    "orchestrator_s_per_file": 0.0151,  # fan-out + checks wall per file, emulator-bound
}
MODEL = {
    "downloader_s_per_file": 0.25,  # model: ~12 AWS calls at ~10-20 ms plus the transfer
    "downloader_gb": 1.0,  # terraform default downloader_memory_mb = 1024
    "orchestrator_gb": 0.5,  # terraform default orchestrator_memory_mb = 512
    "polls": 2,  # files done by the second poll
    "chunk_entries": 1000,
    "invocation_s": 900,
}


def from_scale_json(path: str) -> dict[str, float]:
    """The orchestration figures of the largest run in a bench/orchestration_scale.py file."""
    data: dict[str, Any] = json.loads(Path(path).read_text())
    run, figures = data["runs"][-1], data["per_file"][-1]
    phases = run["orchestration"]["phases"]
    wall = sum(phases[p]["wall_s"] for p in ("fan-out", "checks") if p in phases)
    meter = run["orchestration"]["meter"]
    day_wcu = sum(meter.get(p, {}).get("capacity", {}).get("WCU", 0.0) for p in ("setup", "checks"))
    return {
        "fanout_wcu": figures["fanout_wcu"],
        "worker_wcu": figures["worker_wcu"],
        "worker_rcu": figures["worker_rcu"],
        "completion_rcu": figures["completion_rcu"],
        "day_wcu": day_wcu,
        "orchestrator_s_per_file": wall / run["files"],
    }


def day_units(files: int, m: dict[str, float]) -> dict[str, float]:
    """Billed units of one day of `files` files."""
    chunks = max(1, math.ceil(files / MODEL["chunk_entries"]))
    orchestrator_s = files * m["orchestrator_s_per_file"]
    invocations = 1 + MODEL["polls"] + math.floor(orchestrator_s / MODEL["invocation_s"])
    return {
        "wru": files * (m["fanout_wcu"] + m["worker_wcu"]) + m["day_wcu"],
        "rru": files * (m["worker_rcu"] + m["completion_rcu"]),
        "sqs": files * (m["orchestrator_sqs"] + m["worker_sqs"]),
        "s3_put": files * m["worker_s3_put"],
        "s3_get": files * m["worker_s3_get"],
        "lambda_request": files + invocations,
        "lambda_gb_s": files * MODEL["downloader_s_per_file"] * MODEL["downloader_gb"]
        + orchestrator_s * MODEL["orchestrator_gb"],
        "durable_op": 2 + chunks + 2 * MODEL["polls"],  # execution, create, chunks, waits+checks
    }


def table(sizes: list[int], m: dict[str, float]) -> str:
    """The cost table as Markdown."""
    head = (
        "| files / day | DynamoDB WRU | DynamoDB RRU | SQS requests | S3 PUT | S3 GET/HEAD |"
        " Lambda requests | Lambda GB-s (model) | durable ops | USD / day |"
    )
    lines = [head, "|" + "---|" * 10]
    for files in sizes:
        u = day_units(files, m)
        usd = sum(u[k] * PRICES[k].usd for k in u)
        lines.append(
            f"| {files:,} | {u['wru']:,.0f} | {u['rru']:,.0f} | {u['sqs']:,.0f} |"
            f" {u['s3_put']:,.0f} | {u['s3_get']:,.0f} | {u['lambda_request']:,.0f} |"
            f" {u['lambda_gb_s']:,.1f} | {u['durable_op']:,.0f} | ${usd:,.4f} |"
        )
    lines.append("")
    lines.append("USD / day by service at the largest size:")
    u = day_units(sizes[-1], m)
    for key, units in u.items():
        price = PRICES[key]
        lines.append(
            f"- {price.unit}: {units:,.1f} x ${price.usd * 1e6:,.4f} per million ="
            f" ${units * price.usd:,.4f} ({price.as_of})"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale-json", help="a bench/orchestration_scale.py --json file")
    parser.add_argument("--files", default="10,1000,10000,100000")
    args = parser.parse_args()
    measured = dict(MEASURED)
    if args.scale_json:
        measured.update(from_scale_json(args.scale_json))
    print("units per file:", json.dumps({k: round(v, 4) for k, v in measured.items()}))
    print("model:", json.dumps(MODEL))
    print(table([int(n) for n in args.files.split(",")], measured))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""BENCHMARKS.md from run_all.py's results: every figure beside its baseline, ratio and target."""

from __future__ import annotations

import math
from typing import Any

from key_heat_report import key_heat_section

DATA_PATH_TARGET = 0.9
DECRYPT_TARGET = 0.8
MEMORY_LIMIT_MIB = 100
MEMORY_GROWTH_LIMIT = 1.10
SEED_WRITES_PER_FILE = 3
SEED_RCU_PER_FILE = 6.0
SEED_WCU_PER_FILE = 3.3
DEFAULT_INTERVAL_S = 300
# us-east-1 list prices assumed for the cost column (check the current price list):
# DynamoDB on-demand $0.625 per million write request units and $0.125 per million read
# request units; SQS standard $0.40 per million requests.
USD_PER_WRU, USD_PER_RRU, USD_PER_SQS = 0.625e-6, 0.125e-6, 0.40e-6


def verdict(met: bool) -> str:
    return "met" if met else "**MISSED**"


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render(results: dict[str, Any]) -> str:
    """The whole file."""
    summary: list[list[Any]] = []
    sections = [
        data_path_section(results, summary),
        memory_section(results, summary),
        capacity_section(results, summary),
        scale_section(results, summary),
        latency_section(results, summary),
        key_heat_section(results, summary),
    ]
    return "\n".join(
        [
            header(results),
            "## Summary\n",
            table(
                ["#", "figure", "measured", "baseline (same run)", "ratio", "target", "verdict"],
                summary,
            ),
            *sections,
            commands_section(results),
        ]
    )


def header(results: dict[str, Any]) -> str:
    m = results["machine"]
    return f"""# Benchmarks

Measured by `{results["invocation"]}` (what `{results.get("make", "make bench")}` runs) on {m["date_utc"]}, in
{results["total_seconds"] / 60:.1f} minutes, on {m["cores"]} cores ({m["cpu"]}),
{m["memory_gib"]} GiB of memory, Python {m["python"]} ({m["platform"]}), boto3 {m["boto3"]},
moto {m["moto"]}, cryptography {m["cryptography"]}; load average at the start
{" / ".join(str(x) for x in m.get("load_average", []))} (1 / 5 / 15 min: other jobs share the machine).

These machines are shared and noisy (2 cores, other jobs running): every figure is set
against a baseline measured in the same run, interleaved where it can be, and absolute
times are for orientation only. Everything runs against the embedded emulator (moto in
server mode, one process, DynamoDB requests serialized on purpose) on the same 2 cores as
the code measured: where the emulator is the bottleneck, the sections say so and show its
own reference figures from the same run. Each script prints its figures and can be run on
its own (commands at the end). `make bench` runs them all and rewrites this file;
`make bench BENCH_ARGS=--fast` leaves out the 1 GiB data path (about 3 minutes).
"""


# ---- 1. data path ------------------------------------------------------------------------------


def data_path_section(results: dict[str, Any], summary: list[list[Any]]) -> str:
    parts = ["## 1. Data path throughput\n"]
    runs = [r for r in results.get("data_path", []) if r]
    rows = [row for r in runs for row in r["data"]["rows"]]
    for row in rows:
        summary.append(
            [
                "1",
                f"data path {row['cipher']} {row['mib']:.0f} MiB",
                f"{row['ours_mib_s_best']} MiB/s",
                f"plain copy {row['copy_mib_s_best']} MiB/s",
                f"{row['ratio_best']:.2f}",
                f">= {DATA_PATH_TARGET}",
                verdict(row["ratio_best"] >= DATA_PATH_TARGET),
            ]
        )
    if len(rows) > 1:
        pooled = math.prod(r["ratio_best"] for r in rows) ** (1 / len(rows))
        summary.append(
            [
                "1",
                f"data path, all {len(rows)} rows pooled (geometric mean of the ratios)",
                "-",
                "-",
                f"{pooled:.2f}",
                f">= {DATA_PATH_TARGET}",
                verdict(pooled >= DATA_PATH_TARGET),
            ]
        )
    if runs:
        tuning = runs[0]["data"]["tuning"]
        parts.append(
            "Download, decrypt, verify (size + SHA-256, GCM tag or CBC padding) and multipart\n"
            "upload through the emulator, by the real code path: `DownloadService.process` on a job\n"
            "written from the stub provider's descriptor (GetItem, claim, HeadObject, streaming GET,\n"
            "decrypt, verify, UploadPart x N, lease fence, CompleteMultipartUpload, complete).\n"
            "Baseline, same run, same process, same emulator, same presigned object: a plain\n"
            f"streaming copy (requests GET in {tuning['chunk_mib']} MiB chunks into an S3 multipart upload,\n"
            f"{tuning['part_mib']} MiB parts, {tuning['in_flight']} in flight, no decryption, no hashing).\n"
            "Runs alternate (copy, ours / ours, copy); the ratio is on the best of each side, the\n"
            "median ratio is shown for the spread.\n"
        )
        parts.append(
            table(
                [
                    "cipher",
                    "MiB",
                    "plain copy MiB/s",
                    "ours MiB/s",
                    "ratio (best)",
                    "ratio (median)",
                    "seconds copy / ours",
                    "client CPU ms/MiB copy / ours",
                    "emulator CPU ms/MiB copy / ours",
                    "target",
                    "verdict",
                ],
                [
                    [
                        r["cipher"],
                        f"{r['mib']:.0f}",
                        r["copy_mib_s_best"],
                        r["ours_mib_s_best"],
                        f"{r['ratio_best']:.2f}",
                        f"{r['ratio_median']:.2f}",
                        f"{r['copy_seconds']} / {r['ours_seconds']}",
                        f"{r['copy_client_cpu_ms_per_mib']} / {r['ours_client_cpu_ms_per_mib']}",
                        f"{r['copy_emulator_cpu_ms_per_mib']} / {r['ours_emulator_cpu_ms_per_mib']}",
                        f">= {DATA_PATH_TARGET}",
                        verdict(r["ratio_best"] >= DATA_PATH_TARGET),
                    ]
                    for r in rows
                ],
            )
        )
        for r in runs:
            parts.append(
                f"`{r['command']}`: emulator (moto) peak RSS {r['data']['emulator_peak_rss_mib']} MiB;"
                f" the stub published the files in {r['data']['rows'][0]['publish_seconds']} s.\n"
            )
    if not any(row["mib"] >= 1024 for row in rows):
        parts.append(
            "1 GiB: not run by this invocation (`make bench` runs it, or\n"
            "`.venv/bin/python bench/data_path.py --sizes 1024 --repeat 2`). A 1 GiB file costs\n"
            "about 15 s per side and per run here, and moto holds several GiB while it serves it.\n"
        )
    if rows:
        low = min(min(r["copy_mib_s_best"], r["ours_mib_s_best"]) for r in rows)
        high = max(max(r["copy_mib_s_best"], r["ours_mib_s_best"]) for r in rows)
        parts.append(
            "Reading: both sides are bound by the emulator, not by dlpipe. moto serves the GET and\n"
            "stores every part in one Python process (one GIL), hashing each part, on the same 2\n"
            "cores as the client; the client's decrypt and SHA-256 run at GiB/s (below), far above\n"
            f"the {low:.0f}-{high:.0f} MiB/s measured through the emulator. That is also why single runs vary\n"
            "by up to 2x (see the seconds column) and why a ratio above 1 is noise, not a faster copy.\n"
        )
        parts.append(data_path_misses(rows))
    parts.append(decrypt_part(results, summary))
    return "\n".join(parts)


def data_path_misses(rows: list[dict[str, Any]]) -> str:
    missed = [r for r in rows if r["ratio_best"] < DATA_PATH_TARGET]
    if not missed:
        return ""
    worst = min(missed, key=lambda r: r["ratio_best"])
    pooled = math.prod(r["ratio_best"] for r in rows) ** (1 / len(rows))
    extra = [r["ours_client_cpu_ms_per_mib"] - r["copy_client_cpu_ms_per_mib"] for r in rows]
    emulator = [r["copy_emulator_cpu_ms_per_mib"] for r in rows]
    return (
        f"Missed in {len(missed)} of {len(rows)} rows, worst {worst['cipher']} {worst['mib']:.0f} MiB at\n"
        f"{worst['ratio_best']:.2f} ({100 * (DATA_PATH_TARGET - worst['ratio_best']) / DATA_PATH_TARGET:.0f}% short of {DATA_PATH_TARGET}). Why: the CPU columns. dlpipe spends"
        f" {min(extra):.1f}-{max(extra):.1f} ms\n"
        "more client CPU per MiB than the copy (SHA-256 of the plaintext, which the design requires,\n"
        "then decryption, then a few DynamoDB calls per file), and the emulator spends"
        f" {min(emulator):.0f}-{max(emulator):.0f} ms\n"
        "per MiB on either side. The two processes share 2 cores with other jobs, so the client's\n"
        "extra CPU is taken from the emulator rather than hidden behind it, and the noise between\n"
        f"runs is as large as the gap (pooled over all {len(rows)} rows the ratio is {pooled:.2f}; the same\n"
        "cipher and size can land on either side of the target from one run to the next). On AWS\n"
        "the storage side is not on the worker's cores: the\n"
        "client CPU per MiB measured here puts dlpipe's own ceiling at"
        f" ~{1000 / max(r['ours_client_cpu_ms_per_mib'] for r in rows):.0f} MiB/s per core\n"
        "(the copy's at"
        f" ~{1000 / max(r['copy_client_cpu_ms_per_mib'] for r in rows):.0f}), above what one S3 stream usually delivers. What would close it\n"
        "here: nothing in the decrypt stage (it is at raw `cryptography` speed, below); hashing in\n"
        "a separate thread would overlap it with the network only on a machine with a free core.\n"
    )


def decrypt_part(results: dict[str, Any], summary: list[list[Any]]) -> str:
    run = results.get("decrypt")
    if not run:
        return "Decrypt stage: the script failed; see the log.\n"
    rows = run["data"]
    for row in rows:
        summary.append(
            [
                "1",
                f"decrypt stage {row['cipher']} {row['chunk_mib']} MiB chunks",
                f"{row['ours']} MiB/s",
                f"raw cryptography {row['raw']} MiB/s",
                f"{row['ratio']:.2f}",
                f">= {DECRYPT_TARGET}",
                verdict(row["ratio"] >= DECRYPT_TARGET),
            ]
        )
    sha = min(r["verified"] for r in rows)
    return (
        "### Decrypt stage alone (bench/decrypt_stage.py)\n\n"
        "Our `StreamDecryptor` (CBC padding hold-back, GCM tag hold-back) against a bare\n"
        "`cryptography` decryptor on the same ciphertext chunks, in memory, best of 5.\n"
        "The worker reads 1 MiB chunks. (b) adds the SHA-256 and size check: hashing, at about\n"
        f"{sha} MiB/s, not decryption, is the data path's real CPU cost.\n\n"
        + table(
            [
                "cipher",
                "chunk",
                "(a) raw MiB/s",
                "(b) ours + SHA-256",
                "b/a",
                "(c) ours",
                "c/a",
                "target c/a",
                "verdict",
            ],
            [
                [
                    r["cipher"],
                    f"{r['chunk_mib']} MiB",
                    r["raw"],
                    r["verified"],
                    f"{r['verified_ratio']:.2f}",
                    r["ours"],
                    f"{r['ratio']:.2f}",
                    f">= {DECRYPT_TARGET}",
                    verdict(r["ratio"] >= DECRYPT_TARGET),
                ]
                for r in rows
            ],
        )
        + f"\n`{run['command']}`\n"
    )


# ---- 2. memory ---------------------------------------------------------------------------------


def memory_section(results: dict[str, Any], summary: list[list[Any]]) -> str:
    runs = results.get("memory", [])
    small, big = [*runs, None, None][:2]
    parts = ["## 2. Worker memory (bench/worker_memory.py)\n"]
    parts.append(
        "A real worker process (`python -m dlpipe.cli.worker`, default tuning) publishes one file per\n"
        "cipher; its RSS and kernel high-water mark (VmHWM) are sampled every 20 ms with psutil and\n"
        "/proc (the emulator is another process and is not counted). Peak = the larger of the two.\n"
    )
    if not (small and big):
        parts.append("One of the runs failed; see the log.\n")
        return "\n".join(parts)
    rows = []
    for s_row, b_row in zip(small["data"], big["data"], strict=False):
        growth = b_row["peak_mib"] / s_row["peak_mib"]
        rows.append(
            [
                b_row["cipher"],
                f"{b_row['idle_mib']:.0f} MiB",
                f"{s_row['peak_mib']:.0f} MiB",
                f"{b_row['peak_mib']:.0f} MiB",
                f"{growth:.2f}",
                verdict(b_row["peak_mib"] <= MEMORY_LIMIT_MIB),
                verdict(growth <= MEMORY_GROWTH_LIMIT),
            ]
        )
        summary.append(
            [
                "2",
                f"worker peak RSS, 1 GiB {b_row['cipher']} file",
                f"{b_row['peak_mib']:.0f} MiB",
                f"100 MiB file: {s_row['peak_mib']:.0f} MiB",
                f"{growth:.2f}",
                f"<= {MEMORY_LIMIT_MIB} MiB; ratio <= {MEMORY_GROWTH_LIMIT}",
                f"{verdict(b_row['peak_mib'] <= MEMORY_LIMIT_MIB)}; {verdict(growth <= MEMORY_GROWTH_LIMIT)}",
            ]
        )
    parts.append(
        table(
            [
                "cipher",
                "idle RSS (started, no message)",
                "peak, 100 MiB file",
                "peak, 1 GiB file",
                "1 GiB / 100 MiB",
                f"<= {MEMORY_LIMIT_MIB} MiB",
                f"growth <= {MEMORY_GROWTH_LIMIT}",
            ],
            rows,
        )
    )
    for run in (small, big):
        parts.append(f"`{run['command']}`\n\n```\n{run['stdout'].strip()}\n```\n")
    worst = max(r["peak_mib"] for r in big["data"])
    idle = max(r["idle_mib"] for r in big["data"])
    if worst > MEMORY_LIMIT_MIB:
        parts.append(
            f"Missed by {worst - MEMORY_LIMIT_MIB:.0f} MiB ({100 * (worst / MEMORY_LIMIT_MIB - 1):.0f}%). Memory does not grow with the\n"
            f"file (the 1 GiB peak is within {MEMORY_GROWTH_LIMIT - 1:.0%} of the 100 MiB one), but {idle:.0f} MiB is spent before the\n"
            "first byte: the interpreter plus boto3/botocore (service models of four clients),\n"
            "cryptography, requests and structlog. The transfer itself adds ~30 MiB: three 8 MiB part\n"
            "buffers (two uploading, one filling), 1-2 MiB chunks and the GCM/CBC hold-back.\n"
            "What would close it (production code, for the lead): 5 MiB parts (S3's minimum) save\n"
            "~9 MiB; `max_in_flight_parts=1` saves one 8 MiB buffer (measured below) at some upload\n"
            "speed; importing the provider client and Secrets Manager lazily and building only the\n"
            "clients a worker uses trims the idle footprint.\n"
        )
    parts.append(one_part_memory(results, big))
    return "\n".join(parts)


def one_part_memory(results: dict[str, Any], big: dict[str, Any]) -> str:
    run = results.get("memory_one_part")
    if not run or not run["data"]:
        return ""
    row = run["data"][0]
    default = next((r for r in big["data"] if r["cipher"] == row["cipher"]), None)
    if default is None:
        return ""
    growth, default_growth = (
        row["peak_mib"] - row["idle_mib"],
        default["peak_mib"] - default["idle_mib"],
    )
    estimate = default["idle_mib"] + growth
    return (
        "With one part in flight instead of two (`TransferTuning(max_in_flight_parts=1)`; this runs\n"
        "in bench/worker_memory.py's own child process, the same Worker and service, which idles\n"
        f"at {row['idle_mib']:.0f} MiB instead of {default['idle_mib']:.0f}), the 1 GiB {row['cipher']} file grows the process by"
        f" {growth:.0f} MiB\n"
        f"against {default_growth:.0f} MiB with two: the real worker would peak near {default['idle_mib']:.0f} + {growth:.0f} ="
        f" {estimate:.0f} MiB\n"
        f"({verdict(estimate <= MEMORY_LIMIT_MIB)} against {MEMORY_LIMIT_MIB} MiB, an estimate).\n\n"
        f"`{run['command']}`\n\n```\n{run['stdout'].strip()}\n```\n"
    )


# ---- 3. requests and capacity ------------------------------------------------------------------


def capacity_section(results: dict[str, Any], summary: list[list[Any]]) -> str:
    day = results.get("batch_day")
    parts = ["## 3. Requests and capacity per file (bench/batch_day.py)\n"]
    if not day or "capacity_run" not in day["data"]:
        parts.append("The run failed or was skipped; see the log.\n")
        return "\n".join(parts)
    data = day["data"]
    cap = data["capacity_run"]
    t, pf = cap["totals"], cap["per_file"]
    files = cap["files"]
    per_poll = pf["per_poll"]
    max_poll_rcu = max((p["job_rcu"] / files for p in per_poll), default=0.0)
    parts.append(
        f"A day of {files} files of {data['file_bytes']} B through the real flow (durable handler under\n"
        "the SDK's local runner, real-time waits: create-batch, fetch-and-queue, check-completion\n"
        f"every {cap['interval_s']} s) and a real Worker with {cap['workers']} receiver threads. The flow's and the\n"
        "workers' boto3 clients are their own; botocore hooks (`before-call.dynamodb`,\n"
        "`before-call.sqs`, `before-call.s3`) count every call, and `after-call` bills DynamoDB\n"
        "calls from the actual items as DynamoDB does (bench/dynamo_cost.py: item size = attribute\n"
        "names + values; reads in 4 KB units, halved when eventually consistent, BatchGetItem per\n"
        "item, Query per 4 KB of the page; writes in 1 KB units of the larger of the item before\n"
        "and after; GSI writes as AWS bills them for projection ALL). The poll interval was set to\n"
        f"~0.7 x the previous run's processing time, so files finish by the second poll: the run\n"
        f"took {cap['polls']} poll(s).\n"
    )
    seed_shape = data["job_item"]["variants"]["units"].get(
        "the seed's three writes, same item and indexes"
    )
    summary += [
        [
            "3",
            "DynamoDB writes per file (job item)",
            f"{t['job_writes']:.2f} + {t['batch_writes']:.3f} batch",
            f"seed {SEED_WRITES_PER_FILE} + amortized batch",
            f"{t['job_writes'] / SEED_WRITES_PER_FILE:.2f}",
            f"<= {SEED_WRITES_PER_FILE} + amortized",
            verdict(t["job_writes"] <= SEED_WRITES_PER_FILE + 1e-9),
        ],
        [
            "3",
            f"completion-check RCU per file, all polls ({cap['polls']})",
            f"{t['completion_job_rcu']:.2f} (+{t['completion_batch_rcu']:.3f} batch item)",
            f"seed {SEED_RCU_PER_FILE} (GetItem per file per poll, 6 polls)",
            f"{t['completion_job_rcu'] / SEED_RCU_PER_FILE:.2f}",
            "<= 1 when done by poll 2",
            verdict(t["completion_job_rcu"] <= 1),
        ],
        [
            "3",
            "completion-check RCU per file, worst poll",
            f"{max_poll_rcu:.2f}",
            "seed 1 (one GetItem per file)",
            f"{max_poll_rcu:.2f}",
            "<= 1",
            verdict(max_poll_rcu <= 1),
        ],
        [
            "3",
            "WCU per file (table + GSI)",
            f"{t['wcu']:.2f} + {t['gsi_wcu']:.2f}",
            f"seed {SEED_WCU_PER_FILE} (1 KB items, GSIs not counted)"
            + (f"; seed's writes on today's item: {seed_shape['total']}" if seed_shape else ""),
            f"{(t['wcu'] + t['gsi_wcu']) / SEED_WCU_PER_FILE:.1f}",
            "reported",
            "-",
        ],
        [
            "3",
            "job item size",
            f"{data['job_item']['bytes']} B = {data['job_item']['wcu_per_write']} WCU/write",
            "1 KB (1 WCU)",
            f"{data['job_item']['bytes'] / 1024:.2f}",
            "reported",
            "-",
        ],
        [
            "3",
            "SQS requests per file",
            f"{t['sqs_requests']:.2f}",
            "-",
            "-",
            "reported",
            "-",
        ],
    ]
    parts.append(
        table(
            ["per file", "measured", "seed design", "target", "verdict"],
            [
                ["DynamoDB requests", f"{t['dynamodb_requests']:.2f}", "-", "-", "-"],
                [
                    "job-table writes",
                    f"{t['job_writes']:.2f}",
                    SEED_WRITES_PER_FILE,
                    f"<= {SEED_WRITES_PER_FILE}",
                    verdict(t["job_writes"] <= SEED_WRITES_PER_FILE + 1e-9),
                ],
                [
                    "batch-table writes (amortized)",
                    f"{t['batch_writes']:.3f}",
                    f"{SEED_WCU_PER_FILE - SEED_WRITES_PER_FILE:.1f}",
                    "amortized",
                    "-",
                ],
                ["RCU, all", f"{t['rcu']:.2f}", f"{SEED_RCU_PER_FILE} (checks only)", "-", "-"],
                [
                    "RCU, completion checks (jobs)",
                    f"{t['completion_job_rcu']:.2f}",
                    SEED_RCU_PER_FILE,
                    "<= 1",
                    verdict(t["completion_job_rcu"] <= 1),
                ],
                [
                    "RCU, completion checks, worst poll",
                    f"{max_poll_rcu:.2f}",
                    1,
                    "<= 1",
                    verdict(max_poll_rcu <= 1),
                ],
                [
                    "WCU, tables",
                    f"{t['wcu']:.2f} (jobs {t['job_wcu']:.2f}, batches {t['batch_wcu']:.2f})",
                    SEED_WCU_PER_FILE,
                    "-",
                    "-",
                ],
                ["WCU, GSIs", f"{t['gsi_wcu']:.2f}", "not counted", "-", "-"],
                ["SQS requests", f"{t['sqs_requests']:.2f}", "-", "-", "-"],
            ],
        )
    )
    parts.append("Requests per file, by step, service, operation and table:\n")
    parts.append(
        table(
            ["step service operation table", "per file"],
            [[k, v] for k, v in pf["requests"].items()],
        )
    )
    parts.append("Capacity units per file, by step, table and kind:\n")
    parts.append(
        table(["step table kind", "per file"], [[k, v] for k, v in pf["capacity"].items()])
    )
    parts.append(
        "Completion checks, poll by poll (BatchIndex: pending jobs read, failed / error / at the\n"
        "end completed counted with Select=COUNT; dlpipe/services/orchestrator/completion.py):\n"
    )
    parts.append(
        table(
            ["poll", "job items read", "RCU", "RCU per file of the batch"],
            [
                [p["poll"], p["job_items_read"], p["job_rcu"], f"{p['job_rcu'] / files:.2f}"]
                for p in per_poll
            ],
        )
    )
    parts.append(item_part(data["job_item"]))
    parts.append(cost_part(t))
    parts.append(short_interval_part(data))
    parts.append(capacity_reading(t, data))
    return "\n".join(parts)


def item_part(item: dict[str, Any]) -> str:
    v = item["variants"]
    top = sorted(item["attribute_bytes"].items(), key=lambda kv: -kv[1])[:8]
    first = ["as measured", "the seed's three writes, same item and indexes"]
    names = first + sorted(n for n in v["units"] if n not in first)
    return (
        f"### The job item\n\nA completed job item is {item['bytes']} B ({item['wcu_per_write']} WCU per write, {item['wcu_per_write']} WCU\n"
        "per GSI entry written, both GSIs projecting ALL); after each of its writes it was\n"
        f"{v['item_bytes_per_write']} B. Largest attributes (name + value, bytes): "
        + ", ".join(f"{n} {b}" for n, b in top)
        + f"; attribute names alone are {item['name_bytes']} B.\n\n"
        "WCU of one job's writes (table + GSI), as measured and as estimates for smaller items\n"
        "(recomputed from the same writes with the item transformed):\n\n"
        + table(
            ["variant", "table WCU", "GSI WCU", "total", "vs measured"],
            [
                [
                    name,
                    u["wcu"],
                    u["gsi_wcu"],
                    u["total"],
                    f"{u['total'] - v['units']['as measured']['total']:+d}",
                ]
                for name, u in ((n, v["units"][n]) for n in names if n in v["units"])
            ],
        )
        + "\nThe local presigned URL is short (http://127.0.0.1, long-term test credentials). A URL\n"
        "signed with temporary credentials carries an X-Amz-Security-Token of roughly 1 KB, which\n"
        "puts every write of the job one or two WCU higher: the estimate row above.\n"
    )


def cost_part(t: dict[str, float]) -> str:
    wru = (t["wcu"] + t["gsi_wcu"]) * 1000
    rru = t["rcu"] * 1000
    sqs = t["sqs_requests"] * 1000
    usd = wru * USD_PER_WRU + rru * USD_PER_RRU + sqs * USD_PER_SQS
    return (
        "### What a 1,000-file day costs (estimate)\n\n"
        f"{wru:,.0f} write request units, {rru:,.0f} read request units, {sqs:,.0f} SQS requests:\n"
        f"about ${usd:.3f} a day at assumed us-east-1 on-demand prices ($0.625 per million WRU,\n"
        "$0.125 per million RRU, $0.40 per million SQS requests; S3 requests and storage not\n"
        "included). GSI writes are {:.0f}% of the write units.\n".format(
            100 * t["gsi_wcu"] / max(t["wcu"] + t["gsi_wcu"], 1e-9)
        )
    )


def short_interval_part(data: dict[str, Any]) -> str:
    rows = [
        [
            r["workers"],
            f"{r['interval_s']} s",
            r["polls"],
            f"{r['totals']['completion_job_rcu']:.2f}",
            f"{r['totals']['batch_writes']:.3f}",
            f"{r['totals']['batch_wcu']:.2f}",
            f"{r['totals']['sqs_requests']:.2f}",
        ]
        for r in data["scale_out"] + data.get("latency_runs", [])
    ]
    return (
        "### The same per-file figures in the other runs\n\n"
        "A file is read once per poll while it is pending, so the completion-check cost per file\n"
        "is 0.5 RCU x the polls that find it pending: it grows when the interval is short next to\n"
        "the day's processing time. The batch item is written once per poll (record_counts): it\n"
        "holds counts at any size, and ExpectedFiles / CompletedFiles / FailedFiles only while the\n"
        "day has at most SETS_MAX_FILES (1,000) files, so it never grows past a fixed size\n"
        "(bench/orchestration_scale.py, tests/reliability/test_scale_day.py).\n"
        "Empty long polls make the SQS count depend on idle time.\n\n"
        + table(
            [
                "workers",
                "interval",
                "polls",
                "completion RCU/file",
                "batch writes/file",
                "batch WCU/file",
                "SQS requests/file",
            ],
            rows,
        )
    )


def capacity_reading(t: dict[str, float], data: dict[str, Any]) -> str:
    extra = t["job_writes"] - SEED_WRITES_PER_FILE
    lines = ["### Reading\n"]
    if extra > 1e-9:
        lines.append(
            f"- Job writes: missed by {extra:.2f} per file ({100 * extra / SEED_WRITES_PER_FILE:.0f}%). The writes are PutItem (create),\n"
            "  claim, a lease renewal right before publishing (`FileRun._attempt` calls\n"
            "  `heartbeat.renew()` as a fence: publish only while the claim provably holds), and\n"
            "  complete. What would close it (production code): skip the fence when the lease\n"
            "  taken at claim (or at the last heartbeat) still has more than the publish step's\n"
            "  budget left by the worker's monotonic clock (always true for files that take\n"
            "  seconds under a 300 s lease); the conditional complete already refuses a lost claim.\n"
            "  The fence also costs a ChangeMessageVisibility (the heartbeat's on_beat).\n"
        )
    lines.append(
        "- GSI writes dominate the write bill: each status change moves the item in both\n"
        "  StatusIndex (Status, StatusUpdatedAt) and BatchIndex (BatchID, Status): a delete and a\n"
        "  put of the whole item in each, because both project ALL. Any other change (the fence's\n"
        "  LeaseExpiresAt) rewrites both entries too. The estimates above show what smaller\n"
        "  items or KEYS_ONLY projections would save; the design fixes the projections, so that\n"
        "  one is the lead's call.\n"
        "- Reads: the worker's consistent GetItem is 1 RCU per file; completion checks read the\n"
        "  pending jobs through BatchIndex (a Query bills per 4 KB of the page, eventually\n"
        f"  consistent: ~{0.5 * data['job_item']['bytes'] / 4096:.2f} RCU per {data['job_item']['bytes']} B item) and count the rest\n"
        "  (Select=COUNT), plus one consistent GetItem of the batch item per poll. The total is\n"
        "  that cost x the polls a file stays pending: bounded per poll, growing with the polls\n"
        "  when a day's files wait through many of them (see the 10 s runs).\n"
        "- SQS per file: one receive (plus empty long polls), a ChangeMessageVisibility when the\n"
        "  heartbeat starts and another at the fence, one delete; the flow sends in batches of 10.\n"
        "  A queue visibility timeout >= lease + margin would make the first unnecessary for\n"
        "  files that finish within it.\n"
    )
    return "\n".join(lines)


# ---- 4. scale-out --------------------------------------------------------------------------


def scale_section(results: dict[str, Any], summary: list[list[Any]]) -> str:
    day = results.get("batch_day")
    parts = ["## 4. Scale-out (bench/batch_day.py)\n"]
    if not day:
        parts.append("The run failed; see the log.\n")
        return "\n".join(parts)
    data = day["data"]
    runs = data["scale_out"]
    ref = data["emulator_reference"]
    base = runs[0]
    for r in runs[1:]:
        summary.append(
            [
                "4",
                f"{r['files']}-file day, {r['workers']} workers vs {base['workers']}",
                f"{r['wall_seconds']} s",
                f"{base['workers']} worker: {base['wall_seconds']} s",
                f"speed-up {r['speedup']:.2f}",
                "reported (emulator-bound)",
                "-",
            ]
        )
    parts.append(
        f"The {base['files']}-file day with N worker threads (one Worker, `--concurrency N`, as `dlpipe\n"
        "worker` runs), each run on a fresh date whose 1,000 messages fill the queue. Wall time:\n"
        "from the workers' start (right after fetch-and-queue returned) to the last CompletedAt.\n"
        "CPU: the emulators' (moto; DynamoDB Local, its own process) and this process's CPU seconds\n"
        "over that span (100% = one core).\n\n"
        + table(
            [
                "workers",
                "wall s",
                "files/s",
                "speed-up",
                "worker DynamoDB ops/s",
                "moto CPU",
                "DynamoDB Local CPU",
                "client CPU",
                "queueing s (fetch-and-queue)",
            ],
            [
                [
                    r["workers"],
                    r["wall_seconds"],
                    r["files_per_s"],
                    f"{r['speedup']:.2f}",
                    r["dynamodb_ops_per_s"],
                    f"{r['emulator_cpu_pct']:.0f}%",
                    f"{r.get('dynamodb_local_cpu_pct', float('nan')):.0f}%",
                    f"{r['client_cpu_pct']:.0f}%",
                    r["queue_seconds"],
                ]
                for r in runs
            ],
        )
    )
    deep = next(
        (v for k, v in ref.items() if k.startswith("sqs_receive_delete_ms_depth_1000")), None
    )
    shallow = next(
        (v for k, v in ref.items() if k.startswith("sqs_receive_delete_ms_depth_40")), None
    )
    parts.append(
        "Reference, same emulator, same run: DynamoDB GetItem "
        f"{ref['dynamodb_getitem_ops_s_1_thread']} ops/s from 1 thread and {ref['dynamodb_getitem_ops_s_8_threads']} ops/s from 8\n"
        f"(serialized by the emulator on purpose); one SQS ReceiveMessage + DeleteMessage takes\n"
        f"{shallow} ms with 40 messages queued and {deep} ms with 1,000 (moto scans the whole queue).\n"
    )
    parts.append(
        "Mean client-side milliseconds per call (emulator time and queueing included):\n\n"
        + table(
            ["operation", *[f"{r['workers']} worker(s)" for r in runs]],
            [
                [op, *[r["op_latency_ms"].get(op, "-") for r in runs]]
                for op in sorted({op for r in runs for op in r["op_latency_ms"]})
            ],
        )
    )
    parts.append(budget_part(runs[0]))
    best = max(runs, key=lambda r: r["files_per_s"])
    one = runs[0]["op_latency_ms"]
    receive, delete = one.get("sqs ReceiveMessage", 0), one.get("sqs DeleteMessage", 0)
    parts.append(
        "Reading: the emulator is the bottleneck, not the workers. Its CPU is close to one full core\n"
        f"(it is one Python process: {best['emulator_cpu_pct']:.0f}% with {best['workers']} worker thread(s)) while this process uses about a\n"
        f"fifth of one; more threads only queue behind the emulator (every call's mean time grows with\n"
        "the thread count, above). The workers' DynamoDB rate"
        f" ({best['dynamodb_ops_per_s']:.0f} ops/s at best) is far under the\n"
        "emulator's GetItem ceiling, so the serialized DynamoDB is not the limit; moto's SQS is:\n"
        f"ReceiveMessage scans the whole queue, {receive} ms per call with one worker against {delete} ms\n"
        f"for a DeleteMessage, and the reference pair costs {deep} ms on a 1,000-message queue\n"
        f"against {shallow} ms on a short one. On AWS none of these limits exist (SQS and DynamoDB\n"
        "scale out), so this figure says the workers saturate the emulator from one thread on,\n"
        "not how far they would scale.\n"
    )
    return "\n".join(parts)


FLOW_ONLY_OPS = frozenset(
    {"dynamodb BatchGetItem", "dynamodb PutItem", "dynamodb Query", "sqs SendMessageBatch"}
)


def budget_part(run: dict[str, Any]) -> str:
    """Where one worker thread's time per file goes, from the calls it made."""
    requests = run.get("worker_requests_per_op") or {
        op: n for op, n in run.get("requests_per_op", {}).items() if op not in FLOW_ONLY_OPS
    }
    rows, total = [], 0.0
    for op, count in sorted(requests.items()):
        ms = run["op_latency_ms"].get(op)
        if not count or ms is None:
            continue
        total += count * ms
        rows.append([op, f"{count:.2f}", ms, f"{count * ms:.1f}"])
    if not rows:
        return ""
    wall_ms = 1000 * run["wall_seconds"] / run["files"]
    receive = next((r for r in rows if r[0] == "sqs ReceiveMessage"), None)
    share = (
        f" ReceiveMessage alone is {float(receive[3]) / wall_ms:.0%} of the wall time."
        if receive
        else ""
    )
    return (
        f"Where the time of {run['workers']} worker thread goes, per file (the worker's calls per file x their mean ms):\n\n"
        + table(["operation", "calls per file", "mean ms", "ms per file"], rows)
        + f"\n{total:.0f} ms of calls per file against {wall_ms:.0f} ms of wall time per file (the rest: the\n"
        f"presigned GET, made with requests rather than botocore, and the client's own work).{share}\n"
    )


# ---- 5. latency ----------------------------------------------------------------------------


def latency_section(results: dict[str, Any], summary: list[list[Any]]) -> str:
    day = results.get("batch_day")
    parts = ["## 5. Batch latency (bench/batch_day.py)\n"]
    if not day:
        parts.append("The run failed; see the log.\n")
        return "\n".join(parts)
    data = day["data"]
    runs = data.get("latency_runs", []) + data["scale_out"]
    check_max = max(r["check_seconds_max"] for r in runs)
    for r in data.get("latency_runs", []):
        summary.append(
            [
                "5",
                f"batch latency, poll every {r['interval_s']} s ({r['files']} files)",
                f"{r['latency_seconds']} s",
                f"interval {r['interval_s']} s",
                f"{r['latency_seconds'] / r['interval_s']:.2f}",
                "<= interval + one check",
                verdict(r["latency_seconds"] <= r["interval_s"] + r["check_seconds_max"] + 0.5),
            ]
        )
    summary.append(
        [
            "5",
            f"batch latency, default poll every {DEFAULT_INTERVAL_S} s",
            f"mean {DEFAULT_INTERVAL_S / 2:.0f} s, worst {DEFAULT_INTERVAL_S + check_max:.0f} s (computed)",
            "-",
            "-",
            "<= interval + one check",
            "met (by construction)",
        ]
    )
    parts.append(
        "Latency = the batch's UpdatedAt when it turned `completed` minus the largest CompletedAt\n"
        "of its files (both ISO 8601 with milliseconds, written by the same clock). The waits are\n"
        "real: the durable handler under the SDK's local runner with skip_time=False.\n\n"
        + table(
            ["files", "workers", "poll interval", "polls", "latency s", "longest check s"],
            [
                [
                    r["files"],
                    r["workers"],
                    f"{r['interval_s']} s",
                    r["polls"],
                    r["latency_seconds"],
                    r["check_seconds_max"],
                ]
                for r in runs
            ],
        )
        + f"\nWith the default {DEFAULT_INTERVAL_S} s interval the latency is computed, not measured (a measured\n"
        "run would take 10 minutes for one sample): the last file completes at a time uncorrelated\n"
        "with the poll schedule, so the next check comes after a wait uniform in\n"
        f"[0, {DEFAULT_INTERVAL_S}] s, mean {DEFAULT_INTERVAL_S / 2:.0f} s, plus the check itself (at most {check_max:.2f} s here for\n"
        f"{data['files']} files). The short-interval runs above confirm the model: every latency is below\n"
        "its interval plus one check.\n"
    )
    return "\n".join(parts)


def commands_section(results: dict[str, Any]) -> str:
    return (
        "## Commands\n\n"
        + table(
            ["step", "command", "seconds", "exit"],
            [[s["name"], f"`{s['command']}`", s["seconds"], s["exit"]] for s in results["steps"]],
        )
        + (
            "\nKnobs: `data_path.py --sizes 100,256,1024 --repeat N --ciphers ...`;"
            " `worker_memory.py --mib N --in-flight 1,2`; `batch_day.py --files N --workers 1,2,4,8"
            " --interval S --latency-intervals 1,2 --latency-files N`; `decrypt_stage.py --mib N --repeat N`;"
            " `key_heat.py --files N --feeds N --feed-files N`.\n"
        )
    )

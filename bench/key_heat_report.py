"""BENCHMARKS.md's key-heat section, from bench/key_heat.py's figures (run_all.py's results)."""

from __future__ import annotations

from typing import Any

AWS_PARTITION_WCU = 1000


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def key_heat_section(results: dict[str, Any], summary: list[list[Any]]) -> str:
    """Section 6: WCU per file by table and index, the hottest key and the ceiling it sets."""
    step = results.get("key_heat")
    parts = ["## 6. Key heat: DynamoDB writes per partition key (bench/key_heat.py)\n"]
    if not step:
        parts.append("The run failed or was left out; see the log.\n")
        return "\n".join(parts)
    parts.append(
        "A real local day behind the throughput proxy (`dlpipe/local/ddb_throughput.py`) at\n"
        "AWS's per-partition limits: every write the code made, charged by DynamoDB's rules to\n"
        "the partition key values of the table and each index it touched. A key's WCU per file\n"
        "is its WCU over all the run's files; the ceiling is 1,000 WCU / the hottest key's.\n"
    )
    runs = [("one feed", step["data"]["one_feed"])]
    if "many_feeds" in step["data"]:
        runs.append(
            (f"{step['data']['many_feeds']['feeds']} feeds at once", step["data"]["many_feeds"])
        )
    resources = sorted({r for _, run in runs for r in run["wcu_per_file"]})
    parts.append(
        _table(
            ["WCU per file", *[f"{name} ({run['files']} files)" for name, run in runs]],
            [[r, *[run["wcu_per_file"].get(r, 0) for _, run in runs]] for r in resources],
        )
    )
    rows = []
    for name, run in runs:
        hot = run["hottest"]
        rows.append(
            [
                name,
                f"`{hot['resource']}` = `{hot['key']}`",
                hot["wcu_per_file"],
                f"{run['ceiling_files_per_s']} files/s",
                run["throttled"],
            ]
        )
        summary.append(
            [
                "6",
                f"hottest key's WCU per file ({name})",
                hot["wcu_per_file"],
                "—",
                "—",
                f"ceiling {run['ceiling_files_per_s']} files/s",
                "—",
            ]
        )
    parts.append(
        _table(["run", "hottest per-file key", "its WCU per file", "ceiling", "refused"], rows)
    )
    polled = [(name, run["poll_key"]) for name, run in runs if run.get("poll_key")]
    if polled:
        parts.append(
            "\nThe batches table's keys (the batch item, the date's PollingDateIndex entry) are\n"
            "written once a poll of each batch, not once a file: their ceiling is in batches\n"
            "polling at once at the deployed poll interval.\n"
        )
        parts.append(
            _table(
                ["run", "hottest per-poll key", "WCU (writes)", "ceiling at the interval"],
                [
                    [
                        name,
                        f"`{p['resource']}` = `{p['key']}`",
                        f"{p['wcu']:g} ({p['writes']})",
                        f"{p['ceiling_batches_polling']:,} batches ({p['poll_interval_s']} s)",
                    ]
                    for name, p in polled
                ],
            )
        )
    parts.append(f"\n`{step['command']}`\n")
    return "\n".join(parts)

"""The day manifest of a large day, measured after bench/orchestration_scale.py's orchestration.

The orchestration's stand-in workers complete jobs whose objects were never stored, and the
manifest lists only objects it finds (a HEAD each). So, once the day is done, this process
stores an empty object (with its SHA-256 metadata, as a worker publishes) at each completed
job's key, outside any measured phase; then a child process runs the real write-manifest
step (dlpipe/services/orchestrator/manifest.py on S3ManifestStore) and reports its wall
time, its VmHWM growth over its RSS after setup, its requests and the RCU its BatchIndex
pages consumed (ReturnConsumedCapacity, per file), and the sizes of the manifest and of the
two file lists written beside it (the JSON Lines list, the COPY manifest; HEADed after the
measured step).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

PUT_THREADS = 8


def store_objects(clients: Any, settings: Any, batch_id: str, sha256: str) -> int:
    """An empty object at every completed job's key of `batch_id`; how many."""
    from dlpipe.adapters.jobs_table import JobsTable  # noqa: PLC0415
    from dlpipe.domain.clock import SystemClock  # noqa: PLC0415
    from dlpipe.domain.model import JobStatus  # noqa: PLC0415

    jobs = JobsTable(clients.dynamodb, settings.jobs_table, SystemClock())
    keys = [j.destination_key for j in jobs.query_by_batch(batch_id, JobStatus.COMPLETED)]

    def put(key: str | None) -> None:
        assert key is not None
        clients.s3.put_object(
            Bucket=settings.destination_bucket, Key=key, Body=b"", Metadata={"sha256": sha256}
        )

    with ThreadPoolExecutor(PUT_THREADS) as pool:
        list(pool.map(put, keys))
    return len(keys)


def child_manifest(cfg: dict[str, Any], meter_class: Any, status_kib: Any, mark: Any) -> None:
    """Write the batch's manifest through the real step, metered (run in its own process)."""
    import uuid  # noqa: PLC0415

    from dlpipe.adapters.aws import AwsClients  # noqa: PLC0415
    from dlpipe.adapters.batches_table import BatchesTable  # noqa: PLC0415
    from dlpipe.adapters.jobs_table import JobsTable  # noqa: PLC0415
    from dlpipe.adapters.manifest_store import S3ManifestStore  # noqa: PLC0415
    from dlpipe.config import Settings  # noqa: PLC0415
    from dlpipe.domain.clock import SystemClock  # noqa: PLC0415
    from dlpipe.services.orchestrator.flow import BatchFlowService  # noqa: PLC0415

    clients = AwsClients(Settings.from_env())
    meter = meter_class("manifest", "manifest")
    meter.attach(clients.dynamodb)
    meter.attach(clients.s3)
    flow = BatchFlowService(
        jobs=JobsTable(clients.dynamodb, cfg["jobs_table"], SystemClock()),
        batches=BatchesTable(clients.dynamodb, cfg["batches_table"], SystemClock()),
        provider=None,  # type: ignore[arg-type]  # write-manifest lists nothing
        queue=None,  # type: ignore[arg-type]
        clock=SystemClock(),
        new_uuid=lambda: str(uuid.uuid4()),
        manifests=S3ManifestStore(clients.s3, cfg["bucket"]),
    )
    rss_kib = status_kib("VmRSS")
    mark("manifest")
    started = time.monotonic()
    ref = flow.write_manifest(cfg["batch_id"])
    wall_s = round(time.monotonic() - started, 2)
    hwm_kib = status_kib("VmHWM")
    lists = {}
    for name in ("file_list_key", "copy_key"):
        if ref and ref.get(name):
            head = clients.s3.head_object(Bucket=cfg["bucket"], Key=ref[name])
            lists[name] = head["ContentLength"]
    mark(
        "end", ref=ref, wall_s=wall_s, rss_kib=rss_kib, hwm_kib=hwm_kib, meter=meter.to_json(),
        lists=lists,
    )  # fmt: skip


def figures(files: int, last: dict[str, Any]) -> dict[str, Any]:
    """The manifest's row: time, memory growth, RCU and requests per file, size."""
    phase = last["meter"].get("manifest", {"requests": {}, "capacity": {}})
    requests = phase["requests"]
    return {
        "wall_s": last["wall_s"],
        "hwm_growth_mib": round((last["hwm_kib"] - last["rss_kib"]) / 1024, 1),
        "rcu_per_file": round(phase["capacity"].get("RCU", 0.0) / files, 4),
        "dynamodb_queries": requests.get("dynamodb Query", 0),
        "s3_head_per_file": round(requests.get("s3 HeadObject", 0) / files, 3),
        "s3_writes": sum(
            n for k, n in requests.items() if k.split(" ")[1] in _S3_WRITES and "s3" in k
        ),
        "entries": (last["ref"] or {}).get("entries"),
        "manifest_mib": round((last["ref"] or {}).get("size", 0) / 1024 / 1024, 2),
        **{
            f"{name.removesuffix('_key')}_mib": round(size / 1024 / 1024, 2)
            for name, size in last.get("lists", {}).items()
        },
    }


_S3_WRITES = frozenset(
    {"PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"}
)

"""Data-path throughput: the real download path against a plain streaming copy of the same bytes.

    python bench/data_path.py [--sizes 100,256] [--ciphers AES-256-CBC,AES-256-GCM] [--repeat 2]

Both sides run in this process against the same emulator, in the same run, interleaved:
(a) plain copy: a requests streaming GET of the stub's presigned URL in 1 MiB chunks into
    an S3 multipart upload with the same part size (8 MiB) and the same number of parts in
    flight (2), no decryption, no hashing; (b) ours: DownloadService.process on a job written
    from the stub provider's descriptor, i.e. GetItem, claim, HeadObject, streaming GET,
    decrypt, SHA-256 and size check, multipart upload, lease fence, complete. The emulator's
    own peak RSS is sampled too (moto keeps objects in memory and temp files).
Target: (b) >= 0.9 x (a), on the best of `--repeat` runs each.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import psutil
import requests
from common import MIB, RssSampler, machine, quiet_logs, verdict, write_json

from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.provider_client import ProviderClient
from dlpipe.bootstrap.download import build_service
from dlpipe.domain.cipher_format import SUPPORTED_CIPHERS
from dlpipe.domain.listing import FileDescriptor
from dlpipe.domain.model import make_batch_id
from dlpipe.local.stack import LocalStack, local_stack
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.download.service import DownloadService, Outcome
from dlpipe.services.download.transfer import TransferTuning
from dlpipe.services.orchestrator.jobs_from_listing import job_from_descriptor

DAY = "2026-02-28"
TARGET = 0.9
WARM_MIB = 8
TUNING = TransferTuning()  # the worker's defaults: 1 MiB chunks, 8 MiB parts, 2 in flight


def plain_copy(s3: Any, url: str, bucket: str, key: str) -> int:
    """Stream `url` into s3://bucket/key by multipart upload, as a careful plain copy would:
    each chunk copied once into a preallocated part buffer, buffers reused after upload."""
    part_bytes, in_flight_max = TUNING.part_bytes, TUNING.max_in_flight_parts
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    in_flight: deque[tuple[Future[str], bytearray]] = deque()
    spare: list[bytearray] = []
    etags: list[str] = []

    def upload(number: int, body: bytes | bytearray) -> str:
        return str(
            s3.upload_part(
                Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body
            )["ETag"]
        )

    def collect() -> None:
        future, done = in_flight.popleft()
        etags.append(future.result())
        spare.append(done)

    with ThreadPoolExecutor(in_flight_max) as pool:

        def send(buffer: bytearray, filled: int) -> None:
            while len(in_flight) >= in_flight_max:
                collect()
            body = buffer if filled == part_bytes else bytes(buffer[:filled])
            number = len(etags) + len(in_flight) + 1
            in_flight.append((pool.submit(upload, number, body), buffer))

        buffer, filled, total = bytearray(part_bytes), 0, 0
        with requests.Session() as http, http.get(url, stream=True, timeout=(5, 60)) as response:
            response.raise_for_status()
            for chunk in response.iter_content(chunk_size=TUNING.chunk_bytes):
                view = memoryview(chunk)
                total += len(view)
                while view:
                    take = min(len(view), part_bytes - filled)
                    buffer[filled : filled + take] = view[:take]
                    filled, view = filled + take, view[take:]
                    if filled == part_bytes:
                        send(buffer, filled)
                        buffer, filled = (spare.pop() if spare else bytearray(part_bytes)), 0
        if filled:
            send(buffer, filled)
        while in_flight:
            collect()
    parts: Any = [{"PartNumber": n, "ETag": tag} for n, tag in enumerate(etags, 1)]
    s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
    )
    return total


class Bench:
    """One stack, one stub, one service; runs either side on a fresh URL and a fresh job."""

    def __init__(self, stack: LocalStack, stub: StubProvider) -> None:
        self.stack, self.stub = stack, stub
        self.bucket = stack.settings.require("destination_bucket")
        self.jobs = JobsTable(stack.clients.dynamodb, stack.settings.jobs_table)
        self.provider = ProviderClient(
            stub.base_url, stack.provider_token, allow_http=True, allow_private=True
        )
        settings = replace(stack.settings, provider_base_url=stub.base_url)
        self.service: DownloadService = build_service(settings, stack.clients, tuning=TUNING)
        assert stack.emulator.pid is not None
        self.processes = {
            "client": psutil.Process(),
            "emulator": psutil.Process(stack.emulator.pid),
        }

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds so far of this process and of the emulator."""
        return {name: sum(p.cpu_times()[:2]) for name, p in self.processes.items()}

    def descriptor(self, entity: str) -> FileDescriptor:
        return self.provider.get_file(entity, DAY)

    def copy(self, entity: str) -> tuple[float, int]:
        url = self.descriptor(entity).url
        key = f"bench-copy/{entity}"
        started = time.perf_counter()
        size = plain_copy(self.stack.clients.s3, url, self.bucket, key)
        seconds = time.perf_counter() - started
        self.stack.clients.s3.delete_object(Bucket=self.bucket, Key=key)
        return seconds, size

    def ours(self, entity: str) -> tuple[float, int]:
        descriptor = self.descriptor(entity)
        batch_id = make_batch_id(DAY, str(uuid.uuid4()))
        job = job_from_descriptor(descriptor, batch_id, int(time.time() * 1000))
        self.stack.clients.dynamodb.delete_item(
            TableName=self.jobs.table_name, Key={"FileID": {"S": job.file_id}}
        )
        self.jobs.create(job)
        started = time.perf_counter()
        result = self.service.process(job.file_id)
        seconds = time.perf_counter() - started
        if result.outcome is not Outcome.COMPLETED:
            raise RuntimeError(f"{job.file_id}: {result.outcome}")
        done = self.jobs.require(job.file_id)
        if done.sha256 != descriptor.sha256 or done.destination_key is None:
            raise RuntimeError(f"{job.file_id}: published object does not match")
        # Otherwise the next run would find it published already and skip the transfer.
        self.stack.clients.s3.delete_object(Bucket=self.bucket, Key=done.destination_key)
        return seconds, int(done.byte_count or 0)


def measure(bench: Bench, entity: str, repeat: int) -> dict[str, Any]:
    """Interleaved runs of both sides; MiB/s best and median, the ratios, and CPU per MiB."""
    times: dict[str, list[float]] = {"copy": [], "ours": []}
    cpu = {side: dict.fromkeys(("client", "emulator"), 0.0) for side in times}
    size = 0
    for n in range(repeat):
        order = ("copy", "ours") if n % 2 == 0 else ("ours", "copy")
        for side in order:
            before = bench.cpu_seconds()
            seconds, size = getattr(bench, side)(entity)
            after = bench.cpu_seconds()
            times[side].append(seconds)
            for name in before:
                cpu[side][name] += after[name] - before[name]
    mib = size / MIB
    cpu_ms_per_mib = {
        f"{side}_{name}_cpu_ms_per_mib": round(1000 * v / (mib * repeat), 2)
        for side, by_name in cpu.items()
        for name, v in by_name.items()
    }

    def rate(side: str, pick: Any) -> float:
        return mib / pick(times[side])

    best_copy, best_ours = rate("copy", min), rate("ours", min)
    median_copy, median_ours = rate("copy", statistics.median), rate("ours", statistics.median)
    return {
        "mib": round(mib, 1),
        "runs": repeat,
        "copy_mib_s_best": round(best_copy, 1),
        "ours_mib_s_best": round(best_ours, 1),
        "ratio_best": round(best_ours / best_copy, 3),
        "copy_mib_s_median": round(median_copy, 1),
        "ours_mib_s_median": round(median_ours, 1),
        "ratio_median": round(median_ours / median_copy, 3),
        "copy_seconds": [round(t, 2) for t in times["copy"]],
        "ours_seconds": [round(t, 2) for t in times["ours"]],
        **cpu_ms_per_mib,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,256", help="plaintext MiB, comma-separated")
    parser.add_argument("--ciphers", default=",".join(SUPPORTED_CIPHERS))
    parser.add_argument("--repeat", type=int, default=2, help="runs per side (best is kept)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    quiet_logs()
    sizes = [int(s) for s in args.sizes.split(",")]
    ciphers = args.ciphers.split(",")
    info = machine()
    print(f"data path: {info['cores']} cores, python {info['python']}, moto {info['moto']}")
    print(f"sizes {sizes} MiB, ciphers {ciphers}, best of {args.repeat}, interleaved")
    rows: list[dict[str, Any]] = []
    with local_stack() as stack:
        assert stack.emulator.pid is not None
        emulator_rss = RssSampler(stack.emulator.pid, interval_s=0.1)
        header = f"{'cipher':<12} {'MiB':>5} {'copy MiB/s':>11} {'ours MiB/s':>11} {'ratio':>6}"
        print(f"{header} {'(median)':>9}  target >= {TARGET}")
        for size in sizes:
            specs = [
                StubFileSpec(f"dp{size}m{n}", size * MIB, cipher)
                for n, cipher in enumerate(ciphers)
            ]
            warm = StubFileSpec(f"warm{size}", WARM_MIB * MIB, ciphers[0])
            with StubProvider(
                stack.clients, stack.public_key_pem, stack.provider_token, [*specs, warm]
            ) as stub:
                started = time.monotonic()
                stub.publish(DAY)
                publish_s = time.monotonic() - started
                bench = Bench(stack, stub)
                bench.copy(warm.entity)  # untimed: connections, imports, first-call costs
                bench.ours(warm.entity)
                for spec in specs:
                    row = {"cipher": spec.cipher, **measure(bench, spec.entity, args.repeat)}
                    row["publish_seconds"] = round(publish_s, 1)
                    row["met"] = row["ratio_best"] >= TARGET
                    rows.append(row)
                    print(
                        f"{spec.cipher:<12} {size:>5} {row['copy_mib_s_best']:>11.1f}"
                        f" {row['ours_mib_s_best']:>11.1f} {row['ratio_best']:>6.2f}"
                        f" {row['ratio_median']:>9.2f}  {verdict(row['met'])}"
                    )
                with contextlib.suppress(Exception):
                    stub.purge()
        emulator_peak = emulator_rss.stop()
    for row in rows:
        print(
            f"{row['cipher']} {row['mib']:.0f} MiB, CPU ms per MiB: client copy"
            f" {row['copy_client_cpu_ms_per_mib']} / ours {row['ours_client_cpu_ms_per_mib']},"
            f" emulator copy {row['copy_emulator_cpu_ms_per_mib']} / ours"
            f" {row['ours_emulator_cpu_ms_per_mib']}"
        )
    print(f"emulator (moto) peak RSS during the run: {emulator_peak / MIB:.0f} MiB")
    worst = min(r["ratio_best"] for r in rows)
    print(f"target: ours >= {TARGET} x plain copy: {verdict(worst >= TARGET)} (worst {worst:.2f})")
    write_json(
        args.json,
        {
            "rows": rows,
            "target": TARGET,
            "emulator_peak_rss_mib": round(emulator_peak / MIB),
            "tuning": {
                "chunk_mib": TUNING.chunk_bytes // MIB,
                "part_mib": TUNING.part_bytes // MIB,
                "in_flight": TUNING.max_in_flight_parts,
            },
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

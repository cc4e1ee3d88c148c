"""Peak memory and throughput of a real worker process downloading one large file.

    python bench/worker_memory.py [--mib 200] [--ciphers AES-256-CBC,AES-256-GCM]
                                  [--in-flight 2] [--repeat 1]

Starts the embedded emulator and the stub provider (a real HTTP server, really encrypted
files in the emulator's S3), queues one file per cipher, and runs a worker process for
each: `python -m dlpipe.cli.worker` (the `dlpipe worker` command) for the default tuning, or
this script's `child` mode for other `--in-flight` values (the same Worker and service,
another TransferTuning). Memory: the child's RSS (psutil) and its kernel high-water mark
(VmHWM, /proc/<pid>/status), sampled every 20 ms while it runs. (Not ru_maxrss from wait4:
on this kernel it reported ~190 MiB for a process whose VmHWM never passed ~105 MiB.)
Throughput is the worker's own `job.completed` figure, claim to completion: GET, decrypt,
verify, multipart upload. The published object's SHA-256 is checked against the stub's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.provider_client import ProviderClient
from dlpipe.config import Settings
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import make_batch_id
from dlpipe.local.emulator import LocalAws
from dlpipe.local.provision import Provisioned, provision
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.download.transfer import TransferTuning
from dlpipe.services.orchestrator.jobs_from_listing import job_from_descriptor

MIB = 1024 * 1024
DAY = "2026-02-28"
TOKEN = "bench-token"
DEFAULT_IN_FLIGHT = TransferTuning().max_in_flight_parts  # what `dlpipe worker` runs with


@dataclass(frozen=True)
class Figures:
    """One run's measurements."""

    cipher: str
    in_flight: int
    baseline_mib: float
    peak_mib: float
    hwm_mib: float
    cpu_s: float  # the whole worker process: startup, polling and the transfer
    seconds: float
    mib_s: float
    sha_ok: bool


class RssSampler:
    """Samples a process's RSS and VmHWM every 20 ms in a thread; keeps the peaks."""

    def __init__(self, pid: int) -> None:
        self._process, self.peak_rss, self.hwm = psutil.Process(pid), 0, 0
        self._status = Path(f"/proc/{pid}/status")
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.02):
            try:
                self.peak_rss = max(self.peak_rss, self._process.memory_info().rss)
                self.hwm = max(self.hwm, _vm_hwm(self._status))
            except (psutil.Error, OSError):
                return

    def stop(self) -> tuple[int, int]:
        """(peak RSS, last VmHWM) in bytes."""
        self._done.set()
        self._thread.join()
        return self.peak_rss, self.hwm


def _vm_hwm(status: Path) -> int:
    for line in status.read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def worker_command(in_flight: int) -> list[str]:
    base = ["--concurrency", "1", "--wait-seconds", "1", "--exit-when-idle", "2"]
    if in_flight == DEFAULT_IN_FLIGHT:
        return [sys.executable, "-m", "dlpipe.cli.worker", *base]
    return [sys.executable, __file__, "child", "--in-flight", str(in_flight), *base]


def run_worker(
    env: dict[str, str], in_flight: int, send: Any, log_path: Path
) -> tuple[int, int, int, float]:
    """Start a worker, measure idle RSS, send the message: idle RSS, peak RSS, VmHWM, CPU s."""
    with log_path.open("wb") as log:
        child = subprocess.Popen(worker_command(in_flight), env=env, stderr=log)
    try:
        while b"worker.started" not in log_path.read_bytes():
            time.sleep(0.05)
        baseline = psutil.Process(child.pid).memory_info().rss
        sampler = RssSampler(child.pid)
        send()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise RuntimeError(f"worker exited {child.returncode}; see {log_path}")
        peak_rss, hwm = sampler.stop()
        return baseline, peak_rss, hwm, usage.ru_utime + usage.ru_stime
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def completed_event(log_path: Path) -> dict[str, Any]:
    for line in log_path.read_text().splitlines():
        if line.startswith("{") and json.loads(line)["event"] == "job.completed":
            return dict(json.loads(line))
    raise RuntimeError(f"no job.completed in {log_path}")


@dataclass(frozen=True)
class Run:
    """One worker process on one queued file."""

    clients: AwsClients
    provisioned: Provisioned
    stub: StubProvider
    env: dict[str, str]
    workdir: Path

    def measure(self, cipher: str, entity: str, in_flight: int) -> Figures:
        """Queue the file, run a worker on it, check the published object."""
        clients, bucket = self.clients, str(self.provisioned.destination_bucket)
        jobs = JobsTable(clients.dynamodb, self.provisioned.jobs_table)
        descriptor = ProviderClient(
            self.stub.base_url, TOKEN, allow_http=True, allow_private=True
        ).get_file(entity, DAY)
        batch_id = make_batch_id(DAY, str(uuid.uuid4()))
        job = job_from_descriptor(descriptor, batch_id, int(time.time() * 1000))
        jobs.create(job)
        queue = clients.sqs.create_queue(QueueName=f"bench-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        body = encode_message(JobMessage(job.file_id, batch_id))
        log_path = self.workdir / f"{entity}-{in_flight}-{uuid.uuid4().hex[:6]}.log"
        try:
            idle, peak, hwm, cpu_s = run_worker(
                {**self.env, "DLPIPE_QUEUE_URL": queue},
                in_flight,
                lambda: clients.sqs.send_message(QueueUrl=queue, MessageBody=body),
                log_path,
            )
        finally:
            clients.sqs.delete_queue(QueueUrl=queue)
        done = completed_event(log_path)
        key = str(done["destination_key"])
        sha_ok = _object_sha256(clients, bucket, key) == descriptor.sha256
        clients.s3.delete_object(Bucket=bucket, Key=key)
        mib = 1 / MIB
        return Figures(
            cipher, in_flight, idle * mib, peak * mib, hwm * mib, cpu_s,
            done["seconds"], done["mib_s"], sha_ok,
        )  # fmt: skip


def _object_sha256(clients: AwsClients, bucket: str, key: str) -> str:
    digest = hashlib.sha256()
    for chunk in clients.s3.get_object(Bucket=bucket, Key=key)["Body"].iter_chunks(MIB):
        digest.update(chunk)
    return digest.hexdigest()


HEADER = (
    f"{'cipher':<12} {'in-flight':>9} {'idle RSS':>9} {'peak RSS':>9} {'VmHWM':>7}"
    f" {'growth':>7} {'seconds':>8} {'MiB/s':>6} {'CPU s':>6} sha256"
)


def row(f: Figures) -> str:
    """One result line under HEADER."""
    return (
        f"{f.cipher:<12} {f.in_flight:>9} {f.baseline_mib:>8.0f}M {f.peak_mib:>8.0f}M"
        f" {f.hwm_mib:>6.0f}M {f.hwm_mib - f.baseline_mib:>6.0f}M {f.seconds:>8.1f}"
        f" {f.mib_s:>6.0f} {f.cpu_s:>6.1f} {'ok' if f.sha_ok else 'MISMATCH'}"
    )


def worker_environment(
    aws: dict[str, str], provisioned: Provisioned, stub: StubProvider, key_file: Path
) -> dict[str, str]:
    """What a worker process needs, but the queue URL."""
    return {
        **os.environ,
        **aws,
        "DLPIPE_JOBS_TABLE": provisioned.jobs_table,
        "DLPIPE_DEST_BUCKET": str(provisioned.destination_bucket),
        "DLPIPE_PRIVATE_KEY_FILE": str(key_file),
        "DLPIPE_PROVIDER_URL": stub.base_url,
        "DLPIPE_PROVIDER_TOKEN": TOKEN,
    }


def bench(args: argparse.Namespace) -> int:
    """Publish one file per cipher, then measure a worker on each, `repeat` times per setting."""
    ciphers, in_flights = args.ciphers.split(","), [int(n) for n in args.in_flight.split(",")]
    with LocalAws() as emulator, tempfile.TemporaryDirectory() as tmp:
        aws = emulator.environment()
        os.environ.update(aws)
        clients = AwsClients(Settings.from_env())
        provisioned = provision(clients)
        private_pem, public_pem = generate_rsa_keypair()
        key_file = Path(tmp) / "key.pem"
        key_file.write_bytes(private_pem)
        specs = [StubFileSpec(f"bench{n}", args.mib * MIB, c) for n, c in enumerate(ciphers)]
        with StubProvider(clients, public_pem, TOKEN, specs) as stub:
            started = time.monotonic()
            stub.publish(DAY)
            print(
                f"stub: {len(specs)} x {args.mib} MiB published in {time.monotonic() - started:.1f}s"
            )
            env = worker_environment(aws, provisioned, stub, key_file)
            print(HEADER)
            for spec in specs:
                for in_flight in in_flights:
                    for _ in range(args.repeat):
                        # The FileID is the stub's file: a fresh job record per run.
                        clients.dynamodb.delete_item(
                            TableName=provisioned.jobs_table,
                            Key={"FileID": {"S": f"{spec.entity}-{DAY}"}},
                        )
                        run = Run(clients, provisioned, stub, env, Path(tmp))
                        print(row(run.measure(spec.cipher, spec.entity, in_flight)), flush=True)
            stub.purge()
    print("idle RSS: the worker after startup, before its message; growth: VmHWM - idle RSS.")
    print("MiB/s: the worker's job.completed figure (the emulator on the same 2 cores included).")
    return 0


def child(argv: list[str]) -> int:
    """A worker like `dlpipe worker`, with `--in-flight` parts instead of the default."""
    import signal  # noqa: PLC0415

    from dlpipe.adapters.download_queue import DownloadQueue  # noqa: PLC0415
    from dlpipe.bootstrap.download import build_service  # noqa: PLC0415
    from dlpipe.entrypoints.worker import Worker, WorkerOptions  # noqa: PLC0415
    from dlpipe.log import configure_logging  # noqa: PLC0415

    parser = argparse.ArgumentParser()
    parser.add_argument("--in-flight", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--wait-seconds", type=int, default=1)
    parser.add_argument("--exit-when-idle", type=float, default=2)
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    configure_logging(settings.log_level)
    clients = AwsClients(settings)
    service = build_service(
        settings, clients, tuning=TransferTuning(max_in_flight_parts=args.in_flight)
    )
    options = WorkerOptions(args.concurrency, args.wait_seconds, 1, args.exit_when_idle)
    worker = Worker(service, DownloadQueue(clients.sqs, settings.require("queue_url")), options)
    signal.signal(signal.SIGTERM, lambda *_: worker.request_stop("SIGTERM"))
    return worker.run()


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        return child(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200, help="plaintext size per file, MiB")
    parser.add_argument("--ciphers", default="AES-256-CBC,AES-256-GCM")
    parser.add_argument(
        "--in-flight",
        default=str(DEFAULT_IN_FLIGHT),
        help="comma-separated part upload concurrencies to compare",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per setting")
    return bench(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())

"""The orchestration of a large day: listing, fan-out, completion checks, at 10,000-100,000 files.

    python bench/orchestration_scale.py [--files 10000,100000] [--json out.json]

Per size, a fresh local stack (moto + DynamoDB Local) and a stub provider listing N synthetic
entries (dlpipe/local/stub/listing.py: really presigned URLs of objects never stored). Phases:

1. listing: a child process streams the listing through the real ProviderClient.iter_listing,
   unpaged and in pages of 1,000, keeping no entry.
2. orchestration: another child process runs the real batch sequence (dlpipe/services/orchestrator/sequence.py
   run_batch on the real BatchFlowService, the same code the durable handler runs): create-batch,
   fetch-and-queue in 1,000-entry chunk steps (dlpipe/services/orchestrator/fanout.py: conditional PutItems and
   SendMessageBatch on 8 threads), then completion checks (dlpipe/services/orchestrator/completion.py). Each
   step's result is passed through JSON as a checkpoint would be; its size is recorded. The
   first check runs as soon as the fan-out ends, the next ones once every file is done (or
   after MAX_WAIT_S), so files finish by the second poll unless the emulator lost a message.
3. workers, replaced (in this process, concurrently with 2): WORKERS threads each receive 10
   messages at a time (ReceiveMessage, long poll 1 s), do to each job what the real worker does
   to DynamoDB, through the real records layer: GetItem, claim, lease fence, complete
   (JobsTable.get / claim / extend_lease / complete), and then delete the 10
   (DeleteMessageBatch), as a Lambda batch of 10 would. Above LEAN_ABOVE files they only claim
   and complete (see there). moto's SQS is patched in the emulator (dlpipe/local/moto_sqs.py):
   before, a send cost grew with the queue's depth (3.6 s a SendMessageBatch at ~600 deep) and
   a send racing a delete could be lost, so this benchmark drained ahead of the work and let the
   sweeper re-send; now the queue may be as deep as the day and the flow runs on its defaults.

Counted by botocore hooks on each process's own clients: requests by service and operation,
and DynamoDB's consumed capacity as DynamoDB Local reports it (ReturnConsumedCapacity=INDEXES
added to every request that takes it; queries keep TOTAL). Memory: the orchestration child's
RSS after its imports and clients, and its kernel high-water mark (VmHWM) at the end. CPU: user +
system seconds of moto, DynamoDB Local, the child and this process (stub + stand-in workers),
per phase, read with psutil at the child's phase marks.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import manifest_scale  # bench/: the script's own folder is on sys.path
import psutil

DAY = "2026-02-28"
WORKERS = 16
LEASE_S = 300
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# A check waits at most this long for every file to be done (then the run ends as timeout,
# with the files still pending in its result: a lost message would show there).
MAX_WAIT_S = 600
# Above this size the stand-ins do 2 writes a file (claim, complete) instead of the worker's 4
# requests (GetItem, claim, fence, complete): at 100,000 files DynamoDB Local's CPU (~2 ms a
# request on these cores) would otherwise alone take ~20 minutes. The worker's own figures per
# file come from the faithful run at 10,000 (and bench/batch_day.py's real workers).
LEAN_ABOVE = 20_000
_READS = frozenset({"GetItem", "Query", "BatchGetItem", "Scan"})
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"})
_CAPACITY_OPS = _READS | _WRITES


def status_kib(field: str) -> int:
    """A /proc/self/status figure in KiB (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


class Meter:
    """Requests by (phase, service, operation) and DynamoDB capacity by (phase, kind)."""

    def __init__(self, label: str, phase: str = "") -> None:
        self.label, self.phase = label, phase
        self.requests: Counter[tuple[str, str, str]] = Counter()
        self.capacity: defaultdict[tuple[str, str], float] = defaultdict(float)
        self.seconds: defaultdict[str, float] = defaultdict(float)  # client-side, by operation
        self._lock = threading.Lock()

    def attach(self, client: Any) -> None:
        """Count `client`'s calls; for DynamoDB, ask for and add up consumed capacity."""
        service = client.meta.service_model.service_name
        client.meta.events.register(f"before-call.{service}", self._before_call)
        client.meta.events.register(f"after-call.{service}", self._after_call)
        if service == "dynamodb":
            client.meta.events.register("provide-client-params.dynamodb", self._ask_capacity)

    @staticmethod
    def _ask_capacity(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in _CAPACITY_OPS:
            params.setdefault("ReturnConsumedCapacity", "INDEXES")

    @staticmethod
    def _before_call(context: dict[str, Any], **_: Any) -> None:
        context["bench_started"] = time.perf_counter()

    def _after_call(
        self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        op, service = model.name, model.service_model.service_name
        elapsed = time.perf_counter() - context.get("bench_started", time.perf_counter())
        consumed = parsed.get("ConsumedCapacity") or []
        entries = consumed if isinstance(consumed, list) else [consumed]
        kind = "RCU" if op in _READS else "WCU"
        with self._lock:
            self.requests[(self.phase, service, op)] += 1
            self.seconds[f"{service} {op}"] += elapsed
            for entry in entries:
                self.capacity[(self.phase, kind)] += float(entry.get("CapacityUnits", 0.0))
                gsi = entry.get("GlobalSecondaryIndexes") or {}
                self.capacity[(self.phase, f"{kind} of which GSI")] += sum(
                    float(v.get("CapacityUnits", 0.0)) for v in gsi.values()
                )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: {phase: {"requests": {...}, "capacity": {...}}}."""
        out: dict[str, Any] = defaultdict(lambda: {"requests": {}, "capacity": {}})
        for (phase, service, op), n in sorted(self.requests.items()):
            out[phase]["requests"][f"{service} {op}"] = n
        for (phase, kind), units in sorted(self.capacity.items()):
            out[phase]["capacity"][kind] = round(units, 1)
        calls = Counter()
        for (_, service, op), n in self.requests.items():
            calls[f"{service} {op}"] += n
        for name, seconds in sorted(self.seconds.items()):
            out[f"mean ms per call, {self.label}"]["capacity"][name] = round(
                1000 * seconds / calls[name], 1
            )
        return dict(out)


def quiet() -> None:
    """Warnings only, and no metric lines: stdout carries the marks."""
    from dlpipe import metrics  # noqa: PLC0415
    from dlpipe.log import configure_logging  # noqa: PLC0415

    configure_logging("WARNING")
    metrics.set_sink(lambda _line: None)


def mark(name: str, **extra: Any) -> None:
    """Tell the parent a phase boundary was reached (it samples the emulators' CPU)."""
    cpu = psutil.Process().cpu_times()
    print(json.dumps({"mark": name, "cpu_s": cpu.user + cpu.system, **extra}), flush=True)


# ---- child processes ---------------------------------------------------------------------


def child_listing(cfg: dict[str, Any]) -> None:
    """Stream the day's listing through the real client, keeping no entry."""
    from dlpipe.adapters.provider_client import ProviderClient  # noqa: PLC0415

    quiet()
    client = ProviderClient(
        cfg["base_url"], cfg["token"], allow_http=True, allow_private=True
    )  # the stub
    rss_kib = status_kib("VmRSS")
    mark("listing")
    started, entries = time.monotonic(), 0
    for _entry in client.iter_listing(DAY):
        entries += 1
    wall = time.monotonic() - started
    mark(
        "end", entries=entries, wall_s=round(wall, 2), rss_kib=rss_kib, hwm_kib=status_kib("VmHWM")
    )


def child_orchestrate(cfg: dict[str, Any]) -> None:
    """Run the real batch sequence inline, metering every AWS call and every checkpoint."""
    import uuid as uuid_module  # noqa: PLC0415

    from dlpipe.adapters.aws import AwsClients  # noqa: PLC0415
    from dlpipe.adapters.batches_table import BatchesTable  # noqa: PLC0415
    from dlpipe.adapters.jobs_table import JobsTable  # noqa: PLC0415
    from dlpipe.adapters.provider_client import ProviderClient  # noqa: PLC0415
    from dlpipe.adapters.queue import JobQueue  # noqa: PLC0415
    from dlpipe.config import Settings  # noqa: PLC0415
    from dlpipe.domain.clock import SystemClock  # noqa: PLC0415
    from dlpipe.domain.events import parse_event  # noqa: PLC0415
    from dlpipe.services.orchestrator.flow import BatchFlowService  # noqa: PLC0415
    from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_batch  # noqa: PLC0415

    quiet()
    clients = AwsClients(Settings.from_env())
    meter = Meter("orchestrator")
    meter.attach(clients.dynamodb)
    meter.attach(clients.sqs)
    jobs = JobsTable(clients.dynamodb, cfg["jobs_table"], SystemClock())
    flow = BatchFlowService(
        jobs=jobs,
        batches=BatchesTable(clients.dynamodb, cfg["batches_table"], SystemClock()),
        provider=ProviderClient(cfg["base_url"], cfg["token"], allow_http=True, allow_private=True),
        queue=JobQueue(clients.sqs, cfg["queue_url"]),
        clock=SystemClock(),
        new_uuid=lambda: str(uuid_module.uuid4()),
    )
    done_file = Path(cfg["done_file"])
    checkpoints: dict[str, int] = {}
    step_s: dict[str, float] = {}

    class MeteredSteps(InlineSteps):
        def step(self, name: str, func: Callable[[], Any]) -> Any:
            phase = _phase_of(name)
            if phase != meter.phase:
                mark(phase)
                meter.phase = phase
            started = time.monotonic()
            result = super().step(name, func)
            step_s[name] = round(time.monotonic() - started, 3)
            checkpoints[name] = len(json.dumps(result).encode())
            return result

        def wait(self, name: str, seconds: int) -> None:
            self.names.append(name)
            if name != "poll-wait-1":  # the first check: as soon as the fan-out ends
                deadline = time.monotonic() + MAX_WAIT_S
                while not done_file.exists() and time.monotonic() < deadline:
                    time.sleep(0.2)

    rss_kib = status_kib("VmRSS")
    meter.phase = "setup"
    mark("setup")
    result = run_batch(
        MeteredSteps(), lambda: flow, parse_event({"date": DAY}), PollingPlan(1, max_polls=6)
    ).to_dict()
    mark(
        "end",
        result=result,
        rss_kib=rss_kib,
        hwm_kib=status_kib("VmHWM"),
        meter=meter.to_json(),
        checkpoints=checkpoints,
        step_s=step_s,
        query_rcu_meter=round(jobs.meter.read_capacity_units, 1),
    )


# ---- the parent: stack, stub, stand-in workers, CPU sampling --------------------------------


class Cpu:
    """CPU seconds of the emulator children, the benchmark's child and this process."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.processes = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.processes["bench (stub + workers)"] = psutil.Process()

    def sample(self) -> dict[str, float]:
        out = {}
        for name, process in self.processes.items():
            times = process.cpu_times()
            out[name] = times.user + times.system
        return out


def run_child(mode: str, cfg: dict[str, Any], cpu: Cpu) -> tuple[dict[str, Any], list[Any]]:
    """Run a child; at each of its marks sample CPU. (its last mark, [(mark, t, cpu)])."""
    cmd = [sys.executable, __file__, "child", mode, json.dumps(cfg)]
    marks: list[Any] = []
    last: dict[str, Any] = {}
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as child:  # waited below
        assert child.stdout is not None
        for line in child.stdout:
            parsed = json.loads(line) if line.startswith("{") else {}
            if "mark" not in parsed:  # a log or metric line
                continue
            last = parsed
            marks.append((last["mark"], time.monotonic(), {**cpu.sample(), "child": last["cpu_s"]}))
    if child.returncode != 0:
        raise RuntimeError(f"child {mode} exited {child.returncode}")
    return last, marks


def _phase_of(step: str) -> str:
    """The phase a step's requests and time count in: the checks, the hand-off after the end
    (write-manifest, the outcome event: after the last check, never the fan-out's), or the
    fan-out (create-batch and the fetch-and-queue chunks)."""
    from dlpipe.services.orchestrator.step_names import (  # noqa: PLC0415
        STEP_PUBLISH_OUTCOME,
        STEP_WRITE_MANIFEST,
    )

    if step.startswith("check-"):
        return "checks"
    if step in (STEP_WRITE_MANIFEST, STEP_PUBLISH_OUTCOME) or step.startswith("day-late"):
        return "hand-off"
    return "fan-out"


def phase_table(marks: list[Any]) -> dict[str, dict[str, float]]:
    """Per phase (between consecutive marks): wall seconds and CPU seconds per process."""
    phases = {}
    for (name, t0, c0), (_, t1, c1) in itertools.pairwise(marks):
        phases[name] = {"wall_s": round(t1 - t0, 2)} | {
            k: round(c1[k] - c0[k], 2) for k in c0 if k in c1
        }
    return phases


class StandInWorkers:
    """Drain the queue (receive 10, delete 10) and complete each job as a worker would."""

    def __init__(
        self, clients: Any, settings: Any, expected: int, done_file: Path, *, lean: bool = False
    ) -> None:
        from dlpipe.adapters.jobs_table import JobsTable  # noqa: PLC0415
        from dlpipe.domain.clock import SystemClock  # noqa: PLC0415

        self.meter = Meter("stand-in workers", "workers")
        self.meter.attach(clients.dynamodb)
        self.meter.attach(clients.sqs)
        self.sqs, self.queue_url = clients.sqs, settings.queue_url
        self.jobs = JobsTable(clients.dynamodb, settings.jobs_table, SystemClock())
        self.expected, self.done_file, self.lean = expected, done_file, lean
        self.done = self.refused = self.depth_max = 0
        self._lock, self._stop = threading.Lock(), threading.Event()
        self.threads = [threading.Thread(target=self._work, daemon=True) for _ in range(WORKERS)]
        self.threads.append(threading.Thread(target=self._watch_depth, daemon=True))

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def _work(self) -> None:
        from dlpipe.domain.messages import decode_message  # noqa: PLC0415

        owner = f"bench:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        while not self._stop.is_set():
            got = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=1,
                VisibilityTimeout=LEASE_S,
            )
            messages = got.get("Messages", [])
            if not messages:
                continue
            for message in messages:
                finished = self._complete_one(decode_message(message["Body"]).file_id, owner)
                with self._lock:
                    if not finished:
                        self.refused += 1
                        continue
                    self.done += 1
                    if self.done == self.expected:
                        self.done_file.write_text("done")
            entries: Any = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ]
            self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)

    def _complete_one(self, file_id: str, owner: str) -> bool:
        """The worker's DynamoDB calls for one file; False if it was not available."""
        from dlpipe.domain.errors import ClaimRefusedError  # noqa: PLC0415
        from dlpipe.domain.model import JobStatus  # noqa: PLC0415

        if self.lean:  # claim and complete only: the orchestrator's view of a finished file
            try:
                job = self.jobs.claim(file_id, owner, LEASE_S)
            except ClaimRefusedError:
                return False
            dest = f"{job.entity}/{job.download_date}/{file_id}"
            self.jobs.complete(
                file_id, owner, byte_count=0, sha256=EMPTY_SHA256, destination_key=dest
            )
            return True
        job = self.jobs.get(file_id)
        if job is None or job.status is not JobStatus.AVAILABLE:
            return False
        try:
            self.jobs.claim(file_id, owner, LEASE_S)
        except ClaimRefusedError:
            return False
        self.jobs.extend_lease(file_id, owner, LEASE_S)  # the worker's pre-publish fence
        dest = f"{job.entity}/{job.download_date}/{file_id}"
        self.jobs.complete(file_id, owner, byte_count=0, sha256=EMPTY_SHA256, destination_key=dest)
        return True

    def _watch_depth(self) -> None:
        names: Any = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        while not self._stop.wait(2.0):
            got = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=names)
            depth = sum(int(v) for v in got["Attributes"].values())
            with self._lock:
                self.depth_max = max(self.depth_max, depth)


def run_size(files: int, *, listing_only: bool = False, lean: bool = False) -> dict[str, Any]:
    """One size on a fresh stack: listing (unpaged, paged), then the orchestration."""
    from dlpipe.adapters.aws import AwsClients  # noqa: PLC0415
    from dlpipe.local.stack import local_stack  # noqa: PLC0415
    from dlpipe.local.stub.server import StubProvider  # noqa: PLC0415

    out: dict[str, Any] = {"files": files}
    with local_stack() as stack:
        pids = {name: int(pid) for name, pid in stack.emulator.pids.items() if pid}
        cpu = Cpu(pids)
        stub = StubProvider(
            stack.clients, stack.public_key_pem, stack.provider_token, [], synthetic_files=files
        )
        with stub, tempfile.TemporaryDirectory() as tmp:
            cfg = {
                "base_url": stub.base_url,
                "token": stack.provider_token,
                "jobs_table": stack.settings.jobs_table,
                "batches_table": stack.settings.batches_table,
                "queue_url": stack.settings.queue_url,
                "done_file": str(Path(tmp) / "done"),
            }
            out["listing"] = {}
            for label, page_size in (("unpaged", None), ("pages of 1,000", 1000)):
                stub.page_size = page_size
                last, marks = run_child("listing", cfg, cpu)
                out["listing"][label] = {
                    **{k: last[k] for k in ("entries", "wall_s", "rss_kib", "hwm_kib")},
                    "cpu": phase_table(marks),
                }
                print(f"  listing {label}: {json.dumps(out['listing'][label])}", flush=True)
            if listing_only:
                return out
            stub.page_size = 1000
            workers = StandInWorkers(
                AwsClients(stack.settings),
                stack.settings,
                files,
                Path(cfg["done_file"]),
                lean=lean,
            )
            workers.start()
            try:
                last, marks = run_child("orchestrate", cfg, cpu)
            finally:
                workers.stop()
            out["manifest"] = _manifest_phase(stack, cfg, cpu, last["result"]["batch_id"], files)
        out["orchestration"] = {
            **{k: last[k] for k in ("result", "rss_kib", "hwm_kib", "checkpoints", "step_s")},
            "query_rcu_meter": last["query_rcu_meter"],
            "meter": last["meter"] | workers.meter.to_json(),
            "phases": phase_table(marks),
            "workers": {
                "lean": lean,
                "done": workers.done,
                "refused": workers.refused,
                "queue_depth_max": workers.depth_max,
            },
        }
    return out


def _manifest_phase(
    stack: Any, cfg: dict[str, Any], cpu: Cpu, batch_id: str, files: int
) -> dict[str, Any]:
    """The day's objects stored (not measured), then the write-manifest step in a child."""
    stored = manifest_scale.store_objects(stack.clients, stack.settings, batch_id, EMPTY_SHA256)
    bucket = stack.settings.destination_bucket
    last, marks = run_child("manifest", {**cfg, "batch_id": batch_id, "bucket": bucket}, cpu)
    row = manifest_scale.figures(files, last) | {"objects_stored": stored}
    return row | {"phases": phase_table(marks)}


# ---- figures -------------------------------------------------------------------------------


def per_file(run: dict[str, Any]) -> dict[str, float]:
    """The per-file figures the targets name."""
    files, meter = run["files"], run["orchestration"]["meter"]
    req: Counter[str] = Counter()
    for phase, figures in meter.items():
        for name, n in figures["requests"].items():
            service, op = name.split(" ")
            req[f"{phase} {service}"] += n
            if service == "dynamodb" and op in _WRITES:
                req[f"{phase} writes"] += n
    cap = {(p, k): v for p, f in meter.items() for k, v in f["capacity"].items()}
    orchestrator = ("setup", "fan-out", "checks", "hand-off")
    checks = run["orchestration"]["checkpoints"]
    return {
        "orchestrator_dynamodb_requests": sum(req[f"{p} dynamodb"] for p in orchestrator) / files,
        "orchestrator_dynamodb_writes": sum(req[f"{p} writes"] for p in orchestrator) / files,
        "worker_dynamodb_requests": req["workers dynamodb"] / files,
        "worker_dynamodb_writes": req["workers writes"] / files,
        "orchestrator_sqs_requests": sum(req[f"{p} sqs"] for p in orchestrator) / files,
        "worker_sqs_requests": req["workers sqs"] / files,
        "fanout_wcu": cap.get(("fan-out", "WCU"), 0.0) / files,
        "fanout_wcu_gsi": cap.get(("fan-out", "WCU of which GSI"), 0.0) / files,
        "worker_wcu": cap.get(("workers", "WCU"), 0.0) / files,
        "worker_rcu": cap.get(("workers", "RCU"), 0.0) / files,
        "completion_rcu": cap.get(("checks", "RCU"), 0.0) / files,
        "checks_wcu": cap.get(("checks", "WCU"), 0.0) / files,
        "largest_checkpoint_bytes": max(checks.values()),
        "largest_fanout_checkpoint_bytes": max(
            v for k, v in checks.items() if k.startswith("fetch-")
        ),
    }


def print_run(run: dict[str, Any]) -> None:
    """One size's figures as text."""
    o, files = run["orchestration"], run["files"]
    print(f"\n== {files:,} files ==")
    for label, figures in run["listing"].items():
        growth = (figures["hwm_kib"] - figures["rss_kib"]) / 1024
        print(
            f"listing {label:<15} {figures['wall_s']:>7.1f} s  {figures['entries']:,} entries"
            f"  child VmHWM growth {growth:.1f} MiB"
        )
    print(f"result: {o['result']}")
    print(
        f"orchestrator child: RSS after setup {o['rss_kib'] / 1024:.1f} MiB, VmHWM"
        f" {o['hwm_kib'] / 1024:.1f} MiB (growth {(o['hwm_kib'] - o['rss_kib']) / 1024:.1f} MiB)"
    )
    print(f"stand-in workers: {o['workers']}")
    procs = ["moto", "dynamodb-local", "child", "bench (stub + workers)"]
    print(f"{'phase':<10} {'wall s':>8} " + " ".join(f"{p[:16]:>16}" for p in procs))
    for name, figures in o["phases"].items():
        cells = " ".join(f"{figures.get(p, 0.0):>15.1f}s" for p in procs)
        print(f"{name:<10} {figures['wall_s']:>8.1f} {cells}")
    emulator = sum(f.get("moto", 0) + f.get("dynamodb-local", 0) for f in o["phases"].values())
    ours = sum(f.get("child", 0) + f.get("bench (stub + workers)", 0) for f in o["phases"].values())
    print(
        f"CPU over the orchestration: emulators {emulator:.1f} s, benchmark {ours:.1f} s"
        f" (emulators' share {100 * emulator / max(emulator + ours, 1e-9):.0f}%)"
    )
    for key, value in per_file(run).items():
        print(f"  {key:<40} {value:10.3f}")
    print("requests and capacity by phase:", json.dumps(o["meter"]))
    if manifest := run.get("manifest"):
        shown = {k: v for k, v in manifest.items() if k != "phases"}
        print(f"manifest (write-manifest, after the day): {json.dumps(shown)}")
    steps = sorted(o["step_s"].items(), key=lambda kv: -kv[1])[:3]
    print(f"slowest steps (s): {steps}; checkpoint bytes: {sorted(set(o['checkpoints'].values()))}")


def verdicts(runs: list[dict[str, Any]]) -> list[str]:
    """The scale targets' checks, as lines; a MISSED target is a figure, not an error."""
    lines = []
    for run in runs:
        f = per_file(run)
        if run["orchestration"]["workers"].get("lean"):
            writes_line = (
                f"orchestrator DynamoDB writes per file {f['orchestrator_dynamodb_writes']:.4f}"
                " (lean stand-ins: the worker's writes are the faithful run's)"
            )
        else:
            writes = f["orchestrator_dynamodb_writes"] + f["worker_dynamodb_writes"]
            writes_line = (
                f"DynamoDB writes per file {writes:.4f} (target <= 4.00 + amortized batch"
                f" writes: {'met' if writes <= 4.01 else 'MISSED'})"
            )
        lines.append(
            f"{run['files']:,} files: {writes_line}; completion RCU"
            f" per file {f['completion_rcu']:.3f} (target <= 1: "
            f"{'met' if f['completion_rcu'] <= 1 else 'MISSED'}); largest checkpoint"
            f" {f['largest_checkpoint_bytes']} B (limit 262,144)"
        )
    if len(runs) > 1:
        small, large = runs[0]["orchestration"], runs[-1]["orchestration"]
        grew = (large["hwm_kib"] - small["hwm_kib"]) / 1024
        ratio = runs[-1]["files"] / runs[0]["files"]
        lines.append(
            f"orchestrator VmHWM {small['hwm_kib'] / 1024:.1f} MiB at {runs[0]['files']:,} files,"
            f" {large['hwm_kib'] / 1024:.1f} MiB at {runs[-1]['files']:,} ({ratio:.0f}x the"
            f" files): grew {grew:.1f} MiB"
        )
    return lines


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        cfg = json.loads(sys.argv[3])
        if sys.argv[2] == "manifest":
            manifest_scale.child_manifest(cfg, Meter, status_kib, mark)
            return 0
        (child_listing if sys.argv[2] == "listing" else child_orchestrate)(cfg)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="10000,100000", help="day sizes, comma-separated")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument(
        "--listing-only", action="store_true", help="phase 1 only (listing memory and speed)"
    )
    parser.add_argument(
        "--lean-workers-above",
        type=int,
        default=LEAN_ABOVE,
        help="above this many files the stand-ins only claim and complete (default %(default)s)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import machine, quiet_logs, write_json  # noqa: PLC0415

    quiet_logs()
    info = machine()
    print(f"orchestration at scale: {info['cores']} cores, load {info['load_average']}", flush=True)
    runs = []
    started = time.monotonic()
    for files in (int(n) for n in args.files.split(",")):
        print(f"-- {files:,} files", flush=True)
        size_started = time.monotonic()
        lean = files > args.lean_workers_above
        runs.append(run_size(files, listing_only=args.listing_only, lean=lean))
        runs[-1]["wall_s"] = round(time.monotonic() - size_started, 1)
        if not args.listing_only:
            print_run(runs[-1])
    print()
    if not args.listing_only:
        for line in verdicts(runs):
            print(line)
    print(f"total {time.monotonic() - started:.0f} s")
    figures = [] if args.listing_only else [per_file(r) for r in runs]
    write_json(args.json, {"runs": runs, "per_file": figures})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

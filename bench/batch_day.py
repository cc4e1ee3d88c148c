"""A 1,000-file day through the real flow and real workers: scale-out, requests, capacity, latency.

    python bench/batch_day.py [--files 1000] [--workers 1,2,4,8] [--interval 10]
                              [--latency-intervals 1,2] [--latency-files 100] [--no-capacity-run]

Each run is one polling date on one emulator: the durable handler (the SDK's local runner,
real-time waits) runs create-batch, fetch-and-queue and the completion checks of the real
BatchFlowService against the stub provider; as soon as fetch-and-queue has returned, a
Worker with N receiver threads (what `dlpipe worker --concurrency N` runs) starts on the
queue. The flow and the workers use clients of their own, whose calls are counted by
botocore event hooks (before-call.dynamodb / before-call.sqs) and billed by dynamo_cost.py.

Figures: (4) wall time from the workers' start to the last CompletedAt, per worker count,
with the emulators' CPU use (moto and DynamoDB Local, each its own child process, read with
psutil), and their DynamoDB and SQS reference figures from the same run;
(3) requests and capacity units per file, from the last of those runs, whose poll interval
is set to ~0.7 x the previous run's processing time so that files finish by the second poll
(the case the target describes); (5) batch latency, batch UpdatedAt (completed) minus the
max CompletedAt, from small days polled every 1 and 2 s.
"""

from __future__ import annotations

import argparse
import math
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import psutil
from common import machine, quiet_logs, verdict, write_json
from dynamo_cost import (
    CapacityMeter,
    Tally,
    attribute_sizes,
    item_size,
    lifecycle_units,
    phase,
    write_units,
)

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.bootstrap.download import build_service
from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.local.durable_runner import run_durable_locally
from dlpipe.local.stack import LocalStack, local_stack
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.download.service import DownloadService, ProcessResult
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.services.orchestrator.ports import CompletionCheck, QueueResult

FILE_BYTES = 1024
SEED_RCU_PER_FILE = 6.0  # one consistent GetItem (<= 4 KB) per file per poll, six polls
SEED_WRITES_PER_FILE = 3  # put, claim, complete
SEED_WCU_PER_FILE = 3.3  # three 1-WCU writes per file + three batch writes per 10-file day


def iso_ms(text: str) -> int:
    """Epoch ms of an ISO 8601 timestamp as dlpipe writes them."""
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


class CountingService(DownloadService):
    """The real service; notes when the n-th file has been processed."""

    def __init__(self, inner: DownloadService, expected: int) -> None:
        super().__init__(inner.deps)
        self.expected, self.done, self._lock = expected, 0, threading.Lock()
        self.all_done = threading.Event()

    def process(self, file_id: str, **kwargs: Any) -> ProcessResult:
        result = super().process(file_id, **kwargs)
        with self._lock:
            self.done += 1
            if self.done >= self.expected:
                self.all_done.set()
        return result


class FlowProbe:
    """BatchFlowService with every step labelled for the meter, and a callback once queued."""

    def __init__(self, flow: BatchFlowService, on_queued: Any) -> None:
        self._flow, self._on_queued = flow, on_queued
        self.check_seconds: list[float] = []

    def create_batch(self, polling_date: str, rerun: bool = False) -> str:
        with phase("create-batch"):
            return self._flow.create_batch(polling_date, rerun)

    def fetch_and_queue(
        self, batch_id: str, polling_date: str, resume: QueueResult | None = None
    ) -> QueueResult:
        with phase("fetch-and-queue"):
            result = self._flow.fetch_and_queue(batch_id, polling_date, resume)
        if result.done:  # the last chunk: every job is written and queued
            self._on_queued()
        return result

    def check_completion(
        self, batch_id: str, poll_number: int, is_last_poll: bool
    ) -> CompletionCheck:
        started = time.perf_counter()
        with phase(f"check-completion-{poll_number:03d}"):
            result = self._flow.check_completion(batch_id, poll_number, is_last_poll)
        self.check_seconds.append(time.perf_counter() - started)
        return result

    def recheck_day(
        self, polling_date: str, start: Callable[[str], str] | None = None
    ) -> dict[str, Any]:
        with phase("restatement-check"):
            return self._flow.recheck_day(polling_date, start)

    def fail_batch(self, batch_id: str, reason: str) -> None:
        with phase("fail-batch"):
            self._flow.fail_batch(batch_id, reason)

    def write_manifest(self, batch_id: str) -> dict[str, Any] | None:
        with phase("write-manifest"):
            return self._flow.write_manifest(batch_id)

    def record_handoff_problem(self, batch_id: str, problem: str) -> None:
        self._flow.record_handoff_problem(batch_id, problem)

    def publish_event(self, event: dict[str, Any]) -> dict[str, Any]:
        with phase("publish-outcome-event"):
            return self._flow.publish_event(event)

    def publish_if_late(self, event: dict[str, Any], deadline_at_ms: int) -> bool:
        return self._flow.publish_if_late(event, deadline_at_ms)


@dataclass
class RunResult:
    """One day's run."""

    workers: int
    interval_s: int
    files: int
    completed: int
    status: str
    polls: int
    queue_seconds: float
    wall_seconds: float
    latency_seconds: float
    check_seconds_max: float
    emulator_cpu_pct: float  # moto (S3, SQS, Secrets Manager)
    dynamodb_cpu_pct: float  # DynamoDB Local, its own child process
    client_cpu_pct: float
    dynamodb_ops_per_s: float
    tally: Tally
    job_item: dict[str, Any]
    traced: list[Any]


class Day:
    """The stack, the stub and the metered clients shared by every run."""

    def __init__(
        self, stack: LocalStack, stub: StubProvider, files: int, first_date: int = 0
    ) -> None:
        self.stack, self.stub, self.files = stack, stub, files
        self.settings = replace(stack.settings, provider_base_url=stub.base_url)
        self.flow_clients = AwsClients(self.settings)
        self.worker_clients = AwsClients(self.settings)
        self.meter = CapacityMeter(_indexes(stack))
        self.meter.set_keys(self.settings.jobs_table, ("FileID",))
        self.meter.set_keys(self.settings.batches_table, ("BatchID",))
        for clients in (self.flow_clients, self.worker_clients):
            self.meter.attach(clients.dynamodb)
            self.meter.attach(clients.sqs)
        self.meter.attach(self.worker_clients.s3)
        self.jobs = JobsTable(stack.clients.dynamodb, self.settings.jobs_table)
        self.batches = BatchesTable(stack.clients.dynamodb, self.settings.batches_table)
        self._dates = first_date
        assert stack.emulator.pid is not None
        assert stack.emulator.dynamodb.pid is not None
        self.emulator = psutil.Process(stack.emulator.pid)
        self.dynamodb = psutil.Process(stack.emulator.dynamodb.pid)

    def next_date(self) -> str:
        self._dates += 1
        return f"2026-03-{self._dates:02d}"

    def run(self, workers: int, interval_s: int) -> RunResult:
        date = self.next_date()
        self.stub.publish(date)  # not timed: the provider's side
        stop = threading.Event()
        service = CountingService(
            build_service(self.settings, self.worker_clients, stop=stop), self.files
        )
        options = WorkerOptions(concurrency=workers, wait_seconds=1, max_messages=1, grace_s=5.0)
        worker = Worker(
            service,
            DownloadQueue(self.worker_clients.sqs, self.settings.require("queue_url")),
            options,
        )
        thread = threading.Thread(target=worker.run, name="bench-workers", daemon=True)
        marks: dict[str, Any] = {}

        def start_workers() -> None:
            marks["t0_ms"], marks["t0"] = int(time.time() * 1000), time.perf_counter()
            marks["emu_cpu"], marks["own_cpu"] = _cpu(self.emulator), _cpu(psutil.Process())
            marks["ddb_cpu"] = _cpu(self.dynamodb)
            thread.start()

        def end_mark() -> None:
            service.all_done.wait()
            marks["t1"] = time.perf_counter()
            marks["emu_cpu1"], marks["own_cpu1"] = _cpu(self.emulator), _cpu(psutil.Process())
            marks["ddb_cpu1"] = _cpu(self.dynamodb)

        flow = build_flow(self.settings, self.flow_clients)
        probe = FlowProbe(flow, start_workers)
        handler = build_durable_handler(lambda: probe, interval_s, max_polls=200)
        self.meter.reset()
        self.meter.trace(self.settings.jobs_table)
        watcher = threading.Thread(target=end_mark, daemon=True)
        watcher.start()
        started = time.perf_counter()
        try:
            result = run_durable_locally(
                handler, {"date": date}, skip_time=False, timeout_seconds=interval_s * 200 + 600
            )
        finally:
            worker.request_stop("run finished")
            service.all_done.set()
            if thread.is_alive():
                thread.join(timeout=30)
        watcher.join(timeout=5)
        tally = self.meter.reset()
        if tally.meter_errors:
            raise RuntimeError(f"the capacity meter failed: {tally.meter_errors[:3]}")
        return self._result(workers, interval_s, result, tally, probe, marks, started)

    def _result(
        self,
        workers: int,
        interval_s: int,
        result: dict[str, Any],
        tally: Tally,
        probe: FlowProbe,
        marks: dict[str, Any],
        started: float,
    ) -> RunResult:
        batch_id = str(result["batch_id"])
        jobs = list(self.jobs.query_by_batch(batch_id))
        completed = [j for j in jobs if j.status is JobStatus.COMPLETED and j.completed_at]
        last_ms = max(iso_ms(str(j.completed_at)) for j in completed)
        batch = self.batches.require(batch_id)
        span = marks["t1"] - marks["t0"]
        worker_ddb = sum(
            n
            for (ph, svc, _, _), n in tally.requests.items()
            if svc == "dynamodb" and ph == "worker"
        )
        item = self.stack.clients.dynamodb.get_item(
            TableName=self.settings.jobs_table, Key={"FileID": {"S": completed[0].file_id}}
        )["Item"]
        return RunResult(
            workers=workers,
            interval_s=interval_s,
            files=len(jobs),
            completed=len(completed),
            status=str(result["status"]),
            polls=int(result["polls"]),
            queue_seconds=round(marks["t0"] - started, 2),
            wall_seconds=round((last_ms - marks["t0_ms"]) / 1000, 2),
            latency_seconds=round((iso_ms(batch.updated_at) - last_ms) / 1000, 3),
            check_seconds_max=round(max(probe.check_seconds, default=0.0), 3),
            emulator_cpu_pct=round(100 * (marks["emu_cpu1"] - marks["emu_cpu"]) / span, 0),
            dynamodb_cpu_pct=round(100 * (marks["ddb_cpu1"] - marks["ddb_cpu"]) / span, 0),
            client_cpu_pct=round(100 * (marks["own_cpu1"] - marks["own_cpu"]) / span, 0),
            dynamodb_ops_per_s=round(worker_ddb / span, 0),
            tally=tally,
            job_item=item,
            traced=list(self.meter.traced),
        )


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _indexes(stack: LocalStack) -> dict[str, dict[str, tuple[str, ...]]]:
    found: dict[str, dict[str, tuple[str, ...]]] = {}
    for table in (stack.settings.jobs_table, stack.settings.batches_table):
        described = stack.clients.dynamodb.describe_table(TableName=table)["Table"]
        found[table] = {
            gsi["IndexName"]: tuple(k["AttributeName"] for k in gsi["KeySchema"])
            for gsi in described.get("GlobalSecondaryIndexes", [])
        }
    return found


# ---- the emulator as a reference -------------------------------------------------------


def emulator_reference(stack: LocalStack, seconds: float = 3.0) -> dict[str, float]:
    """DynamoDB GetItem ops/s (1 and 8 threads) and SQS receive latency, shallow and deep."""
    clients = AwsClients(stack.settings)
    table = stack.settings.jobs_table

    def get_rate(threads: int) -> float:
        count, lock, deadline = [0], threading.Lock(), time.perf_counter() + seconds

        def loop() -> None:
            while time.perf_counter() < deadline:
                clients.dynamodb.get_item(TableName=table, Key={"FileID": {"S": "ref-2026-01-01"}})
                with lock:
                    count[0] += 1

        pool = [threading.Thread(target=loop) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        return count[0] / seconds

    figures = {"dynamodb_getitem_ops_s_1_thread": round(get_rate(1))}
    figures["dynamodb_getitem_ops_s_8_threads"] = round(get_rate(8))
    figures.update(_sqs_reference(clients))
    return figures


def _sqs_reference(clients: AwsClients, deep: int = 1000, probes: int = 30) -> dict[str, float]:
    url = clients.sqs.create_queue(QueueName=f"bench-ref-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    try:

        def receive_ms() -> float:
            started = time.perf_counter()
            for _ in range(probes):
                got = clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)
                for m in got.get("Messages", []):
                    clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            return 1000 * (time.perf_counter() - started) / probes

        def fill(n: int) -> None:
            for start in range(0, n, 10):
                entries: Any = [
                    {"Id": str(i), "MessageBody": "x" * 100} for i in range(min(10, n - start))
                ]
                clients.sqs.send_message_batch(QueueUrl=url, Entries=entries)

        fill(probes + 10)
        shallow = receive_ms()
        fill(deep)
        deep_ms = receive_ms()
    finally:
        clients.sqs.delete_queue(QueueUrl=url)
    return {
        "sqs_receive_delete_ms_depth_40": round(shallow, 1),
        f"sqs_receive_delete_ms_depth_{deep}": round(deep_ms, 1),
    }


# ---- figures -------------------------------------------------------------------------------


def per_file(tally: Tally, files: int) -> dict[str, Any]:
    """Requests by group, operation and table, and capacity by group, table and kind, per file."""
    requests: dict[str, float] = defaultdict(float)
    for (ph, service, op, table), n in tally.requests.items():
        requests[" ".join(filter(None, (_group(ph), service, op, _short(table))))] += n / files
    capacity: dict[str, float] = defaultdict(float)
    for (ph, table, kind), units in tally.capacity.items():
        capacity[f"{_group(ph)} {_short(table)} {kind}"] += units / files
    polls = sorted({ph for (ph, _, _, _) in tally.requests if ph.startswith("check-completion")})
    per_poll = []
    for ph in polls:
        reads = [
            r for (p, t), rs in tally.reads.items() if p == ph and _short(t) == "jobs" for r in rs
        ]
        rcu = sum(
            c
            for (p, t, k), c in tally.capacity.items()
            if p == ph and _short(t) == "jobs" and k == "RCU"
        )
        per_poll.append({"poll": ph, "job_items_read": sum(n for n, _ in reads), "job_rcu": rcu})
    return {
        "requests": {k: round(v, 3) for k, v in sorted(requests.items())},
        "capacity": {k: round(v, 3) for k, v in sorted(capacity.items())},
        "per_poll": per_poll,
    }


def _group(ph: str) -> str:
    return "check-completion" if ph.startswith("check-completion") else ph


def _short(table: str) -> str:
    if not table:
        return ""
    return "jobs" if "job" in table else "batches"


_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"})


def totals(tally: Tally, files: int) -> dict[str, float]:
    """The per-file totals the targets talk about."""
    count: dict[str, float] = defaultdict(float)
    for (_, service, op, table), n in tally.requests.items():
        count[service] += n
        if service == "dynamodb" and op in _WRITES:
            count[f"{_short(table)} writes"] += n
    cap: dict[str, float] = defaultdict(float)
    for (ph, table, kind), units in tally.capacity.items():
        cap[kind] += units
        cap[f"{_short(table)} {kind}"] += units
        if ph.startswith("check-completion") and kind == "RCU":
            cap[f"completion {_short(table)} RCU"] += units
    return {
        "dynamodb_requests": count["dynamodb"] / files,
        "sqs_requests": count["sqs"] / files,
        "job_writes": count["jobs writes"] / files,
        "batch_writes": count["batches writes"] / files,
        "rcu": cap["RCU"] / files,
        "wcu": cap["WCU"] / files,
        "gsi_wcu": cap["GSI WCU"] / files,
        "job_wcu": cap["jobs WCU"] / files,
        "batch_wcu": cap["batches WCU"] / files,
        "completion_job_rcu": cap["completion jobs RCU"] / files,
        "completion_batch_rcu": cap["completion batches RCU"] / files,
    }


def item_report(item: dict[str, Any]) -> dict[str, Any]:
    """The completed job item's size, what writes of it cost, and what a smaller one would."""
    sizes = attribute_sizes(item)
    size = item_size(item)
    url = sizes.get("PresignedURL", 0) + sizes.get("URLExpiresAt", 0)
    names = sum(len(n) for n in item)
    short_names = sum(min(len(n), 2) for n in item)
    return {
        "bytes": size,
        "wcu_per_write": write_units(size),
        "attribute_bytes": sizes,
        "url_bytes": url,
        "name_bytes": names,
        "without_url_bytes": size - url,
        "without_url_wcu": write_units(size - url),
        "short_names_bytes": size - names + short_names,
        "both_bytes": size - url - names + short_names,
        "both_wcu": write_units(size - url - names + short_names),
    }


URL_ATTRIBUTES = ("PresignedURL", "URLExpiresAt")
STS_TOKEN_BYTES = 1000  # assumed: X-Amz-Security-Token of a URL signed with temporary credentials


def without_fence(traced: list[Any]) -> list[Any]:
    """The writes that change the job's Status (create, claim, complete), chained again."""
    kept: list[Any] = []
    for old, new in traced:
        if old is None or old.get("Status") != new.get("Status"):
            kept.append((kept[-1][1] if kept else old, new))
    return kept


def item_variants(traced: list[Any], indexes: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """WCU (table + GSI) of one job's writes as measured, and as they would be if smaller."""
    names = sorted({n for _, new in traced for n in new})
    short = {n: f"{chr(97 + i // 26)}{chr(97 + i % 26)}" for i, n in enumerate(names)}
    short_indexes = {i: tuple(short.get(k, k) for k in keys) for i, keys in indexes.items()}

    def no_url(n: int, item: dict[str, Any]) -> dict[str, Any]:
        return item if n == 0 else {k: v for k, v in item.items() if k not in URL_ATTRIBUTES}

    def renamed(_n: int, item: dict[str, Any]) -> dict[str, Any]:
        return {short[k]: v for k, v in item.items()}

    def sts_url(_n: int, item: dict[str, Any]) -> dict[str, Any]:
        if "PresignedURL" not in item:
            return item
        return {**item, "PresignedURL": {"S": item["PresignedURL"]["S"] + "t" * STS_TOKEN_BYTES}}

    def keys_only(item: dict[str, Any] | None, keys: tuple[str, ...]) -> int:
        return item_size({k: v for k, v in (item or {}).items() if k in (*keys, "FileID")})

    variants = {
        "as measured": lifecycle_units(traced, indexes),
        "the seed's three writes, same item and indexes": lifecycle_units(
            without_fence(traced), indexes
        ),
        "PresignedURL and URLExpiresAt removed by the claim": lifecycle_units(
            traced, indexes, no_url
        ),
        "2-letter attribute names": lifecycle_units(traced, short_indexes, renamed),
        "both": lifecycle_units(traced, short_indexes, lambda n, item: renamed(n, no_url(n, item))),
        "GSIs projecting KEYS_ONLY": lifecycle_units(traced, indexes, entry_size=keys_only),
        f"URL with an STS session token (+{STS_TOKEN_BYTES} B, assumed)": lifecycle_units(
            traced, indexes, sts_url
        ),
    }
    return {
        "writes": len(traced),
        "item_bytes_per_write": [item_size(new) for _, new in traced],
        "units": {k: {"wcu": w, "gsi_wcu": g, "total": w + g} for k, (w, g) in variants.items()},
    }


def requests_per_op(tally: Tally, files: int, only_phase: str | None = None) -> dict[str, float]:
    """Calls per file by service and operation, every step included unless `only_phase`."""
    calls: dict[str, float] = defaultdict(float)
    for (ph, service, op, _), n in tally.requests.items():
        if only_phase is None or ph == only_phase:
            calls[f"{service} {op}"] += n / files
    return {k: round(v, 3) for k, v in sorted(calls.items())}


def op_latency_ms(tally: Tally) -> dict[str, float]:
    """Mean milliseconds per call, by service and operation (client side, emulator included)."""
    calls: dict[tuple[str, str], int] = defaultdict(int)
    for (_, service, op, _), n in tally.requests.items():
        calls[(service, op)] += n
    return {
        f"{service} {op}": round(1000 * seconds / calls[(service, op)], 1)
        for (service, op), seconds in sorted(tally.seconds.items())
        if calls[(service, op)]
    }


HEADER = (
    f"{'workers':>7} {'interval':>8} {'done':>11} {'queue s':>7} {'wall s':>7} {'files/s':>7}"
    f" {'speedup':>7} {'ddb/s':>6} {'moto cpu':>8} {'ddbl cpu':>8} {'client':>6} {'polls':>5}"
    f" {'latency s':>9}"
)


def print_run(r: RunResult, base: RunResult | None) -> None:
    speedup = f"{base.wall_seconds / r.wall_seconds:7.2f}" if base else f"{'-':>7}"
    print(
        f"{r.workers:>7} {r.interval_s:>7}s {r.completed:>5}/{r.files:<5} {r.queue_seconds:>7.1f}"
        f" {r.wall_seconds:>7.1f} {r.completed / r.wall_seconds:>7.1f} {speedup}"
        f" {r.dynamodb_ops_per_s:>6.0f} {r.emulator_cpu_pct:>7.0f}% {r.dynamodb_cpu_pct:>7.0f}%"
        f" {r.client_cpu_pct:>5.0f}%"
        f" {r.polls:>5} {r.latency_seconds:>9.2f}"
    )


def _run_json(r: RunResult, base: RunResult | None) -> dict[str, Any]:
    return {
        "workers": r.workers,
        "interval_s": r.interval_s,
        "files": r.files,
        "completed": r.completed,
        "status": r.status,
        "polls": r.polls,
        "queue_seconds": r.queue_seconds,
        "wall_seconds": r.wall_seconds,
        "files_per_s": round(r.completed / r.wall_seconds, 1),
        "speedup": round(base.wall_seconds / r.wall_seconds, 2) if base else None,
        "latency_seconds": r.latency_seconds,
        "check_seconds_max": r.check_seconds_max,
        "emulator_cpu_pct": r.emulator_cpu_pct,
        "dynamodb_local_cpu_pct": r.dynamodb_cpu_pct,
        "client_cpu_pct": r.client_cpu_pct,
        "dynamodb_ops_per_s": r.dynamodb_ops_per_s,
        "op_latency_ms": op_latency_ms(r.tally),
        "requests_per_op": requests_per_op(r.tally, r.files),
        "worker_requests_per_op": requests_per_op(r.tally, r.files, only_phase="worker"),
        "errors": {" ".join(k): n for k, n in r.tally.errors.items()},
        "totals": totals(r.tally, r.files),
    }


def scale_out(day: Day, counts: list[int], interval_s: int, capacity: bool) -> dict[str, Any]:
    """One run per worker count; the last one polls at ~0.7 x the previous run's wall time."""
    print(HEADER)
    runs: list[RunResult] = []
    for n, workers in enumerate(counts):
        last = capacity and n == len(counts) - 1 and runs
        interval = max(2, math.ceil(0.7 * runs[-1].wall_seconds)) if last else interval_s
        runs.append(day.run(workers, interval))
        print_run(runs[-1], runs[0] if n else None)
    out: dict[str, Any] = {"scale_out": [_run_json(r, runs[0]) for r in runs]}
    if capacity and len(runs) > 1:
        cap = runs[-1]
        out["capacity_run"] = {
            **_run_json(cap, runs[0]),
            "per_file": per_file(cap.tally, cap.files),
        }
        out["job_item"] = item_report(cap.job_item)
        out["job_item"]["variants"] = item_variants(
            cap.traced, day.meter.indexes(day.settings.jobs_table)
        )
    return out


def latency_runs(day: Day, intervals: list[int], workers: int) -> list[dict[str, Any]]:
    """Small batches polled every `interval` seconds: how long after the last file it completes."""
    results = []
    for interval in intervals:
        r = day.run(workers, interval)
        print_run(r, None)
        results.append(_run_json(r, None))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--workers", default="1,2,4,8", help="worker threads per run")
    parser.add_argument(
        "--interval", type=int, default=10, help="poll interval of the scale-out runs, s"
    )
    parser.add_argument("--no-capacity-run", action="store_true", help="last run: same interval")
    parser.add_argument("--latency-intervals", default="1,2", help="short poll intervals, s")
    parser.add_argument("--latency-files", type=int, default=100)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    quiet_logs()
    counts = [int(n) for n in args.workers.split(",") if n]
    latency_intervals = [int(n) for n in args.latency_intervals.split(",") if n]
    info = machine()
    print(
        f"batch day: {args.files} files of {FILE_BYTES} B, {info['cores']} cores, moto {info['moto']}"
    )
    out: dict[str, Any] = {"files": args.files, "file_bytes": FILE_BYTES}
    with local_stack() as stack:
        out["emulator_reference"] = emulator_reference(stack)
        print(f"emulator reference: {out['emulator_reference']}")
        with StubProvider(
            stack.clients, stack.public_key_pem, stack.provider_token, specs(args.files)
        ) as stub:
            out.update(
                scale_out(
                    Day(stack, stub, args.files), counts, args.interval, not args.no_capacity_run
                )
            )
        if latency_intervals:
            print(f"batch latency: {args.latency_files} files, 4 workers")
            with StubProvider(
                stack.clients, stack.public_key_pem, stack.provider_token, specs(args.latency_files)
            ) as stub:
                day = Day(stack, stub, args.latency_files, first_date=20)
                out["latency_runs"] = latency_runs(day, latency_intervals, workers=4)
    print_figures(out)
    write_json(args.json, out)
    return 0


def specs(files: int) -> list[StubFileSpec]:
    """`files` tiny files, CBC and GCM alternating."""
    return [
        StubFileSpec(f"f{i:05d}", FILE_BYTES, CIPHER_CBC if i % 2 else CIPHER_GCM)
        for i in range(files)
    ]


def print_figures(out: dict[str, Any]) -> None:
    """Per-file requests and capacity of the capacity run, and the job item's size."""
    cap = out.get("capacity_run")
    if cap:
        t, pf = cap["totals"], cap["per_file"]
        print(
            f"capacity run: {cap['workers']} workers, poll interval {cap['interval_s']}s, {cap['polls']} polls"
        )
        print("requests per file:")
        for name, n in pf["requests"].items():
            print(f"  {name:<45} {n:8.3f}")
        print("capacity units per file:")
        for name, n in pf["capacity"].items():
            print(f"  {name:<45} {n:8.3f}")
        print(
            "completion checks (job items read, RCU):",
            [(p["job_items_read"], p["job_rcu"]) for p in pf["per_poll"]],
        )
        print(
            f"per file: {t['job_writes']:.2f} job writes + {t['batch_writes']:.3f} batch writes"
            f" (seed {SEED_WRITES_PER_FILE} + amortized), {t['wcu']:.2f} WCU + {t['gsi_wcu']:.2f} GSI WCU"
            f" (seed {SEED_WCU_PER_FILE} WCU), {t['rcu']:.2f} RCU (seed {SEED_RCU_PER_FILE} for checks);"
            f" completion checks {t['completion_job_rcu']:.2f} RCU of jobs (target <= 1:"
            f" {verdict(t['completion_job_rcu'] <= 1)}) + {t['completion_batch_rcu']:.3f} RCU of the batch"
        )
        print("mean ms per call:", cap["op_latency_ms"])
    item = out.get("job_item")
    if item:
        print(
            f"job item (completed): {item['bytes']} B = {item['wcu_per_write']} WCU per write;"
            f" sizes after each write: {item['variants']['item_bytes_per_write']}"
        )
        print("one job's writes, table WCU + GSI WCU:")
        for name, units in item["variants"]["units"].items():
            print(f"  {name:<55} {units['wcu']:>3} + {units['gsi_wcu']:>3} = {units['total']:>3}")


if __name__ == "__main__":
    raise SystemExit(main())

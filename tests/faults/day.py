"""A reliability day behind the fault proxies: `dlpipe worker` processes and the real flow
(under the durable SDK's local runner) reach DynamoDB, S3 and SQS only through a `FaultyAws`;
the invariant checker reads the emulators directly. Each worker's stdout (its per-file EMF
metric documents) goes to a file of its own."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import ENV_LOG_LEVEL, Settings
from dlpipe.domain.outage import OutageBackoff
from dlpipe.local.stub.server import StubProvider
from tests.e2e.test_worker_kit import WORKER, WorkerProcess, wait_until, worker_env
from tests.faults.rules import FaultPlan
from tests.faults.stack import FaultyAws
from tests.reliability.invariant import DayFacts, InvariantViolation
from tests.reliability.rig import Rig, Stopwatch

FILE_DOWNLOADS = "FileDownloads"  # the per-file metric (dlpipe.metrics.FILE_DOWNLOADS)


class MeteredWorker(WorkerProcess):
    """A `dlpipe worker` child whose stdout (EMF documents) is kept in `metrics_path`."""

    def __init__(self, env: dict[str, str], log_path: Path, *args: str) -> None:
        self.log_path = log_path
        self.metrics_path = log_path.with_suffix(".emf")
        with log_path.open("wb") as log, self.metrics_path.open("wb") as out:
            self.process = subprocess.Popen(  # stopped by PID in stop()
                [*WORKER, "--wait-seconds", "1", *args], env=env, stdout=out, stderr=log
            )

    def file_metrics(self) -> list[dict[str, Any]]:
        """The FileDownloads documents written so far."""
        documents = []
        for line in self.metrics_path.read_text(errors="replace").splitlines():
            try:
                document = json.loads(line)
            except ValueError:
                continue
            if isinstance(document, dict) and FILE_DOWNLOADS in document:
                documents.append(document)
        return documents


@dataclass
class DayRun:
    """What one day behind the proxies did."""

    seconds: float
    result: dict[str, Any]
    facts: DayFacts | None
    violation: str | None  # the invariant checker's message, if it failed
    metrics: list[dict[str, Any]]  # the day's FileDownloads documents
    plan: FaultPlan

    def metric_file_ids(self) -> list[str]:
        """FileIDs of the FileDownloads documents, sorted, repeats kept."""
        return sorted(str(d.get("FileID")) for d in self.metrics)

    def figures(self) -> dict[str, Any]:
        """The run's figures for the report."""
        return {
            "day_s": self.seconds,
            "status": self.result.get("status"),
            "counts": self.facts.counts() if self.facts else None,
            "invariant": "held" if self.violation is None else self.violation[:300],
            "metric_documents": len(self.metrics),
            "injected": dict(sorted(_injected(self.plan).items())),
        }


def _injected(plan: FaultPlan) -> dict[str, int]:
    found: dict[str, int] = {}
    for _, service, operation, fault in plan.log:
        key = f"{fault} {service}.{operation}"
        found[key] = found.get(key, 0) + 1
    return found


@contextmanager
def metered_workers(
    rig: Rig, stub: StubProvider, env: dict[str, str], count: int, lease_s: int, name: str
) -> Iterator[list[MeteredWorker]]:
    """`count` worker processes on `env` (the proxies'), started and ready; killed on exit."""
    workers: list[MeteredWorker] = []
    with ExitStack() as stack:
        stack.callback(lambda: [w.stop() for w in workers])
        for n in range(count):
            worker_vars = worker_env(
                env, rig.provisioned, rig.queues.url, rig.key_file, stub=stub,
                lease_seconds=lease_s, **{ENV_LOG_LEVEL: "INFO"},
            )  # fmt: skip
            workers.append(MeteredWorker(worker_vars, rig.workdir / f"{name}-{n}.log"))
        for worker in workers:
            wait_until(lambda w=worker: "worker.started" in w.event_names(), 60, "a worker")
        yield workers


class ProxiedDays:
    """Workers and the flow behind one pair of proxies, for one or more days in a row, each
    day under its own plan (the workers stay up between days: their start is not timed)."""

    def __init__(
        self, rig: Rig, stub: StubProvider, *, workers: int, lease_s: int, name: str = "day"
    ) -> None:
        self.rig, self.stub = rig, stub
        self.faulty = FaultyAws(rig.aws_env, FaultPlan([]))
        self._workers, self._lease_s, self._name = workers, lease_s, name
        self._stack = ExitStack()
        self.pool: list[MeteredWorker] = []

    def __enter__(self) -> ProxiedDays:
        with ExitStack() as stack:
            stack.enter_context(self.faulty.running())
            env = self.faulty.environment()
            self.pool = stack.enter_context(
                metered_workers(self.rig, self.stub, env, self._workers, self._lease_s, self._name)
            )
            self.clients = AwsClients(Settings.from_env(env))
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *_: object) -> None:
        self._stack.close()

    def run(
        self,
        plan: FaultPlan,
        date: str,
        *,
        polls: int,
        interval_s: int = 1,
        outage: OutageBackoff | None = None,
    ) -> DayRun:
        """Run `date` under `plan` (its windows start now); time the day, gather its metrics,
        then check the invariant (a violation is kept in `violation`, for the caller to
        record, then assert)."""
        expected = self.stub.expected(date)
        self.faulty.use(plan)
        clock = Stopwatch()
        result = self.rig.run_day(
            self.rig.flow(self.stub, clients=self.clients), date, polls=polls,
            interval_s=interval_s, outage=outage,
        )  # fmt: skip
        seconds = clock.seconds
        _settle(self.pool, set(expected), timeout_s=60.0)
        metrics = [d for w in self.pool for d in w.file_metrics() if d.get("FileID") in expected]
        facts, violation = None, None
        try:
            facts = self.rig.check_day(date, result["batch_id"], expected)
        except (InvariantViolation, KeyError) as exc:
            violation = str(exc)
        return DayRun(seconds, result, facts, violation, metrics, plan)


def _settle(pool: list[MeteredWorker], files: set[str], timeout_s: float) -> None:
    """A worker writes a file's metric just after completing it: give the last ones a moment.
    Returns once every file has one or after `timeout_s` (a missing metric is the caller's
    finding, not a timeout)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if files <= {d.get("FileID") for w in pool for d in w.file_metrics()}:
            return
        time.sleep(0.1)

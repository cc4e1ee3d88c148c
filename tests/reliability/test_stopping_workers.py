"""Stopping workers: many idle workers are stopped at once (a deploy, a scale-in, `--exit-when-idle`)
while messages arrive. Their open long polls still receive; a message received after the stop
must be processed, not handed from one stopping worker to the next until SQS dead-letters it."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.download_queue import DownloadQueue
from dlpipe.config import Settings
from dlpipe.domain.cipher_format import CIPHER_CBC
from dlpipe.domain.messages import decode_message
from dlpipe.domain.model import JobStatus
from dlpipe.entrypoints.worker import Worker, WorkerOptions
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.download.service import DownloadService
from tests.e2e.test_worker_kit import send, wait_until
from tests.integration.test_downloader_kit import queue_files
from tests.provider_support import StubFactory
from tests.reliability.rig import (
    Rig,
    Stopwatch,
    events_of,
    stopping_all,
    unique_day,
    unique_entity,
)

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
# 80 messages, each one received by a stopping worker: one per worker a round, in 10 rounds
# (each round lasts about a long poll, so the rounds are the scenario's time).
WORKERS, ROUNDS, PER_ROUND = 8, 10, 8
WAIT_S = 1  # each worker's long poll: short, so a round lasts about a second
# Messages arrive one by one while the stopping workers' polls are open: the round's 8 within
# 0.4 s of the stop, well inside the 1 s polls.
ARRIVAL_GAP_S = 0.05
MAX_RECEIVE = 5
# The soak version: `dlpipe worker` processes with the default 20 s long poll, SIGTERM to all.
SOAK_WORKERS, SOAK_ROUNDS, SOAK_PER_ROUND, SOAK_WAIT_S, SOAK_GAP_S = 8, 3, 4, 20, 0.5


class Receives:
    """Hooks on the workers' SQS client: receives still open, and each message's receive count
    as SQS reports it (ApproximateReceiveCount, asked for on every ReceiveMessage)."""

    def __init__(self, clients: AwsClients) -> None:
        self.open = 0
        self.counts: Counter[str] = Counter()  # FileID -> highest ApproximateReceiveCount seen
        self._lock = threading.Lock()
        events = clients.sqs.meta.events
        events.register("before-parameter-build.sqs.ReceiveMessage", self._ask_for_count)
        events.register("before-call.sqs.ReceiveMessage", self._opened)
        events.register("after-call.sqs.ReceiveMessage", self._closed)

    def _ask_for_count(self, params: dict[str, Any], **_: Any) -> None:
        params["MessageSystemAttributeNames"] = ["ApproximateReceiveCount"]

    def _opened(self, **_: Any) -> None:
        with self._lock:
            self.open += 1

    def _closed(self, parsed: dict[str, Any], **_: Any) -> None:
        with self._lock:
            self.open -= 1
            for message in parsed.get("Messages", []):
                file_id = decode_message(message["Body"]).file_id
                count = int(message["Attributes"]["ApproximateReceiveCount"])
                self.counts[file_id] = max(self.counts[file_id], count)

    def all_open(self, n: int) -> bool:
        """True while at least `n` receives are waiting on SQS."""
        with self._lock:
            return self.open >= n


def run_workers(workers: list[Worker]) -> list[threading.Thread]:
    """Run each worker's `run` (the code path of `dlpipe worker`) on a thread of its own."""
    threads = [
        threading.Thread(target=w.run, name=f"stop-{n}", daemon=True) for n, w in enumerate(workers)
    ]
    for thread in threads:
        thread.start()
    return threads


def stop_round(
    rig: Rig,
    clients: AwsClients,
    services: list[DownloadService],
    receives: Receives,
    file_ids: list[str],
) -> None:
    """Start idle workers, stop them all at once, then send `file_ids` one by one while their
    last long polls are still open; wait until every worker has returned from `run`."""
    options = WorkerOptions(wait_seconds=WAIT_S, grace_s=10.0)
    workers = [Worker(s, DownloadQueue(clients.sqs, rig.queues.url), options) for s in services]
    threads = run_workers(workers)
    wait_until(lambda: receives.all_open(len(workers)), 30, "every worker to be in a long poll")
    for worker in workers:
        worker.request_stop("deploy")
    for file_id in file_ids:
        send(rig.clients, rig.queues.url, file_id)
        time.sleep(ARRIVAL_GAP_S)
    for thread in threads:
        thread.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a stopped worker did not return"


def drain(rig: Rig, clients: AwsClients, service: DownloadService) -> None:
    """One more worker, until the queue has been empty for a second: what no stopping worker
    received (sent after every poll had ended) is processed too."""
    options = WorkerOptions(wait_seconds=WAIT_S, exit_when_idle_s=1.0)
    Worker(service, DownloadQueue(clients.sqs, rig.queues.url), options).run()


def dead_letters(rig: Rig) -> list[str]:
    """FileIDs of the messages in the test's DLQ."""
    found = rig.clients.sqs.receive_message(
        QueueUrl=rig.queues.dlq_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
    ).get("Messages", [])
    return [decode_message(m["Body"]).file_id for m in found]


def test_idle_workers_stopped_together_process_what_their_last_polls_receive(
    make_rig: Any, stub_factory: StubFactory, figures: Any
) -> None:
    """8 idle workers stopped at once while 8 messages arrive, 10 rounds: every message is
    received once and completed, nothing reaches the DLQ (maxReceiveCount 5)."""
    rig = make_rig(visibility_s=30, max_receive=MAX_RECEIVE)
    entity, day = unique_entity(), unique_day()
    stub = stub_factory(
        [StubFileSpec(f"{entity}{n}", 100, CIPHER_CBC) for n in range(ROUNDS * PER_ROUND)]
    )
    expected = queue_files(stub, rig.jobs(), day)
    file_ids = sorted(expected)
    clients = AwsClients(Settings.from_env())  # the workers' own, with the hooks
    receives = Receives(clients)
    services = [rig.service(stub, lease_seconds=30, clients=clients) for _ in range(WORKERS)]
    clock = Stopwatch()
    for n in range(ROUNDS):
        stop_round(rig, clients, services, receives, file_ids[n * PER_ROUND : (n + 1) * PER_ROUND])
    after_stop = len(receives.counts)  # every message of a round is sent after its stop
    drain(rig, clients, services[0])
    jobs = {f: rig.jobs().require(f) for f in file_ids}
    dead = dead_letters(rig)
    figures(
        workers=WORKERS,
        rounds=ROUNDS,
        messages=len(file_ids),
        received_after_the_stop=after_stop,
        receive_counts=dict(sorted(Counter(receives.counts.values()).items())),
        dead_letters=len(dead),
        seconds=clock.seconds,
    )
    assert after_stop >= ROUNDS  # the scenario happened: stopped workers did receive
    assert dead == []
    assert {f: n for f, n in receives.counts.items() if n > 1} == {}
    assert {f: j.status for f, j in jobs.items() if j.status is not JobStatus.COMPLETED} == {}


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_worker_processes_with_20_s_polls_stopped_together_dead_letter_nothing(
    make_rig: Any, stub_factory: StubFactory, figures: Any
) -> None:
    """8 `dlpipe worker` processes (20 s long polls) get SIGTERM at once while 4 messages arrive,
    3 rounds: each exits 0, every job completes, nothing reaches the DLQ (maxReceiveCount 5)."""
    rig = make_rig(visibility_s=30, max_receive=MAX_RECEIVE)
    entity, day = unique_entity(), unique_day()
    count = SOAK_ROUNDS * SOAK_PER_ROUND
    specs = [StubFileSpec(f"{entity}{n}", 100, CIPHER_CBC) for n in range(count)]
    stub = stub_factory(specs)
    file_ids = sorted(queue_files(stub, rig.jobs(), day))
    clock, processes = Stopwatch(), []
    for n in range(SOAK_ROUNDS):
        started = [
            rig.worker_process(
                stub, f"r{n}w{k}", "--wait-seconds", str(SOAK_WAIT_S), lease_seconds=30
            )
            for k in range(SOAK_WORKERS)
        ]
        processes += started
        with stopping_all(started):
            wait_until(
                lambda: all("worker.started" in p.event_names() for p in started),  # noqa: B023
                90,
                "every worker process to start",
            )
            time.sleep(1)  # their first long polls are open: 19 s of them are left
            for process in started:
                os.kill(process.pid, signal.SIGTERM)
            for file_id in file_ids[n * SOAK_PER_ROUND : (n + 1) * SOAK_PER_ROUND]:
                send(rig.clients, rig.queues.url, file_id)
                time.sleep(SOAK_GAP_S)
            codes = [p.wait(SOAK_WAIT_S + 30) for p in started]
        assert codes == [0] * SOAK_WORKERS
    completed_by_stopping = [e for e in events_of(processes) if e["event"] == "job.completed"]
    drain(rig, rig.clients, rig.service(stub, lease_seconds=30))
    statuses = {f: rig.jobs().require(f).status for f in file_ids}
    dead = dead_letters(rig)
    figures(
        processes=SOAK_WORKERS,
        rounds=SOAK_ROUNDS,
        messages=len(file_ids),
        completed_by_stopping_processes=len(completed_by_stopping),
        dead_letters=len(dead),
        seconds=clock.seconds,
    )
    assert dead == []
    assert {f: s for f, s in statuses.items() if s is not JobStatus.COMPLETED} == {}

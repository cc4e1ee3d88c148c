"""Scenario 7: load. A day of many small files through worker threads completes with the
invariant, and the AWS calls it costs per file stay bounded (counted by botocore hooks)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.domain.schema import BATCH_SHARDS, STATUS_SHARDS
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.publish import StubFileSpec
from tests.provider_support import StubFactory
from tests.reliability.rig import (
    CallCounter,
    Rig,
    Stopwatch,
    counted_clients,
    unique_day,
    unique_entity,
)
from tests.support import own_table

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
LEASE_S = 30
# Upper bounds per file, about twice what a run measures (RELIABILITY.md has the figures):
# a worker's GetItem, claim, fence (a GetItem on a recent lease) and completion; a HeadObject
# and a PutObject; the poller's PutItem plus its share of BatchGetItem / UpdateItem over the
# polls.
MAX_WORKER_DYNAMODB_PER_FILE = 8
MAX_WORKER_S3_PER_FILE = 4
MAX_POLLER_DYNAMODB_PER_FILE = 3
# The poller's index Queries go by polls, not files: a poll counts the batch on every
# BatchIndex shard (two Queries a shard: available, and downloading..failed) and looks for
# its stale claims and stale available jobs on every StatusIndex shard (48 Queries); once
# nothing is pending, one Query a BatchIndex shard names the small day's files (16 more, once).
# A day of a few files pays them all the same. Twice a poll's, like the bounds above (a run
# measured 64.3 a poll over 3 polls).
QUERIES_PER_POLL = 2 * BATCH_SHARDS + 2 * STATUS_SHARDS
MAX_POLLER_QUERIES_PER_POLL = 2 * QUERIES_PER_POLL


@pytest.fixture
def provisioned(provisioned: Provisioned, clients: AwsClients) -> Iterator[Provisioned]:
    """The session's tables and queues, but a jobs table of the test's own: the poller's
    Queries a poll are counted, and the sweeper's pages grow with any stale job that other
    tests left in the shared table (seen: 97 Queries a poll against a bound of 96)."""
    with own_table(clients) as name:
        yield replace(provisioned, jobs_table=name)


def run_load(
    rig: Rig, stub_factory: StubFactory, figures: Any, *, files: int, threads: int, polls: int
) -> None:
    """Run `files` small files through `threads` worker threads; check and measure."""
    entity = unique_entity()
    stub = stub_factory(
        [
            StubFileSpec(f"{entity}{i}", 64 + (i * 997) % 4096, CIPHER_GCM if i % 2 else CIPHER_CBC)
            for i in range(files)
        ]
    )
    day = unique_day()
    published = Stopwatch()
    expected = stub.expected(day)
    publish_s = published.seconds
    workers, poller = CallCounter(), CallCounter()
    worker_clients, poller_clients = counted_clients(workers), counted_clients(poller)
    services = [
        rig.service(stub, lease_seconds=LEASE_S, clients=worker_clients)
        for _ in range(threads // 4)
    ]
    clock = Stopwatch()
    with rig.thread_workers(services, concurrency=4, sqs=worker_clients.sqs):
        result = rig.run_day(rig.flow(stub, clients=poller_clients), day, polls=polls)
        run_s = clock.seconds
    facts = rig.check_day(
        day,
        result["batch_id"],
        expected,
    )
    poller_queries = poller.calls["dynamodb.Query"]
    per_file = {
        "worker_dynamodb": workers.total("dynamodb") / files,
        "worker_s3": workers.total("s3") / files,
        "worker_sqs": workers.total("sqs") / files,
        "poller_dynamodb_but_queries": (poller.total("dynamodb") - poller_queries) / files,
        "poller_sqs": poller.total("sqs") / files,
    }
    queries_per_poll = poller_queries / max(1, result["polls"])
    figures(
        files=files,
        threads=threads,
        publish_s=publish_s,
        run_s=run_s,
        files_per_s=round(files / run_s, 1),
        polls=result["polls"],
        per_file={k: round(v, 2) for k, v in per_file.items()},
        poller_queries_per_poll=round(queries_per_poll, 1),
    )
    assert result["status"] == "completed"
    assert facts.by_status(JobStatus.COMPLETED) == set(expected)
    assert per_file["worker_dynamodb"] <= MAX_WORKER_DYNAMODB_PER_FILE
    assert per_file["worker_s3"] <= MAX_WORKER_S3_PER_FILE
    assert per_file["poller_dynamodb_but_queries"] <= MAX_POLLER_DYNAMODB_PER_FILE
    assert result["polls"] >= 1
    assert queries_per_poll <= MAX_POLLER_QUERIES_PER_POLL


def test_a_small_load_completes_with_bounded_calls_per_file(
    rig: Rig, stub_factory: StubFactory, figures: Any
) -> None:
    """40 small files, 4 threads: all completed and verified; calls per file within bounds."""
    run_load(rig, stub_factory, figures, files=40, threads=4, polls=120)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_five_hundred_files_complete_with_bounded_calls_per_file(
    rig: Rig, stub_factory: StubFactory, figures: Any
) -> None:
    """500 small files, 8 threads: all completed and verified; calls per file within bounds."""
    run_load(rig, stub_factory, figures, files=500, threads=8, polls=900)

"""Scenario 12: a day at size. 20,000 tiny files end to end: the stub lists
them in pages of 1,000, the real flow runs under the SDK's local runner (real-time waits) and
queues them in 1,000-entry chunk steps, and `dlpipe worker` processes download, decrypt and
publish every one. The invariant holds, and the batch item, read back from DynamoDB Local and
sized by DynamoDB's rules, stays under 400 KB: past SETS_MAX_FILES it holds counts only, so
it does not grow with the day at all (asserted: under 4 KB).

No accommodation for the emulator any more: the flow runs on its defaults (the fan-out sends
as fast as it writes, the sweeper's re-send bound is its 30 minutes). Before moto's SQS was
patched (dlpipe/local/moto_sqs.py), a queue 20,000 deep cost seconds per call and a send
racing a delete could be lost, so this scenario held the fan-out back at 200 queued messages
and re-sent lost jobs after 120 s. The queue's depth is only sampled now (every 2 s), to
print how deep it got.

Soak only (`make soak`): a 1,500-file version takes minutes on 2 cores, not the 40 s a test
of the normal suite may. DLPIPE_SCALE_DAY_FILES overrides the file count (a quick look).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from dlpipe.config import ENV_LOG_LEVEL
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import SETS_MAX_FILES, JobStatus
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_worker_kit import WorkerProcess
from tests.provider_support import StubFactory
from tests.reliability.rig import Rig, Stopwatch, stopping_all, unique_day, unique_entity

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e

FILES = int(os.environ.get("DLPIPE_SCALE_DAY_FILES", "20000"))
PAGE_SIZE = 1000  # the listing's pages, as large days are served
WORKERS, CONCURRENCY = 2, 4  # `dlpipe worker --concurrency 4` processes
LEASE_S = 120
POLL_S = 10
ITEM_LIMIT_BYTES = 400 * 1024  # DynamoDB's item size limit
COUNTS_ONLY_BYTES = 4096  # a batch item with no per-file data is a few hundred bytes


def number_size(text: str) -> int:
    """DynamoDB's size of a number: 1 byte per two significant digits, plus 1."""
    digits = format(Decimal(text).normalize(), "f").lstrip("-").replace(".", "").strip("0")
    return math.ceil(max(len(digits), 1) / 2) + 1


def value_size(value: dict[str, Any]) -> int:
    """DynamoDB's size of one AttributeValue (S/N/B, sets, BOOL/NULL, lists, maps)."""
    ((kind, data),) = value.items()
    sizes: dict[str, Callable[[Any], int]] = {
        "S": lambda d: len(d.encode()),
        "N": number_size,
        "B": len,
        "BOOL": lambda _: 1,
        "NULL": lambda _: 1,
        "SS": lambda d: sum(len(s.encode()) for s in d),
        "NS": lambda d: sum(number_size(n) for n in d),
        "BS": lambda d: sum(len(b) for b in d),
        "L": lambda d: 3 + sum(1 + value_size(v) for v in d),
        "M": lambda d: 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in d.items()),
    }
    return sizes[kind](data)


def item_size(item: dict[str, Any]) -> int:
    """DynamoDB's item size: every attribute name's UTF-8 length plus its value's size."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


class DepthSampler:
    """Reads the queue's depth (visible + in flight + delayed) every 2 s; keeps the deepest."""

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self._sqs, self._queue_url = sqs, queue_url
        self.deepest = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DepthSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        names: Any = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        while not self._stop.wait(2.0):
            got = self._sqs.get_queue_attributes(QueueUrl=self._queue_url, AttributeNames=names)
            self.deepest = max(self.deepest, sum(int(v) for v in got["Attributes"].values()))


def tiny_files(entity: str, files: int) -> list[StubFileSpec]:
    """`files` files of 1-64 bytes, CBC and GCM alternating."""
    return [
        StubFileSpec(f"{entity}{i:05d}", 1 + (i * 37) % 64, CIPHER_GCM if i % 2 else CIPHER_CBC)
        for i in range(files)
    ]


@pytest.mark.soak
@pytest.mark.timeout(4 * 3600)
def test_soak_a_twenty_thousand_file_day_completes_and_its_batch_item_stays_small(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    """20,000 tiny files, paged listing, chunked fan-out, 2 worker processes: every file
    completed and verified, the invariant holds, and the batch item is under 400 KB."""
    rig = make_rig(visibility_s=LEASE_S, max_receive=5)
    entity, day = unique_entity(), unique_day()
    stub = stub_factory(tiny_files(entity, FILES), page_size=PAGE_SIZE)
    published = Stopwatch()
    expected = stub.expected(day)
    publish_s = published.seconds
    processes: list[WorkerProcess] = []
    clock = Stopwatch()
    with stopping_all(processes), DepthSampler(rig.clients.sqs, rig.queues.url) as depth:
        for n in range(WORKERS):
            processes.append(
                rig.worker_process(
                    stub,
                    f"worker-{n}",
                    "--concurrency",
                    str(CONCURRENCY),
                    lease_seconds=LEASE_S,
                    **{ENV_LOG_LEVEL: "WARNING"},
                )
            )
        polls = 3600 // POLL_S + math.ceil(FILES / 2 / POLL_S)  # ~2 files/s at worst
        result = rig.run_day(rig.flow(stub), day, polls=polls, interval_s=POLL_S)
        run_s = clock.seconds
    checked = Stopwatch()
    facts = rig.check_day(
        day,
        result["batch_id"],
        expected,
        objects_prefix=entity,
    )
    check_s = checked.seconds
    item = rig.clients.dynamodb.get_item(
        TableName=rig.provisioned.batches_table, Key={"BatchID": {"S": result["batch_id"]}}
    )["Item"]
    item_bytes = item_size(item)
    print(f"batch item {result['batch_id']}: {item_bytes} bytes ({sorted(item)})")
    figures(
        files=FILES,
        publish_s=publish_s,
        run_s=run_s,
        files_per_s=round(FILES / run_s, 1),
        polls=result["polls"],
        deepest_queue=depth.deepest,
        check_s=check_s,
        batch_item_bytes=item_bytes,
        batch_item_attributes=sorted(item),
        counts=facts.counts(),
    )
    assert result["status"] == "completed"
    assert facts.by_status(JobStatus.COMPLETED) == set(expected)
    assert item_bytes < ITEM_LIMIT_BYTES
    if FILES > SETS_MAX_FILES:
        assert item_bytes < COUNTS_ONLY_BYTES, f"the batch item grows with the day: {sorted(item)}"

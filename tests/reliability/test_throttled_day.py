"""Scenario 13: a day on a DynamoDB that throttles as AWS does, at a scaled-down limit.

The throughput proxy (dlpipe/local/ddb_throughput.py) refuses any table or index partition
key value past LIMIT_WCU a second (BURST_S of unused capacity kept), as AWS refuses one past
1,000. A real local day (the durable poller, the stub provider, worker threads) runs behind
it. With the jobs' indexes sharded as designed, no key comes near the limit: the day
completes and nothing is refused. With one BatchIndex shard (the seed's design: one key a
batch, 5 WCU of every file of the day on it) the same day is throttled on that key alone;
that variant runs in `make soak`, and is what this check was seen failing on.

The proxy stands in front of the session's DynamoDB Local (the day's keys are its own: a
date no other test uses), not a stack started for the test: a second moto and JVM cost more
than the day.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import ENV_ENDPOINT_URL_DYNAMODB
from dlpipe.domain import shards
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.schema import BATCH_INDEX, BATCH_SHARDS
from dlpipe.local.day import DayOptions, run_day
from dlpipe.local.ddb_limits import ThroughputLimits
from dlpipe.local.ddb_throughput import ThroughputProxy
from dlpipe.local.stack import LocalStack
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_local_day import stack

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
__all__ = ["stack"]  # the fixture (the session emulator as a LocalStack), shared as is

FILES = 40
LIMIT_WCU = 5  # a second, per partition key value: AWS's 1,000 scaled to a laptop's day
BURST_S = 10  # so a key holds 50 WCU of unused capacity; AWS keeps 300 s
# Fixed dates no other test uses (unique_day draws from the year 3000 on), so that the day's
# FileIDs fall on the same shards every run: the sharded day's at most 4 files (20 WCU) on a
# BatchIndex key, as the 2026-03-03 of a stack of its own gave.
SHARDED_DAY, ONE_KEY_DAY = "2900-03-03", "2901-03-03"


@contextmanager
def _throttled(stack: LocalStack) -> Iterator[tuple[LocalStack, ThroughputProxy]]:
    """`stack` with DynamoDB reached only through a throughput proxy at LIMIT_WCU a key, in
    front of its DynamoDB Local: what LocalAws starts, and points the environment at, when
    DLPIPE_LOCAL_PARTITION_WCU is set."""
    limits = ThroughputLimits(wcu=LIMIT_WCU, rcu=None, burst_seconds=BURST_S)
    with pytest.MonkeyPatch.context() as patch:
        proxy = ThroughputProxy(stack.emulator.dynamodb.endpoint_url, limits).start()
        try:
            patch.setenv(ENV_ENDPOINT_URL_DYNAMODB, proxy.endpoint_url)
            urls = {**stack.settings.service_endpoint_urls, "dynamodb": proxy.endpoint_url}
            settings = replace(stack.settings, service_endpoint_urls=urls)
            yield replace(stack, clients=AwsClients(settings), settings=settings), proxy
        finally:
            proxy.stop()


def _day(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch, batch_shards: int, date: str
) -> dict[str, Any]:
    monkeypatch.setattr(shards, "BATCH_SHARDS", batch_shards)
    specs = [StubFileSpec(f"thr{n:03d}", 512, str(CIPHER_GCM)) for n in range(FILES)]
    with _throttled(stack) as (throttled, proxy):
        # Polling up to 10 minutes: the check is what is refused, not how fast a busy machine is.
        options = DayOptions(date=date, workers=4, poll_interval_seconds=1, max_polls=600)
        report, _ = run_day(throttled, specs, options)
        heat = proxy.heat()
    refused = {(r.resource, r.key): r.throttled for r in heat if r.throttled}
    batch_keys = [r for r in heat if r.resource.endswith(f"/{BATCH_INDEX}")]
    unverified = [(f.file_id, f.status, f.error_message) for f in report.files if not f.verified]
    why = f"{report.status}, handoff {report.result.get('handoff_problem')}, {unverified[:3]}"
    return {"ok": report.ok, "why": why, "refused": refused, "batch_keys": batch_keys, "heat": heat}


@pytest.mark.timeout(900)
def test_a_day_on_the_sharded_indexes_is_never_throttled(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch, figures: Any
) -> None:
    """40 files at 5 WCU/s a key: the day completes and verifies, 0 writes refused, and the
    hottest BatchIndex key took at most 50 WCU (what its burst holds)."""
    day = _day(stack, monkeypatch, BATCH_SHARDS, SHARDED_DAY)
    hottest = max(day["heat"], key=lambda r: r.wcu)
    figures(
        files=FILES,
        refused=sum(day["refused"].values()),
        hottest=f"{hottest.resource} {hottest.key}",
        hottest_wcu=hottest.wcu,
        batch_keys=len(day["batch_keys"]),
    )
    assert day["ok"], day["why"]
    assert day["refused"] == {}
    assert len(day["batch_keys"]) > 1
    assert max(r.wcu for r in day["batch_keys"]) <= LIMIT_WCU * BURST_S


@pytest.mark.soak
@pytest.mark.timeout(900)
def test_the_same_day_on_one_batch_key_is_throttled_on_that_key_alone(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch, figures: Any
) -> None:
    """One BatchIndex shard, as the seed keyed it: the day's one key takes 5 WCU of every
    file and is refused; no other key is."""
    day = _day(stack, monkeypatch, 1, ONE_KEY_DAY)
    figures(files=FILES, refused={f"{res} {key}": n for (res, key), n in day["refused"].items()})
    assert {resource for resource, _ in day["refused"]} == {r.resource for r in day["batch_keys"]}
    assert day["refused"]

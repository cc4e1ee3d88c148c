"""Every per-batch and per-file metric carries the feed as its `Feed` dimension: the feed's
name, "default" for the default feed, read from the batch or job (never an ID)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from dlpipe import metrics
from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.config import Settings
from dlpipe.domain.cipher_format import CIPHER_CBC
from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.model import (
    Batch,
    BatchStatus,
    FileJob,
    JobStatus,
    make_batch_id,
    make_file_id,
)
from dlpipe.domain.redaction import forget_secrets, register_secret
from dlpipe.services.download.file_metrics import FileFinish, record_finished
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.fakes.provider import FakeLister, descriptor
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable, FakeQueue
from tests.support import ManualClock

DAY = "2026-02-28"
UUID = "00000000-0000-4000-8000-000000000001"
TOKEN = "tok-CANARY-0123456789abcdefghij"


@pytest.fixture
def lines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The EMF lines emitted during the test."""
    emitted: list[str] = []
    monkeypatch.setattr(metrics, "_sink", emitted.append)
    return emitted


def _documents(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def _flow(clock: ManualClock) -> tuple[BatchFlowService, FakeJobsTable, FakeBatchesTable]:
    jobs, batches = FakeJobsTable(clock), FakeBatchesTable(clock)
    flow = build_flow(
        Settings(),
        jobs=jobs,
        batches=batches,
        provider=FakeLister([descriptor("accounts", DAY)]),
        queue=FakeQueue(),
        clock=clock,
        new_uuid=lambda: UUID,
    )
    return flow, jobs, batches


def _queued_batch(batches: FakeBatchesTable, clock: ManualClock, feed: str) -> Batch:
    now = iso_from_ms(clock.now_ms())
    batch = Batch(
        batch_id=make_batch_id(DAY, UUID, feed),
        polling_date=DAY,
        status=BatchStatus.QUEUED,
        start_time=now,
        created_at=now,
        updated_at=now,
        ttl_epoch_s=0,
        expected_count=0,
        queued_count=0,
        feed=feed,
    )
    return batches.create(batch)


def _feeds_of(documents: list[dict[str, Any]], name: str) -> list[str]:
    """The Feed of each document carrying metric `name`, checked as CloudWatch reads it."""
    found = []
    for document in documents:
        if name not in document:
            continue
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        assert ["Feed"] in directive["Dimensions"], directive["Dimensions"]
        found.append(document["Feed"])
    return found


def test_every_per_batch_and_per_file_metric_has_a_feed_dimension_set() -> None:
    """The catalogue publishes each batch and file metric under at least one set with Feed."""
    for name in (*metrics.BATCH_METRICS, *metrics.FILE_METRICS):
        assert any("Feed" in s for s in metrics.CATALOG[name]), name


def test_a_batch_metric_keeps_its_all_feeds_total_next_to_the_per_feed_one(
    lines: list[str],
) -> None:
    """BatchFailed is published with no dimensions (every feed) and by Feed: [[], ["Feed"]]."""
    metrics.emit({"BatchFailed": (1, metrics.COUNT)}, dimensions={"Feed": "vendor-b"})
    (document,) = _documents(lines)
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert directive["Dimensions"] == [[], ["Feed"]]
    assert document["Feed"] == "vendor-b"


def test_a_named_feeds_batch_ending_failed_counts_under_its_feed(
    lines: list[str],
) -> None:
    """fail_batch on vendor-b's batch: BatchFailed with Feed=vendor-b."""
    clock = ManualClock()
    flow, _, batches = _flow(clock)
    batch = _queued_batch(batches, clock, "vendor-b")
    flow.fail_batch(batch.batch_id, "provider_unavailable: down")
    assert _feeds_of(_documents(lines), "BatchFailed") == ["vendor-b"]


def test_a_named_feeds_batch_ending_completed_counts_under_its_feed(
    lines: list[str],
) -> None:
    """check_completion ends vendor-b's empty batch completed: its four metrics under Feed=vendor-b."""
    clock = ManualClock()
    flow, _, batches = _flow(clock)
    batch = _queued_batch(batches, clock, "vendor-b")
    check = flow.check_completion(batch.batch_id, 1, is_last_poll=False)
    assert check.status == "completed"
    for name in ("BatchCompleted", "FilesCompleted", "FilesFailed", "BatchDurationSeconds"):
        assert _feeds_of(_documents(lines), name) == ["vendor-b"], name


def test_the_default_feeds_day_counts_under_feed_default(
    lines: list[str],
) -> None:
    """The default feed's queued and stuck counts say Feed=default (its keys carry no feed)."""
    clock = ManualClock()
    flow, jobs, _ = _flow(clock)
    batch_id = flow.create_batch(DAY)
    assert flow.fetch_and_queue(batch_id, DAY).done
    flow.sweep(batch_id, jobs.query_by_batch(batch_id, JobStatus.AVAILABLE))
    assert _feeds_of(_documents(lines), "FilesExpected") == ["default"]
    assert _feeds_of(_documents(lines), "StuckJobs") == ["default"]


def _job(feed: str) -> FileJob:
    return FileJob(
        file_id=make_file_id("accounts", DAY, feed),
        batch_id=make_batch_id(DAY, UUID, feed),
        status=JobStatus.COMPLETED,
        entity="accounts",
        download_date=DAY,
        presigned_url="https://files.example.com/a",
        encrypted_aes_key="",
        encoded_aes_iv="",
        cipher=CIPHER_CBC,
        created_at=DAY,
        status_updated_at_ms=0,
        ttl_epoch_s=0,
        attempts=1,
        feed=feed,
    )


@pytest.mark.parametrize("feed", ["default", "vendor-b"])
def test_a_finished_files_document_carries_its_jobs_feed(lines: list[str], feed: str) -> None:
    """record_finished publishes FileDownloads by Feed and Outcome, Feed from the job."""
    record_finished(_job(feed), FileFinish("completed", seconds=2.0, byte_count=10, transfers=1))
    (document,) = _documents(lines)
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert ["Feed", "Outcome"] in directive["Dimensions"]
    assert (document["Feed"], document["Outcome"]) == (feed, "completed")


@pytest.fixture
def registered() -> Iterator[str]:
    """TOKEN registered as the process's own secret, forgotten afterwards."""
    forget_secrets()
    register_secret(TOKEN)
    yield TOKEN
    forget_secrets()


def test_a_token_in_a_dimension_or_a_property_is_masked_in_the_document(
    lines: list[str], registered: str
) -> None:
    """Dimension values and string properties are provider text (a feed, an entity, a cause):
    emit masks a registered token and a `Bearer ...` in each; numbers stay as they are."""
    metrics.emit(
        {"BatchFailed": (1, metrics.COUNT)},
        dimensions={"Feed": f"x{registered}"},
        cause=f"echo {registered}; Bearer sekret-abcdef",
        polls=3,
    )
    (line,) = lines
    for leak in (registered[:12], registered[-12:], "sekret-abcdef"):
        assert leak not in line, line
    (document,) = _documents(lines)
    assert (document["Feed"], document["cause"], document["polls"]) == (
        "x***",
        "echo ***; Bearer ***",
        3,
    )

"""A seeded day for the web view's tests: finished batches on the days before, and a running
re-run whose jobs are in every status (through the real table adapters of the ops world)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus
from dlpipe.domain.rules import batch_ttl_epoch_s, job_ttl_epoch_s
from tests.integration.test_ops_fixtures import World
from tests.support import BASE_MS, make_batch

OWNER = "worker-test-1"
# The ops world's clock lies in the far past; DynamoDB Local deletes items whose TTL has passed
# in real time, so the seeded items expire in the far future instead.
_JOB_TTL = job_ttl_epoch_s(BASE_MS // 1000)
_BATCH_TTL = batch_ttl_epoch_s(BASE_MS // 1000)
LEASE_MS = 600_000


@dataclass
class SeededDay:
    """What was seeded: batches by name, the running batch's jobs by status."""

    day: str
    batches: dict[str, Batch] = field(default_factory=dict)
    jobs: dict[JobStatus, list[FileJob]] = field(default_factory=dict)
    stuck: list[FileJob] = field(default_factory=list)

    @property
    def running(self) -> Batch:
        """The day's running re-run, whose files the tests finish."""
        return self.batches["running"]


def _day(world: World, days_before: int) -> str:
    return (date.fromisoformat(world.day) - timedelta(days=days_before)).isoformat()


def _batch(world: World, name: str, day: str, at_ms: int, **changes: object) -> Batch:
    batch = world.batches.create(make_batch(day, now_ms=at_ms, ttl_epoch_s=_BATCH_TTL, **changes))
    world.created_batches.append(batch.batch_id)
    return batch


def _finished(
    status: BatchStatus, expected: int, completed: int, failed: int = 0
) -> dict[str, object]:
    return {
        "status": status,
        "expected_count": expected,
        "queued_count": expected,
        "completed_count": completed,
        "failed_count": failed,
        "error_count": 0,
    }


def seed_day(world: World) -> SeededDay:
    """Batches: completed (D-3), failed then a timed-out re-run (D-2), timeout (D-1), and on D a
    timed-out run then a running re-run with jobs available, downloading (live and stuck),
    completed, failed and error."""
    now = world.clock.now
    seeded = SeededDay(world.day)
    b = seeded.batches
    b["completed"] = _batch(
        world,
        "completed",
        _day(world, 3),
        now - 3 * 86_400_000,
        **_finished(BatchStatus.COMPLETED, 12, 12),
    )
    b["failed"] = _batch(
        world,
        "failed",
        _day(world, 2),
        now - 2 * 86_400_000,
        **_finished(BatchStatus.FAILED, 0, 0),
        error_message="provider_refused: 403 from the listing",
    )
    b["rerun_timeout"] = _batch(
        world,
        "rerun_timeout",
        _day(world, 2),
        now - 2 * 86_400_000 + 3_600_000,
        **_finished(BatchStatus.TIMEOUT, 12, 9, 1),
        timeout_at="2000-01-01T00:00:00+00:00",
    )
    b["timeout"] = _batch(
        world,
        "timeout",
        _day(world, 1),
        now - 86_400_000,
        **_finished(BatchStatus.TIMEOUT, 12, 10, 2),
    )
    b["day_timeout"] = _batch(
        world, "day_timeout", world.day, now - 7_200_000, **_finished(BatchStatus.TIMEOUT, 12, 2, 3)
    )
    b["running"] = _batch(
        world,
        "running",
        world.day,
        now - 3_600_000,
        status=BatchStatus.QUEUED,
        expected_count=12,
        queued_count=12,
    )
    _seed_jobs(world, seeded)
    return seeded


def _seed_jobs(world: World, seeded: SeededDay) -> None:
    now, batch_id = world.clock.now, seeded.running.batch_id

    def job(entity: str, status: JobStatus, **changes: object) -> FileJob:
        made = world.job(entity, batch_id=batch_id, status=status, ttl_epoch_s=_JOB_TTL, **changes)
        seeded.jobs.setdefault(status, []).append(made)
        return made

    for n, entity in enumerate(("accounts", "positions")):
        job(entity, JobStatus.COMPLETED, attempts=1, byte_count=1000 + n, sha256="ab" * 32,
            destination_key=f"{world.day}/{entity}", completed_at="2000-01-01T00:00:00.000+00:00",
            status_updated_at_ms=now - 1_800_000)  # fmt: skip
    job(
        "prices",
        JobStatus.FAILED,
        attempts=5,
        error_message="source_unavailable: S3 answered 503 five times",
    )
    job(
        "trades",
        JobStatus.ERROR,
        attempts=1,
        error_message="tag_mismatch: the GCM tag did not verify",
    )
    job(
        "fx_rates",
        JobStatus.ERROR,
        attempts=1,
        error_message="checksum_mismatch: sha256 differs from the listing",
    )
    for entity in ("orders", "holdings", "ratings", "limits"):
        job(
            entity,
            JobStatus.DOWNLOADING,
            attempts=1,
            lease_owner=OWNER,
            lease_expires_at_ms=now + LEASE_MS,
        )
    stuck = job("margins", JobStatus.DOWNLOADING, attempts=2, lease_owner="worker-gone",
                lease_expires_at_ms=now - 3_000_000, status_updated_at_ms=now - 3_300_000)  # fmt: skip
    seeded.stuck.append(stuck)
    job("benchmarks", JobStatus.AVAILABLE)

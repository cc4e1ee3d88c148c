"""Two weeks of history for the README's pictures, written through the real table adapters
(create, mark_queued, claim, complete, finish...), each write at the moment it pretends to be.

One day is busy: its first run timed out and its re-run is still going, with files completed,
failed, error, downloading (one under an expired lease: stuck) and available. The day before it
failed and is not repaired yet: 12 files completed, 8 `error` (wrong_key: the feed's key changed).
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.config import Settings
from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus, make_batch_id, make_file_id
from dlpipe.domain.outcome import OutcomeTally
from dlpipe.domain.rules import batch_ttl_epoch_s, job_ttl_epoch_s

MINUTE_MS = 60_000
ENTITIES = (
    "accounts", "positions", "trades", "prices", "fx_rates", "holdings", "orders", "settlements",
    "counterparties", "instruments", "corporate_actions", "benchmarks", "ratings", "cash_flows",
    "collateral", "exposures", "limits", "margins", "valuations", "risk_factors",
)  # fmt: skip
# Days before yesterday -> how their runs ended (counts only; the busy day has jobs too).
HISTORY: dict[int, list[tuple[BatchStatus, int, int, str | None]]] = {
    4: [(BatchStatus.FAILED, 0, 0, "provider_refused: 403 Forbidden from the listing"),
        (BatchStatus.COMPLETED, 20, 0, None)],
    8: [(BatchStatus.TIMEOUT, 17, 3, None)],
    # A rerun adopted the one unfinished file: it counts all 20, the day reads 20/20.
    11: [(BatchStatus.TIMEOUT, 19, 1, None), (BatchStatus.COMPLETED, 20, 0, None)],
    2: [],  # the failed day (FAILED_BACK): its run has jobs
}  # fmt: skip
FAILED_BACK = 2


# The named feed's days (the same dates): all complete but one, which timed out.
NAMED_FEED = "vendor-b"
NAMED_FILES = 12
NAMED_HISTORY = {6: (BatchStatus.TIMEOUT, 10, 2, None)}


class MovableClock:
    """The time each seeded write pretends to happen at."""

    def __init__(self, now_ms: int) -> None:
        self.at = now_ms

    def now_ms(self) -> int:
        """The pretended time."""
        return self.at


def _new_batch(
    batches: BatchesTable,
    clock: MovableClock,
    day: str,
    expected: int,
    feed: str = DEFAULT_FEED_NAME,
) -> str:
    batch_id = make_batch_id(day, str(uuid.uuid4()), feed)
    at = iso_from_ms(clock.at)
    ttl = batch_ttl_epoch_s(clock.at // 1000)
    batches.create(Batch(batch_id, day, BatchStatus.INITIATED, at, at, at, ttl, feed=feed))
    batches.mark_queued(batch_id, [], expected_count=expected)
    return batch_id


def _finished_run(
    batches: BatchesTable,
    clock: MovableClock,
    day: str,
    run: tuple[BatchStatus, int, int, str | None],
    feed: str = DEFAULT_FEED_NAME,
) -> None:
    status, completed, unsuccessful, error = run
    day_files = 20 if feed == DEFAULT_FEED_NAME else NAMED_FILES
    expected = 0 if status is BatchStatus.FAILED else day_files
    batch_id = _new_batch(batches, clock, day, expected, feed)
    clock.at += 25 * MINUTE_MS
    batches.record_counts(batch_id, completed=completed, failed=unsuccessful, error=0)
    timeout_at = iso_from_ms(clock.at) if status is BatchStatus.TIMEOUT else None
    batches.finish(batch_id, status, timeout_at=timeout_at, error_message=error)
    clock.at += 60 * MINUTE_MS


def _job(jobs: JobsTable, clock: MovableClock, batch_id: str, day: str, entity: str) -> str:
    file_id = make_file_id(entity, day)
    jobs.create(
        FileJob(
            file_id=file_id, batch_id=batch_id, status=JobStatus.AVAILABLE, entity=entity,
            download_date=day, presigned_url="https://provider.invalid/x?X-Amz-Signature=s",
            encrypted_aes_key="a2V5", encoded_aes_iv="aXY=", cipher="AES-256-GCM",
            created_at=iso_from_ms(clock.at), status_updated_at_ms=clock.at,
            ttl_epoch_s=job_ttl_epoch_s(clock.at // 1000), expected_size=1 << 20,
        )
    )  # fmt: skip
    return file_id


# The busy day's files in the order they end, and how (None: still running or waiting).
_ENDINGS = [JobStatus.COMPLETED] * 7 + [
    JobStatus.ERROR, JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.COMPLETED,
    JobStatus.ERROR, None, None, None, None,
]  # fmt: skip
_ERRORS = {
    JobStatus.ERROR: ["tag_mismatch: the GCM tag did not verify", "checksum_mismatch: sha256 differs from the listing"],
    JobStatus.FAILED: ["source_unavailable: S3 answered 503 after 5 attempts"],
}  # fmt: skip


def _busy_day(
    jobs: JobsTable, batches: BatchesTable, clock: MovableClock, day: str, now: int
) -> tuple[str, str]:
    clock.at = now - 190 * MINUTE_MS
    _finished_run(batches, clock, day, (BatchStatus.TIMEOUT, 6, 2, None))
    clock.at = now - 48 * MINUTE_MS
    batch_id = _new_batch(batches, clock, day, len(_ENDINGS))
    file_ids = [_job(jobs, clock, batch_id, day, e) for e in ENTITIES[: len(_ENDINGS)]]
    errors = {k: list(v) for k, v in _ERRORS.items()}
    stuck = file_ids[len(file_ids) - 4]
    for n, (file_id, ending) in enumerate(zip(file_ids, _ENDINGS, strict=True)):
        owner = f"worker-{n % 3 + 1}"
        if ending is None and n >= len(file_ids) - 2:
            continue  # available: not picked up yet
        clock.at = now - (46 - 3 * n) * MINUTE_MS if ending else now - MINUTE_MS
        if file_id == stuck:
            clock.at = now - 41 * MINUTE_MS  # a worker died holding it: the lease runs out
            owner = "worker-7"
        jobs.claim(file_id, owner, lease_seconds=300)
        clock.at += 90_000
        if ending is JobStatus.COMPLETED:
            jobs.complete(
                file_id,
                owner,
                byte_count=1_048_576 + n,
                sha256=f"{n:064x}",
                destination_key=f"{day}/{file_id}",
            )
        elif ending is not None:
            jobs.finish_unsuccessfully(file_id, owner, ending, errors[ending].pop(0))
    clock.at = now
    ended = [e for e in _ENDINGS if e is not None]
    batches.record_counts(
        batch_id,
        completed=ended.count(JobStatus.COMPLETED),
        failed=ended.count(JobStatus.FAILED),
        error=ended.count(JobStatus.ERROR),
    )
    return batch_id, stuck


# The failed day's `error` files (the rest completed), and what the worker wrote on each.
_WRONG_KEY = {"accounts", "cash_flows", "collateral", "exposures", "fx_rates", "holdings", "limits", "margins"}  # fmt: skip
_WRONG_KEY_ERROR = "wrong_key: could not unwrap the AES key: it was wrapped for a different RSA key, or it is corrupted"


def _failed_day(jobs: JobsTable, batches: BatchesTable, clock: MovableClock, day: str) -> None:
    """A run that ended failed: its files downloaded, 8 of them `error` (wrong_key)."""
    batch_id = _new_batch(batches, clock, day, len(ENTITIES))
    tally = OutcomeTally()
    for n, entity in enumerate(ENTITIES):
        file_id = _job(jobs, clock, batch_id, day, entity)
        owner = f"worker-{n % 3 + 1}"
        clock.at += MINUTE_MS
        jobs.claim(file_id, owner, lease_seconds=300)
        clock.at += 40_000
        if entity in _WRONG_KEY:
            jobs.finish_unsuccessfully(file_id, owner, JobStatus.ERROR, _WRONG_KEY_ERROR)
            tally.add_jobs([(_WRONG_KEY_ERROR, file_id)])
        else:
            key = f"{day}/{file_id}"
            jobs.complete(
                file_id, owner, byte_count=1 << 20, sha256=f"{n:064x}", destination_key=key
            )
    clock.at += 5 * MINUTE_MS
    error = len(_WRONG_KEY)
    batches.record_counts(batch_id, completed=len(ENTITIES) - error, failed=0, error=error)
    batches.finish(batch_id, BatchStatus.FAILED, outcome=tally.summary())


def seed_history(clients: AwsClients, settings: Settings, yesterday: str) -> tuple[str, str, str]:
    """Seed the thirteen days before `yesterday` and one dead letter; return the busy day (the
    day before it), the FileID of its stuck claim and the failed day (the day before that)."""
    now = datetime.now(UTC)
    now_ms = int(now.timestamp() * 1000)
    clock = MovableClock(now_ms)
    jobs = JobsTable(clients.dynamodb, settings.jobs_table, clock)
    batches = BatchesTable(clients.dynamodb, settings.batches_table, clock)
    last = date.fromisoformat(yesterday)
    for back in range(13, 1, -1):
        day = (last - timedelta(days=back)).isoformat()
        clock.at = int(
            (
                datetime.fromisoformat(day).replace(tzinfo=UTC) + timedelta(days=1, hours=2)
            ).timestamp()
            * 1000
        )
        if back == FAILED_BACK:
            _failed_day(jobs, batches, clock, day)
        for run in HISTORY.get(back, [(BatchStatus.COMPLETED, 20, 0, None)]):
            _finished_run(batches, clock, day, run)
        # A second vendor's feed beside the default: its own row group in the grid.
        named = NAMED_HISTORY.get(back, (BatchStatus.COMPLETED, 12, 0, None))
        _finished_run(batches, clock, day, named, NAMED_FEED)
    busy = (last - timedelta(days=1)).isoformat()
    rerun, stuck = _busy_day(jobs, batches, clock, busy, now_ms)
    if settings.dlq_url:  # a message that outlived its receives: what `dlpipe dlq show` lists
        body = encode_message(JobMessage(stuck, rerun))
        clients.sqs.send_message(QueueUrl=settings.dlq_url, MessageBody=body)
    return busy, stuck, (last - timedelta(days=FAILED_BACK)).isoformat()

"""Read-only use cases: stuck jobs, a batch's jobs, a day's batches and the day's status.

Every read is a GetItem or an indexed Query (StatusIndex, BatchIndex, PollingDateIndex).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from dlpipe.config import ConfigError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.freshness import Freshness
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus
from dlpipe.domain.statuses import (
    ERROR_JOB_STATUSES,
    FAILED_JOB_STATUSES,
    JOB_STATUSES_BY_PROGRESS,
    PENDING_JOB_STATUSES,
)
from dlpipe.domain.transitions import is_stuck
from dlpipe.domain.waiting import FeedQueues, Starving, WaitingWork
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.errors import NoBatchForDateError, UnknownFeedError
from dlpipe.services.ops.feed_filter import (
    FeedChoice,
    chosen,
    feed_order,
    feeds_shown,
    record_feed,
)
from dlpipe.services.ops.feed_queues import feed_queue_urls, feed_queues, queue_depths
from dlpipe.services.ops.freshness import day_freshness
from dlpipe.services.ops.manifest_ports import ManifestReader
from dlpipe.services.ops.ports import OpsBatches, OpsJobs
from dlpipe.services.ops.revisions import (
    DayRevisions,
    RevisionFacts,
    day_revisions,
    latest_revisions,
)
from dlpipe.services.ops.waiting import idle_seconds, starving, waiting_work

STUCK_LIMIT = 100
# The statuses a job may be stuck in (pending), as operators read them: claims, then jobs
# nobody picked up.
STUCK_STATUSES = tuple(s for s in JOB_STATUSES_BY_PROGRESS if s in PENDING_JOB_STATUSES)


@dataclass(frozen=True)
class BatchSummary:
    """A batch and the live count of its jobs by status (one BatchIndex query)."""

    batch: Batch
    counts: dict[str, int]


@dataclass(frozen=True)
class Carried:
    """An ended rerun's completed files under earlier batches of its date and feed: counted
    by it (summarize), never moved (a rerun adopts unfinished files only)."""

    completed: int
    under: tuple[str, ...]  # the date's earlier batches of its feed, oldest first

    def to_dict(self) -> dict[str, Any]:
        """Stable keys for `--json`."""
        return {"completed": self.completed, "under": list(self.under)}


@dataclass(frozen=True)
class StuckJobs:
    """Jobs of one status unchanged since `cutoff_ms`; `truncated` when more exist."""

    status: JobStatus
    cutoff_ms: int
    jobs: list[FileJob]
    truncated: bool
    unreadable: list[str]  # FileIDs of index items that are not valid jobs


@dataclass(frozen=True)
class BatchJobs:
    """The first jobs of a batch (BatchIndex order), of one status if given; `truncated`
    when there are more."""

    batch_id: str
    status: JobStatus | None
    jobs: list[FileJob]
    truncated: bool


@dataclass(frozen=True)
class FeedDay:
    """One feed's part of a polling date: its batches and, if it has a deadline, its freshness."""

    feed: str
    batches: list[BatchSummary]
    freshness: Freshness | None = None
    revision: RevisionFacts | None = None  # its latest batch's, when that is a revision


@dataclass(frozen=True)
class DayStatus:
    """One screen about a polling date: its batches (of the chosen feeds), stuck jobs and the
    DLQ depth; `feeds` holds the batches again, grouped by feed."""

    polling_date: str
    batches: list[BatchSummary]
    stuck: list[StuckJobs]
    dlq_depth: int | None
    waiting: WaitingWork | None = None  # the download queue's depth and oldest waiting job
    idle_s: int | None = None  # set when no worker takes the waiting work (domain.waiting)
    feeds: list[FeedDay] = field(default_factory=list)
    feed: FeedChoice = None  # the feed chosen; None: every feed
    queues: FeedQueues | None = None  # each feed's queue and available jobs (all dates)
    starving: Starving | None = None  # set when one feed's queue holds the threads (domain.waiting)
    revisions: DayRevisions = field(default_factory=DayRevisions)  # the day's revision batches
    carried: dict[str, Carried] = field(default_factory=dict)  # by BatchID (carried_files)


def stuck_jobs(
    ops: OpsContext,
    status: JobStatus,
    cutoff_ms: int,
    limit: int | None = STUCK_LIMIT,
    feed: FeedChoice = None,
) -> StuckJobs:
    """Jobs in `status` last changed before `cutoff_ms` (StatusIndex), oldest first; of
    `feed` only if given (filtered from the read's `limit` jobs, which `truncated` flags)."""
    probe = None if limit is None else limit + 1  # one more tells us whether we cut the list
    unreadable: list[str] = []
    found = list(
        ops.jobs().query_by_status(
            status,
            older_than_ms=cutoff_ms,
            limit=probe,
            on_unreadable=lambda exc: unreadable.append(exc.key),
        )
    )
    truncated = limit is not None and len(found) > limit
    return StuckJobs(status, cutoff_ms, chosen(feed, found[:limit]), truncated, unreadable)


def batch_jobs(ops: OpsContext, batch_id: str, status: JobStatus | None, limit: int) -> BatchJobs:
    """At most `limit` jobs of `batch_id` (BatchIndex): a 100,000-file batch is not read whole."""
    found = list(ops.jobs().query_by_batch(batch_id, status, limit=limit + 1))
    return BatchJobs(batch_id, status, found[:limit], truncated=len(found) > limit)


def summarize(jobs: OpsJobs, batch: Batch) -> BatchSummary:
    """The batch's files by status, one meaning on every screen (README, "status").

    A running batch: its jobs counted live, one BatchIndex COUNT query per status, at any size
    (no job item is returned, only counted). A batch that has ended: the counts its last check
    stored on its item (CompletedCount, FailedCount, ErrorCount over ExpectedCount), which the
    grid shows too. They count the files its listing named wherever their jobs sit: a rerun's
    completed files include those it left completed in an earlier batch, and a batch whose
    unfinished files a rerun adopted (AdoptedBy) keeps the counts it ended with, though its
    index partition no longer holds them. Its files not finished count `available`."""
    if batch.is_terminal and batch.completed_count is not None:
        return BatchSummary(batch, stored_counts(batch))
    return BatchSummary(batch, {str(s): jobs.count_by_batch(batch.batch_id, s) for s in JobStatus})


def stored_counts(batch: Batch) -> dict[str, int]:
    """An ended batch's files by status as its item stores them (see summarize)."""
    legacy = batch.failed_count is None and batch.error_count is None
    failed = batch.unsuccessful if legacy else batch.failed_count or 0
    error = 0 if legacy else batch.error_count or 0
    counts = dict.fromkeys(map(str, JobStatus), 0)  # nothing holds a claim any more
    counts[JobStatus.AVAILABLE] = batch.pending
    counts[JobStatus.COMPLETED] = batch.completed
    # The item keeps two counts of the unsuccessful: each is shown under its group's first status.
    counts[FAILED_JOB_STATUSES[0]] = failed
    counts[ERROR_JOB_STATUSES[0]] = error
    return counts


def carried_files(
    jobs: OpsJobs, summaries: list[BatchSummary], revisions: DayRevisions
) -> dict[str, Carried]:
    """Per ended batch whose stored completed count is more than its partition holds (one
    BatchIndex COUNT each, of a batch with an earlier one of its feed): how many more, and
    the earlier batches they sit under. A batch a revision replaced is left out (its changed
    files moved on to the revision)."""
    found: dict[str, Carried] = {}
    for n, summary in enumerate(summaries):
        batch = summary.batch
        # Earlier: before it (oldest first), or adopted by it whatever the start times say.
        earlier = tuple(
            s.batch.batch_id
            for i, s in enumerate(summaries)
            if record_feed(s.batch) == record_feed(batch)
            and s.batch.batch_id not in (batch.batch_id, batch.adopted_by)
            and (i < n or s.batch.adopted_by == batch.batch_id)
        )
        stored = batch.is_terminal and batch.completed_count is not None
        if not earlier or not stored or not batch.completed or revisions.by(batch.batch_id):
            continue
        here = jobs.count_by_batch(batch.batch_id, JobStatus.COMPLETED)
        if batch.completed > here:
            found[batch.batch_id] = Carried(batch.completed - here, earlier)
    return found


def day_batches(
    batches: OpsBatches,
    polling_date: str,
    status: BatchStatus | None = None,
    feed: FeedChoice = None,
) -> list[Batch]:
    """The date's batches (PollingDateIndex: every feed's in one Query), oldest first; of
    `feed` only if given."""
    return chosen(feed, batches.query_by_date(polling_date, status))


def no_batch_message(polling_date: str, feed: FeedChoice) -> str:
    """The one line of a date (of a feed) without a batch."""
    of_feed = "" if feed is None or feed == DEFAULT_FEED_NAME else f" of feed {feed}"
    return f"no batch for {polling_date}{of_feed} (has the poller run for it?)"


def day_summaries(
    ops: OpsContext, polling_date: str, *, required: bool, feed: FeedChoice = None
) -> list[BatchSummary]:
    """Every batch of the date (of `feed` if given) with its job counts;
    NoBatchForDateError if `required` and none."""
    found = day_batches(ops.batches(), polling_date, feed=feed)
    if required and not found:
        raise NoBatchForDateError(no_batch_message(polling_date, feed))
    jobs = ops.jobs()
    return [summarize(jobs, batch) for batch in found]


def dlq_depth(ops: OpsContext) -> int | None:
    """Messages waiting in the dead-letter queue, or None if no DLQ is configured."""
    if not ops.settings.dlq_url:
        return None
    return ops.gauge(ops.settings.dlq_url).depth()


def day_status(
    ops: OpsContext, polling_date: str, older_than_s: int, feed: FeedChoice = None
) -> DayStatus:
    """The date's batches and counts, jobs stuck for `older_than_s`, and the DLQ depth; of
    `feed` only if given, else every feed's; the download queues of every feed (all dates)."""
    summaries = day_summaries(ops, polling_date, required=False, feed=feed)
    refuse_unknown_feed(ops, polling_date, feed, summaries)
    batches = [s.batch for s in summaries]
    revisions = revisions_of(ops, batches, read=latest_revisions(batches))
    now_ms = ops.now_ms()
    cutoff_ms = now_ms - older_than_s * 1000
    stuck = []
    for status in STUCK_STATUSES:
        found = stuck_jobs(ops, status, cutoff_ms, feed=feed)
        live = [job for job in found.jobs if is_stuck(job, now_ms)]
        stuck.append(replace(found, jobs=live))
    return DayStatus(
        polling_date=polling_date,
        batches=summaries,
        stuck=stuck,
        dlq_depth=dlq_depth(ops),
        **_waiting_fields(ops),
        feeds=feed_days(ops, polling_date, summaries, feed, revisions),
        feed=feed,
        revisions=revisions,
        carried=carried_files(ops.jobs(), summaries, revisions),
    )


def revisions_of(ops: OpsContext, batches: list[Batch], *, read: set[str]) -> DayRevisions:
    """The revisions among a day's batches (services/ops/revisions.py), the counts of those
    in `read` that lack their event from their manifest (when a bucket is configured)."""
    return day_revisions(batches, lambda: manifest_reader(ops), read=read)


def manifest_reader(ops: OpsContext) -> ManifestReader | None:
    """The day manifests' reader, or None when no destination bucket is configured."""
    try:
        return ops.manifests()
    except ConfigError:
        return None


def refuse_unknown_feed(
    ops: OpsContext, polling_date: str, feed: FeedChoice, summaries: list[BatchSummary]
) -> None:
    """UnknownFeedError when `feed` is neither configured nor seen in the date's batches: a
    screen of it would offer to start a day of a feed that does not exist."""
    if feed is None or feed in ops.feeds or summaries:
        return
    configured = ", ".join(feed_order(ops.feeds))
    raise UnknownFeedError(
        f"feed {feed!r} is not configured and has no batch on {polling_date}"
        f" (configured: {configured})"
    )


def feed_days(
    ops: OpsContext,
    polling_date: str,
    summaries: list[BatchSummary],
    feed: FeedChoice,
    revisions: DayRevisions | None = None,
) -> list[FeedDay]:
    """The date's batches grouped by feed: every feed shown (feeds_shown), with or without a
    batch, each with its freshness when it has a deadline and its latest batch's revision."""
    days = []
    for name in feeds_shown(feed, ops.feeds, [s.batch for s in summaries]):
        mine = [s for s in summaries if record_feed(s.batch) == name]
        fresh = day_freshness(
            ops.feeds,
            name,
            polling_date,
            [s.batch for s in mine],
            now_ms=ops.now_ms(),
            date_offset_days=ops.settings.date_offset_days,
        )
        latest = mine[-1].batch.batch_id if mine else None
        revision = None if revisions is None or latest is None else revisions.of(latest)
        days.append(FeedDay(name, mine, fresh, revision))
    return days


def _waiting_fields(ops: OpsContext) -> dict[str, Any]:
    """The queues read once (a GetQueueAttributes per queue), judged together and by feed."""
    urls = feed_queue_urls(ops)
    depths = queue_depths(ops, urls)
    work = waiting_work(ops, depths)
    queues = feed_queues(ops, urls, depths)
    return {
        "waiting": work,
        "idle_s": idle_seconds(ops, work),
        "queues": queues,
        "starving": starving(ops, queues),
    }

"""A day's page: its batches with live counts, one batch's files, stuck jobs, the DLQ depth."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.model import Batch, FileJob, JobStatus, validate_batch_id, validate_date
from dlpipe.services.ops.advice import DayRepair, ended_batch_repair
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.errors_by_code import ErrorsByCode, errors_by_code
from dlpipe.services.ops.feed_filter import record_feed
from dlpipe.services.ops.queries import BatchSummary, DayStatus, day_status
from dlpipe.ui.cursor import decode_cursor, encode_cursor
from dlpipe.ui.options import (
    BadRequestError,
    NotFoundPageError,
    UiOptions,
    check_page_date,
    parse_feed,
)
from dlpipe.ui.timeline import Timeline, timeline

_STATUS_ORDER = {status: n for n, status in enumerate(JobStatus)}
# The files table's sort keys: each a total order (missing values first), FileID breaks ties.
SORT_KEYS: dict[str, Any] = {
    "file": lambda j: j.file_id,
    "status": lambda j: _STATUS_ORDER[j.status],
    "updated": lambda j: j.status_updated_at_ms,
    "attempts": lambda j: j.attempts,
    "bytes": lambda j: -1 if j.byte_count is None else j.byte_count,
    "error": lambda j: j.error_message or "",
}


@dataclass(frozen=True)
class FilesQuery:
    """What the files table shows: which batch, which status, in what order."""

    batch_id: str | None = None
    status: JobStatus | None = None
    sort: str = "file"
    descending: bool = False
    after: str | None = None  # the page cursor (dlpipe/ui/cursor.py); None: the first page
    feed: str | None = None  # ?feed=: that feed's batches only; None: every feed's


@dataclass(frozen=True)
class DayView:
    """Everything the day's page shows."""

    status: DayStatus
    selected: BatchSummary | None
    query: FilesQuery
    files: list[FileJob]
    truncated: bool
    timeline: Timeline | None
    next_cursor: str | None = None  # the next page of files, if there may be one
    errors: ErrorsByCode | None = None
    # The selected batch has ended: what repairs its unfinished files (a new run of the day,
    # never a requeue, which would leave the batch as it ended).
    ended_repair: DayRepair | None = None

    @property
    def selected_feed(self) -> str | None:
        """The feed of the selected batch (from its BatchID)."""
        return None if self.selected is None else record_feed(self.selected.batch)

    @property
    def live(self) -> bool:
        """True while one of the day's batches has not ended: the page refreshes itself."""
        return any(not s.batch.is_terminal for s in self.status.batches)


def parse_date(text: str) -> str:
    """A YYYY-MM-DD from the URL a page can show (`check_page_date`), or BadRequestError."""
    try:
        return check_page_date(validate_date(text))
    except InvalidIdentifierError as exc:
        raise BadRequestError(str(exc)) from exc


def parse_files_query(args: dict[str, str]) -> FilesQuery:
    """?batch=&status=&sort=&order= from the URL; BadRequestError names what is wrong."""
    batch_id, status = args.get("batch") or None, args.get("status") or None
    sort, order = args.get("sort") or "file", args.get("order") or "asc"
    if batch_id is not None:
        try:
            validate_batch_id(batch_id)
        except InvalidIdentifierError as exc:
            raise BadRequestError(str(exc)) from exc
    if status is not None and status not in set(JobStatus):
        raise BadRequestError(f"status must be one of {', '.join(JobStatus)}, got {status!r}")
    if sort not in SORT_KEYS or order not in ("asc", "desc"):
        raise BadRequestError(f"sort must be one of {', '.join(SORT_KEYS)} with order asc|desc")
    after, feed = args.get("after") or None, parse_feed(args.get("feed"))
    status_value = JobStatus(status) if status else None
    return FilesQuery(batch_id, status_value, sort, order == "desc", after, feed)


def _select(batches: list[BatchSummary], batch_id: str | None, day: str) -> BatchSummary | None:
    if batch_id is None:
        return batches[-1] if batches else None  # the latest run: the one that decides the day
    for summary in batches:
        if summary.batch.batch_id == batch_id:
            return summary
    raise NotFoundPageError(f"no batch {batch_id} on {day}")


def day_view(ops: OpsContext, day: str, query: FilesQuery, options: UiOptions) -> DayView:
    """The day's batches (PollingDateIndex) and counts (BatchIndex COUNT), stuck jobs
    (StatusIndex), the DLQ depth, and the selected batch's files (BatchIndex)."""
    found = day_status(ops, day, options.stuck_older_than_s, query.feed)
    selected = _select(found.batches, query.batch_id, day)
    if selected is None:
        return DayView(found, None, query, [], False, None)
    jobs = ops.jobs()
    batch_id = selected.batch.batch_id
    start = None if query.after is None else decode_cursor(query.after, batch_id, query.status)
    # One page of files (BatchIndex order), sorted on the page; the cursor goes on from it.
    page, after = jobs.page_by_batch(batch_id, query.status, limit=options.files_limit, start=start)
    shown = sorted(page, key=lambda j: j.file_id)
    shown.sort(key=SORT_KEYS[query.sort], reverse=query.descending)
    chart = None
    if start is None and query.status is None and after is None:
        chart = timeline(selected.batch, page, ops.now_ms())  # the whole batch is this page
    elif start is None and query.status is not None:
        probe = options.files_limit + 1  # one more tells us whether the day is too large
        every = list(jobs.query_by_batch(batch_id, limit=probe))
        if len(every) <= options.files_limit:
            chart = timeline(selected.batch, every, ops.now_ms())
    cursor = None if after is None else encode_cursor(after)
    return DayView(
        found,
        selected,
        query,
        shown,
        after is not None,
        chart,
        next_cursor=cursor,
        errors=errors_by_code(jobs, selected),
        ended_repair=_ended_repair(ops, found, selected.batch),
    )


def _ended_repair(ops: OpsContext, found: DayStatus, batch: Batch) -> DayRepair | None:
    if not batch.is_terminal:
        return None
    feed = record_feed(batch)
    day = [s.batch for s in found.batches if record_feed(s.batch) == feed]
    return ended_batch_repair(ops.settings, batch, day)

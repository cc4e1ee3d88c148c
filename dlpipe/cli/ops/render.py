"""Output: tables for people, one JSON document (stable keys) for scripts; both on stdout.

Tables fit the terminal (dlpipe.cli.ops.layout: IDs and timestamps never wrap, the least
useful columns are dropped first; one record's fields give an ID too long for the room
beside the names a line of its own) and show every time in the format for people
(`time_for_people`, `2026-02-28T04:00:00Z`, as the web view does); JSON keeps the format for
storage (`iso_from_ms`, milliseconds). Every value is printed as plain text, never markup.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console, RenderableType

from dlpipe.cli.ops.layout import Column, FieldList, FitTable
from dlpipe.cli.safe_text import plain, visible
from dlpipe.domain.clock import iso_from_ms, ms_from_iso, time_for_people
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import Batch, FileJob
from dlpipe.domain.redaction import url_origin
from dlpipe.log import redact_processor
from dlpipe.services.ops.feed_filter import feed_order, record_feed

if TYPE_CHECKING:
    from dlpipe.services.ops.queries import StuckJobs
    from dlpipe.services.ops.revisions import DayRevisions


class CommandLine(str):
    """A command for the operator to copy: printed alone on its line, never wrapped (a line
    longer than the terminal runs on, and a copied line is the whole command)."""

    __slots__ = ()


def emit(payload: Any, views: Sequence[RenderableType], as_json: bool) -> None:
    """Print `payload` as one JSON document, or the rich `views`."""
    if as_json:
        click.echo(json.dumps(payload, indent=2, sort_keys=True, default=str))
        return
    console = Console(soft_wrap=False)
    for view in views:
        if isinstance(view, CommandLine):
            console.print(plain(view), soft_wrap=True)
            continue
        # A plain string is a line of ours that may quote a record: never markup.
        # crop=False: a table wider than a very narrow terminal keeps its IDs whole (layout).
        console.print(plain(view) if isinstance(view, str) else view, crop=False)


def table(title: str, columns: Sequence[Column | str], rows: Iterable[Sequence[Any]]) -> FitTable:
    """A table that fits the terminal (a bare name is a text column); None cells show as '-'."""
    specs = [c if isinstance(c, Column) else Column(c) for c in columns]
    return FitTable(title, specs, rows)


def iso(epoch_ms: int | None) -> str | None:
    """Epoch ms in the format for storage (ISO 8601, milliseconds, UTC), or None: the JSON form."""
    return None if epoch_ms is None else iso_from_ms(epoch_ms)


def stamp(value: int | str | None) -> str | None:
    """A table's time: epoch ms or stored ISO 8601 text in the format for people; a stored
    text that is no time is shown as it is, escaped."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = ms_from_iso(value)
        except ValueError:
            return visible(value)
    return time_for_people(value)


def job_dict(job: FileJob, now_ms: int) -> dict[str, Any]:
    """Every field of a job, secrets masked, the presigned URL by its origin only, times
    also in ISO 8601."""
    fields = dict(redact_processor(None, "", {**asdict(job), "status": str(job.status)}))
    fields["presigned_url"] = url_origin(job.presigned_url)  # the item keeps it whole
    fields["status_updated_at"] = iso(job.status_updated_at_ms)
    fields["lease_expires_at"] = iso(job.lease_expires_at_ms)
    fields["lease_expired"] = (
        None if job.lease_expires_at_ms is None else job.lease_expires_at_ms <= now_ms
    )
    fields["age_s"] = max(0, (now_ms - job.status_updated_at_ms) // 1000)
    return fields


def lease_text(job: FileJob, now_ms: int) -> str | None:
    """'until T' for a live lease, 'EXPIRED T' for a lapsed one."""
    if job.lease_expires_at_ms is None:
        return None
    word = "until" if job.lease_expires_at_ms > now_ms else "EXPIRED"
    return f"{word} {stamp(job.lease_expires_at_ms)}"


# Kept longest first: what names the job and its state, then when, then the rest.
_JOB_COLUMNS = (
    Column("file id", "id"),
    Column("status"),
    Column("since", "time", drop=1),
    Column("error", drop=2),
    Column("attempts", drop=3),
    Column("lease", "time", drop=4),  # `until <time>`: kept on one line
    Column("batch", "id", drop=5),
    Column("owner", "id", drop=6),
)


# A revision batch's files: what the revision found each (changed, added), after the status.
_REVISED_COLUMN = Column("revised", drop=2)


def jobs_view(
    title: str, jobs: Sequence[FileJob], now_ms: int, *, with_batch: bool = True
) -> FitTable:
    """One row per job: status, since, error, attempts, lease, batch, owner (the batch
    column only `with_batch`: a batch's own listing names it in its title), and a revision
    batch's mark of each (`revised`) when one of them has one."""
    columns = [c for c in _JOB_COLUMNS if with_batch or c.name != "batch"]
    if any(job.revised_as for job in jobs):
        columns.insert(2, _REVISED_COLUMN)
    rows = [[cells[c.name] for c in columns] for cells in (_job_cells(j, now_ms) for j in jobs)]
    return table(f"{title} ({len(jobs)})" if jobs else title, columns, rows)


def _job_cells(job: FileJob, now_ms: int) -> dict[str, object]:
    return {
        "file id": job.file_id,
        "status": job.status,
        "revised": job.revised_as,
        "since": stamp(job.status_updated_at_ms),
        "error": job.error_message,
        "attempts": job.attempts,
        "lease": lease_text(job, now_ms),
        "batch": job.batch_id,
        "owner": job.lease_owner,
    }


def stuck_views(found: StuckJobs, now_ms: int, of_feed: str = "") -> list[RenderableType]:
    """The stuck jobs' table (`of_feed` ends its title), and a line naming index items that
    are not valid jobs."""
    more = " (first only)" if found.truncated else ""
    title = f"{found.status} unchanged since {stamp(found.cutoff_ms)}{of_feed}{more}"
    views: list[RenderableType] = [jobs_view(title, found.jobs, now_ms)]
    if found.unreadable:
        views.append(
            f"skipped {len(found.unreadable)} unreadable item(s): {', '.join(found.unreadable[:20])}"
        )
    return views


# job_dict's fields that hold a time: shown in the tables' one format.
_TIME_FIELDS = frozenset(
    {"created_at", "completed_at", "url_expires_at", "status_updated_at", "lease_expires_at"}
)


# job_dict's fields written for a person to read, wrapped beside the names; every other value
# (an ID, a key, a digest, an owner, a count) is one word, never broken: a named feed's
# BatchID and ListedBy, or a SHA-256, longer than the room beside the names gets its own line.
_TEXT_FIELDS = frozenset({"error_message"})


def job_view(job: FileJob, now_ms: int) -> FieldList:
    """The whole record of one job, one field a row, secrets masked, IDs whole (FieldList)."""
    return FieldList(
        job.file_id,
        (
            (name, stamp(value), "time")
            if name in _TIME_FIELDS
            else (name, value, "text" if name in _TEXT_FIELDS else "id")
            for name, value in sorted(job_dict(job, now_ms).items())
        ),
    )


def batch_dict(
    batch: Batch, counts: dict[str, int] | None = None, revisions: DayRevisions | None = None
) -> dict[str, Any]:
    """A batch's facts and its counts (at any size: not the sets, which a large day lacks);
    `job_counts` from BatchIndex if given; a revision's number, the batch it revises and its
    changed, added and withdrawn counts (null until known), and the revision that replaced
    it, from the day's `revisions`."""
    facts = None if revisions is None else revisions.of(batch.batch_id)
    later = None if revisions is None else revisions.by(batch.batch_id)
    data: dict[str, Any] = {
        "batch_id": batch.batch_id,
        "feed": record_feed(batch),
        "polling_date": batch.polling_date,
        "status": str(batch.status),
        "start_time": batch.start_time,
        "updated_at": batch.updated_at,
        "timeout_at": batch.timeout_at,
        "error_message": batch.error_message,
        "expected_files": batch.expected,
        "completed_files": batch.completed,
        "failed_files": batch.unsuccessful,
        "queued_files": batch.queued_count,
        "sets_truncated": batch.sets_truncated,
        # The jobs table's words: `failed` (transient, retries used up), `error` (permanent).
        "failed_count": batch.failed_count,
        "error_count": batch.error_count,
        "outcome": None if batch.outcome is None else batch.outcome.to_dict(),
        "adopted_by": batch.adopted_by,
        # Why a run withheld the batch's hand-off event (a manifest that no longer verifies).
        "handoff_problem": batch.handoff_problem,
        # A restated day's revision batch (Revision 2, 3, ...), and what replaced this one.
        "created_at": batch.created_at,
        "revision": batch.revision,
        "revises": batch.revises,
        "revision_counts": None if facts is None or facts.counts is None else dict(facts.counts),
        "revised_by": None if later is None else later.batch_id,
        "revised_by_revision": None if later is None else later.revision,
    }
    if counts is not None:
        data["job_counts"] = counts
    return data


# Kept longest first: the status and the job counts, the BatchID (a named feed's is 62
# characters: at 80 columns it goes rather than the counts; its feed and date are the table's
# title), its start, then the rest.
_BATCH_COLUMNS = (
    Column("batch", "id", drop=2),
    Column("status"),
    Column("jobs by status", drop=1),
    Column("start", "time", drop=3),
    Column("expected", drop=4),
    Column("error", drop=5),
    Column("timeout", "time", drop=6),
)


def batches_view(title: str, rows: Sequence[dict[str, Any]]) -> FitTable:
    """One row per batch (rows from batch_dict), with job counts when present."""
    return table(
        title,
        _BATCH_COLUMNS,
        (
            (
                r["batch_id"],
                r["status"],
                _counts_text(r.get("job_counts")),
                stamp(r["start_time"]),
                r["expected_files"],
                r["error_message"],
                stamp(r["timeout_at"]),
            )
            for r in rows
        ),
    )


def feed_title(polling_date: str, feed: str) -> str:
    """A feed's batches table title (the default feed's names no feed: `batches of D`)."""
    of_feed = "" if feed == DEFAULT_FEED_NAME else f", feed {feed}"
    return f"batches of {polling_date}{of_feed}"


def batches_by_feed(
    polling_date: str, rows: Sequence[dict[str, Any]], feed: str | None = None
) -> list[FitTable]:
    """A batches table per feed of `rows` (the default feed first); one empty table titled
    for `feed` (or the default feed) when there is no row."""
    names = feed_order(r["feed"] for r in rows) or [feed or DEFAULT_FEED_NAME]
    return [
        batches_view(feed_title(polling_date, n), [r for r in rows if r["feed"] == n])
        for n in names
    ]


def _counts_text(counts: dict[str, int] | None) -> str | None:
    if counts is None:
        return None
    return " ".join(f"{status}={n}" for status, n in counts.items()) or "none"

"""Output: rich tables for people, one JSON document (stable keys) for scripts; both on stdout."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console, RenderableType
from rich.table import Table

from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.model import Batch, FileJob
from dlpipe.log import redact_processor

if TYPE_CHECKING:
    from dlpipe.services.ops.queries import StuckJobs


def emit(payload: Any, views: Sequence[RenderableType], as_json: bool) -> None:
    """Print `payload` as one JSON document, or the rich `views`."""
    if as_json:
        click.echo(json.dumps(payload, indent=2, sort_keys=True, default=str))
        return
    console = Console(soft_wrap=False)
    for view in views:
        console.print(view)


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Table:
    """A rich table; None cells show as '-'."""
    view = Table(title=title, title_justify="left")
    for column in columns:
        view.add_column(column, overflow="fold")
    for row in rows:
        view.add_row(*("-" if cell is None else str(cell) for cell in row))
    return view


def iso(epoch_ms: int | None) -> str | None:
    """ISO 8601 text for epoch ms, or None."""
    return None if epoch_ms is None else iso_from_ms(epoch_ms)


def job_dict(job: FileJob, now_ms: int) -> dict[str, Any]:
    """Every field of a job, secrets and URL signatures masked, times also in ISO 8601."""
    fields = dict(redact_processor(None, "", {**asdict(job), "status": str(job.status)}))
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
    return f"{word} {iso(job.lease_expires_at_ms)}"


def jobs_view(title: str, jobs: Sequence[FileJob], now_ms: int) -> Table:
    """One row per job: status, age, owner, lease, attempts, error."""
    columns = ("file id", "batch", "status", "since", "owner", "lease", "attempts", "error")
    rows = [
        (
            j.file_id,
            j.batch_id,
            j.status,
            iso(j.status_updated_at_ms),
            j.lease_owner,
            lease_text(j, now_ms),
            j.attempts,
            j.error_message,
        )
        for j in jobs
    ]
    return table(f"{title} ({len(jobs)})", columns, rows)


def stuck_views(found: StuckJobs, now_ms: int) -> list[RenderableType]:
    """The stuck jobs' table, and a line naming index items that are not valid jobs."""
    more = " (first only)" if found.truncated else ""
    title = f"{found.status} unchanged since {iso(found.cutoff_ms)}{more}"
    views: list[RenderableType] = [jobs_view(title, found.jobs, now_ms)]
    if found.unreadable:
        views.append(
            f"skipped {len(found.unreadable)} unreadable item(s): {', '.join(found.unreadable[:20])}"
        )
    return views


def job_view(job: FileJob, now_ms: int) -> Table:
    """The whole record of one job, one field a row, secrets masked."""
    return table(job.file_id, ("field", "value"), sorted(job_dict(job, now_ms).items()))


def batch_dict(batch: Batch, counts: dict[str, int] | None = None) -> dict[str, Any]:
    """A batch's facts and its counts (at any size: not the sets, which a large day lacks);
    `job_counts` from BatchIndex if given."""
    data: dict[str, Any] = {
        "batch_id": batch.batch_id,
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
    }
    if counts is not None:
        data["job_counts"] = counts
    return data


def batches_view(title: str, rows: Sequence[dict[str, Any]]) -> Table:
    """One row per batch (rows from batch_dict), with job counts when present."""
    columns = ["batch", "status", "start", "timeout", "expected", "jobs by status", "error"]
    return table(
        title,
        columns,
        (
            (
                r["batch_id"],
                r["status"],
                r["start_time"],
                r["timeout_at"],
                r["expected_files"],
                _counts_text(r.get("job_counts")),
                r["error_message"],
            )
            for r in rows
        ),
    )


def _counts_text(counts: dict[str, int] | None) -> str | None:
    if counts is None:
        return None
    return " ".join(f"{status}={n}" for status, n in counts.items()) or "none"

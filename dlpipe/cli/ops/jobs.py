"""`dlpipe jobs ...`: find stuck jobs, show one, list a batch's, requeue them."""

from __future__ import annotations

import click
from rich.console import RenderableType

from dlpipe.cli.ops.context import pass_ops
from dlpipe.cli.ops.errors import IncompleteRecoveryError, OpsError
from dlpipe.cli.ops.layout import Column, FitTable
from dlpipe.cli.ops.options import dry_run_option, feed_option, json_option, older_than_option
from dlpipe.cli.ops.param_types import BATCH_ID, FILE_ID
from dlpipe.cli.ops.render import (
    emit,
    iso,
    job_dict,
    job_view,
    jobs_view,
    stuck_views,
    table,
)
from dlpipe.domain.model import SETS_MAX_FILES, JobStatus, batch_polling_date
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.errors import EndedBatchError
from dlpipe.services.ops.feed_filter import FeedChoice
from dlpipe.services.ops.queries import STUCK_STATUSES, batch_jobs, stuck_jobs
from dlpipe.services.ops.recovery import (
    RequeueOutcome,
    RequeueResult,
    requeue_files,
    stuck_file_ids,
)
from dlpipe.services.ops.revisions import WithdrawnFile, withdrawn_files

_STUCK_CHOICE = click.Choice([str(s) for s in STUCK_STATUSES])


@click.group("jobs")
def jobs_group() -> None:
    """Inspect and repair file jobs (StatusIndex, BatchIndex; never a Scan)."""


@jobs_group.command("stuck")
@older_than_option
@click.option("--status", type=_STUCK_CHOICE, default=str(JobStatus.DOWNLOADING), show_default=True)
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@feed_option(every_by_default=True)
@json_option
@pass_ops
def stuck_command(  # noqa: PLR0917 - click passes one argument per option
    ops: OpsContext, older_than_s: int, status: str, limit: int, feed: FeedChoice, as_json: bool
) -> None:
    """Jobs in STATUS unchanged for --older-than, oldest first, with owner and lease (--feed:
    that feed's among the first --limit of all feeds)."""
    now_ms = ops.now_ms()
    found = stuck_jobs(ops, JobStatus(status), now_ms - older_than_s * 1000, limit, feed)
    payload = {
        "status": status,
        "feed": feed,
        "older_than_s": older_than_s,
        "cutoff": iso(found.cutoff_ms),
        "truncated": found.truncated,
        "unreadable": found.unreadable,
        "jobs": [job_dict(job, now_ms) for job in found.jobs],
    }
    emit(payload, stuck_views(found, now_ms, "" if feed is None else f" (feed {feed})"), as_json)


@jobs_group.command("show")
@click.argument("file_id", type=FILE_ID)
@json_option
@pass_ops
def show_command(ops: OpsContext, file_id: str, as_json: bool) -> None:
    """The whole record of FILE_ID (URL signatures and keys masked)."""
    job = ops.jobs().require(file_id)
    emit(job_dict(job, ops.now_ms()), [job_view(job, ops.now_ms())], as_json)


@jobs_group.command("list")
@click.option("--batch", "batch_id", type=BATCH_ID, required=True, help="BatchID.")
@click.option("--status", type=click.Choice([str(s) for s in JobStatus]), default=None)
# A day within the batch item's set cap (SETS_MAX_FILES) lists whole by default.
@click.option("--limit", type=click.IntRange(1), default=SETS_MAX_FILES, show_default=True)
@json_option
@pass_ops
def list_command(
    ops: OpsContext, batch_id: str, status: str | None, limit: int, as_json: bool
) -> None:
    """The jobs of a batch (BatchIndex), optionally in one status, at most --limit of them;
    a revision batch's marked changed or added, and the files it withdrew (completed in the
    day's earlier batches, WithdrawnBy it) listed after them; a batch that does not exist is
    one line and exit 1, as `jobs show` of an unknown FileID."""
    found = batch_jobs(ops, batch_id, JobStatus(status) if status else None, limit)
    day = ops.batches().query_by_date(_day(batch_id))  # is it a batch, and is it a revision?
    batch = next((b for b in day if b.batch_id == batch_id), None)
    if not found.jobs and batch is None:
        raise OpsError(f"no batch {batch_id!r}: `dlpipe batch show --date {_day(batch_id)}`")
    withdrawn = None
    completed = status is None or JobStatus(status) is JobStatus.COMPLETED  # they stay so
    if batch is not None and batch.revision is not None and completed:
        withdrawn = withdrawn_files(ops.jobs().rows_by_batch, batch, day)[:limit]
    now_ms = ops.now_ms()
    payload = {
        "batch_id": batch_id,
        "status": status,
        "truncated": found.truncated,
        "jobs": [job_dict(j, now_ms) for j in found.jobs],
        "withdrawn": None if withdrawn is None else [w.to_dict() for w in withdrawn],
    }
    more = f" (first {limit}; more with --limit or --status)" if found.truncated else ""
    view = jobs_view(f"jobs of {batch_id}{more}", found.jobs, now_ms, with_batch=False)
    views: list[RenderableType] = [view]
    if withdrawn is not None:
        views.append(_withdrawn_view(batch_id, withdrawn))
    emit(payload, views, as_json)


def _withdrawn_view(batch_id: str, withdrawn: list[WithdrawnFile]) -> FitTable:
    """The files a revision withdrew: each still completed in its batch, its object kept."""
    columns = (Column("file id", "id"), Column("batch", "id", drop=2), Column("object", drop=1))
    rows = [(w.file_id, w.batch_id, w.destination_key) for w in withdrawn]
    kept = f" ({len(rows)}; each still completed in its batch, its object kept)" if rows else ""
    return table(f"withdrawn by {batch_id}{kept}", columns, rows)


@jobs_group.command("requeue")
@click.argument("file_ids", nargs=-1, type=FILE_ID)
@click.option(
    "--stuck",
    is_flag=True,
    help="Requeue expired claims and available jobs unchanged for --older-than.",
)
@older_than_option
@click.option("--force", is_flag=True, help="Take the job from a worker whose lease is still live.")
@feed_option(every_by_default=True)
@dry_run_option
@json_option
@pass_ops
def requeue_command(
    ops: OpsContext,
    *,
    file_ids: tuple[str, ...],
    stuck: bool,
    older_than_s: int,
    force: bool,
    feed: FeedChoice,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Return jobs to `available` and send them to the download queue again (--stuck
    --feed: that feed's stuck jobs only; a FileID names its feed itself)."""
    if bool(file_ids) == stuck:
        raise click.UsageError("give FILEIDs or --stuck (one of the two)")
    if stuck and force:
        raise click.UsageError("--force applies to named FILEIDs only")
    if feed is not None and not stuck:
        raise click.UsageError("--feed applies to --stuck only (a FileID names its feed)")
    targets = stuck_file_ids(ops, older_than_s, feed) if stuck else list(file_ids)
    try:
        results = requeue_files(ops, targets, force=force, dry_run=dry_run, named=not stuck)
    except EndedBatchError as exc:
        raise IncompleteRecoveryError(str(exc)) from exc
    emit(_requeue_payload(results, dry_run), [_requeue_view(results)], as_json)
    _fail_unless_done(results, named=not stuck)


def _day(batch_id: str) -> str:
    return str(batch_polling_date(batch_id, default=""))


def _requeue_payload(results: list[RequeueResult], dry_run: bool) -> dict[str, object]:
    rows = [
        {
            "file_id": r.file_id,
            "outcome": str(r.outcome),
            "previous_status": r.previous_status,
            "batch_id": r.batch_id,
            "detail": r.detail,
        }
        for r in results
    ]
    return {"dry_run": dry_run, "results": rows}


def _requeue_view(results: list[RequeueResult]) -> FitTable:
    columns = (Column("file id", "id"), Column("was", drop=1), Column("outcome"), Column("detail"))
    rows = [(r.file_id, r.previous_status, r.outcome, r.detail) for r in results]
    return table(f"requeue ({len(results)} file(s))", columns, rows)


def _fail_unless_done(results: list[RequeueResult], *, named: bool) -> None:
    """Exit 1 when a named file was not requeued, or any file was not sent."""
    bad = [r for r in results if (named and not r.ok) or r.outcome is RequeueOutcome.NOT_SENT]
    if bad:
        names = ", ".join(f"{r.file_id} ({r.outcome})" for r in bad)
        raise IncompleteRecoveryError(f"{len(bad)} of {len(results)} file(s) not requeued: {names}")

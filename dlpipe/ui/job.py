"""A file's page: its job record (secrets masked) and the claims that record remembers."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dlpipe.domain.clock import iso_from_ms, ms_from_iso, time_for_people
from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import FileJob, JobStatus, batch_polling_date, parse_file_id
from dlpipe.domain.redaction import url_origin
from dlpipe.domain.transitions import lease_live, may_requeue
from dlpipe.log import redact_processor
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import record_feed
from dlpipe.services.ops.recovery import ended_repairs
from dlpipe.ui.options import BadRequestError, NotFoundPageError


@dataclass(frozen=True)
class Event:
    """One moment of the job's life the record keeps."""

    at: str | None
    what: str


@dataclass(frozen=True)
class JobView:
    """The job, its fields as shown, its history, and the repair command if one applies."""

    job: FileJob
    fields: list[tuple[str, str]]
    history: list[Event]
    repair: str | None
    lease_live: bool
    feed: str = DEFAULT_FEED_NAME  # from the FileID
    batch_date: str = ""  # the polling date of its batch, from the BatchID: its day page
    repair_why: str | None = None  # why `repair` is a new run of the day (its batch ended)


def parse_file(text: str) -> str:
    """A FileID from the URL, or BadRequestError."""
    try:
        parse_file_id(text)
    except InvalidIdentifierError as exc:
        raise BadRequestError(str(exc)) from exc
    return text


def _fields(job: FileJob) -> list[tuple[str, str]]:
    masked = redact_processor(None, "", {**asdict(job), "status": str(job.status)})
    masked["presigned_url"] = url_origin(job.presigned_url)  # the item keeps it whole
    shown = {k: "-" if v is None else str(v) for k, v in masked.items()}
    for name, epoch_ms in (
        ("status_updated_at_ms", job.status_updated_at_ms),
        ("lease_expires_at_ms", job.lease_expires_at_ms),
    ):
        if epoch_ms is not None:
            shown[name] = f"{epoch_ms} ({time_for_people(epoch_ms)})"
    shown["ttl_epoch_s"] = f"{job.ttl_epoch_s} ({time_for_people(job.ttl_epoch_s * 1000)})"
    for name in _ISO_FIELDS:
        shown[name] = _for_people(shown[name])
    return sorted(shown.items())


# Stored ISO times (`Z`, or `+00:00` in some stored items), shown in the format for people.
_ISO_FIELDS = ("created_at", "completed_at", "url_expires_at")


def _for_people(text: str) -> str:
    try:
        return time_for_people(ms_from_iso(text))
    except ValueError:
        return text  # '-' (absent) or a value that is no time: shown as stored


def _iso(epoch_ms: int | None) -> str | None:
    return None if epoch_ms is None else iso_from_ms(epoch_ms)


def _history(job: FileJob, now_ms: int) -> list[Event]:
    """What the record remembers, oldest first: it keeps the latest claim and status only."""
    changed_at = _iso(job.status_updated_at_ms)
    events = []
    if job.attempts:
        owner = f"; the latest by {job.lease_owner}" if job.lease_owner else ""
        # A downloading job's last status change is its latest claim; otherwise the claims'
        # times are gone (only their number stays).
        at = changed_at if job.status is JobStatus.DOWNLOADING else None
        events.append(Event(at, f"claimed {job.attempts} time(s){owner}"))
    if job.lease_expires_at_ms is not None:
        word = "the lease runs until" if lease_live(job, now_ms) else "the lease EXPIRED"
        events.append(Event(_iso(job.lease_expires_at_ms), word))
    if job.completed_at:
        size = "" if job.byte_count is None else f": {job.byte_count:,} bytes verified"
        events.append(
            Event(job.completed_at, f"completed{size}, published as {job.destination_key}")
        )
    elif job.error_message:
        events.append(Event(changed_at, f"ended {job.status}: {job.error_message}"))
    elif job.status is not JobStatus.DOWNLOADING and (
        job.attempts or job.status is not JobStatus.AVAILABLE
    ):
        events.append(Event(changed_at, f"status became {job.status}"))
    events.sort(key=lambda e: e.at or "")  # ISO 8601 UTC sorts as time; untimed claims first
    return [Event(job.created_at, "job written by the poller: available"), *events]


def repair_command(job: FileJob, now_ms: int) -> str | None:
    """The CLI command that repairs this job, or None when nothing applies."""
    # What `jobs requeue` would move without --force: any job not completed that nobody holds.
    return f"dlpipe jobs requeue {job.file_id}" if may_requeue(job, now_ms) else None


def job_view(ops: OpsContext, file_id: str) -> JobView:
    """The job by GetItem; NotFoundPageError if there is none."""
    job = ops.jobs().get(parse_file(file_id))
    if job is None:
        raise NotFoundPageError(f"no job {file_id}")
    now_ms = ops.now_ms()
    repair, why, held = repair_command(job, now_ms), None, lease_live(job, now_ms)
    # Any unfinished file, a live claim's too (`requeue --force` would take it): of a batch
    # that has ended, it is repaired by a new run of the day, never by a requeue.
    ended = ended_repairs(ops, [job]).get(job.batch_id) if repair or held else None
    if ended is not None:
        # Requeued, the file would leave its ended batch (and the day) as it is.
        repair, why = ended.command, ended.why
    return JobView(
        job,
        _fields(job),
        _history(job, now_ms),
        repair,
        held,
        feed=record_feed(job),
        # A BatchID that does not parse names no day: the job's download date links instead.
        batch_date=batch_polling_date(job.batch_id, default=job.download_date),
        repair_why=why,
    )

"""A file's page: its job record (secrets masked) and the claims that record remembers."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dlpipe.domain.clock import iso_from_ms
from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.model import FileJob, JobStatus, parse_file_id
from dlpipe.log import redact_processor
from dlpipe.services.ops.context import OpsContext
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


def parse_file(text: str) -> str:
    """A FileID from the URL, or BadRequestError."""
    try:
        parse_file_id(text)
    except InvalidIdentifierError as exc:
        raise BadRequestError(str(exc)) from exc
    return text


def _fields(job: FileJob) -> list[tuple[str, str]]:
    masked = redact_processor(None, "", {**asdict(job), "status": str(job.status)})
    return sorted((k, "-" if v is None else str(v)) for k, v in masked.items())


def _iso(epoch_ms: int | None) -> str | None:
    return None if epoch_ms is None else iso_from_ms(epoch_ms)


def _history(job: FileJob, now_ms: int) -> list[Event]:
    events = [Event(job.created_at, "job written by the poller: available")]
    if job.attempts:
        owner = f"; the latest by {job.lease_owner}" if job.lease_owner else ""
        events.append(Event(None, f"claimed {job.attempts} time(s){owner}"))
    if job.lease_expires_at_ms is not None:
        word = "lease runs until" if job.lease_live(now_ms) else "lease EXPIRED at"
        events.append(Event(_iso(job.lease_expires_at_ms), word))
    events.append(Event(_iso(job.status_updated_at_ms), f"status became {job.status}"))
    if job.completed_at:
        size = "" if job.byte_count is None else f": {job.byte_count:,} bytes verified"
        events.append(
            Event(job.completed_at, f"completed{size}, published as {job.destination_key}")
        )
    if job.error_message:
        events.append(Event(_iso(job.status_updated_at_ms), f"ended with {job.error_message}"))
    return events


def repair_command(job: FileJob, now_ms: int) -> str | None:
    """The CLI command that repairs this job, or None when nothing applies."""
    if job.status in (JobStatus.FAILED, JobStatus.ERROR, JobStatus.AVAILABLE):
        return f"dlpipe jobs requeue {job.file_id}"
    if job.status is JobStatus.DOWNLOADING and not job.lease_live(now_ms):
        return f"dlpipe jobs requeue {job.file_id}"
    return None


def job_view(ops: OpsContext, file_id: str) -> JobView:
    """The job by GetItem; NotFoundPageError if there is none."""
    job = ops.jobs().get(parse_file(file_id))
    if job is None:
        raise NotFoundPageError(f"no job {file_id}")
    now_ms = ops.now_ms()
    return JobView(
        job,
        _fields(job),
        _history(job, now_ms),
        repair_command(job, now_ms),
        job.lease_live(now_ms),
    )

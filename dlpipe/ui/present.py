"""What the templates call: times, error codes, status colours, links that keep the query;
and `shown`, which every value they print passes (redacted, then escaped)."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask, request, url_for
from markupsafe import Markup

from dlpipe.domain.clock import ms_from_iso, time_for_people
from dlpipe.domain.model import BatchStatus, FileJob, JobStatus
from dlpipe.domain.redaction import redact
from dlpipe.domain.statuses import (
    JOB_STATUSES_BY_PROGRESS,
    SUCCESSFUL_BATCH_STATUSES,
    UNSUCCESSFUL_JOB_STATUSES,
)
from dlpipe.domain.text import escape_invisible
from dlpipe.domain.transitions import lease_live

# ErrorMessage starts with a stable code (`tag_mismatch: ...`, dlpipe/domain/download_errors.py).
_ERROR_CODE = re.compile(r"^([a-z][a-z0-9_]*):\s")


def iso(epoch_ms: int | None) -> str:
    """Epoch ms in the format for people (`time_for_people`, as the CLI shows it), or '-'."""
    return "-" if epoch_ms is None else time_for_people(epoch_ms)


def short_time(text: str | None) -> str:
    """A stored ISO 8601 time (`Z`, `+00:00` or another offset; none: UTC) in the format for
    people, or '-'; text that is no time is shown as it is."""
    if not text:
        return "-"
    try:
        return iso(ms_from_iso(text))
    except ValueError:
        return text


def error_code(message: str | None) -> str | None:
    """The stable code an ErrorMessage starts with, or None."""
    match = _ERROR_CODE.match(message or "")
    return match.group(1) if match else None


def error_detail(message: str | None) -> str:
    """The ErrorMessage without its code."""
    code = error_code(message)
    return (message or "")[len(code) + 1 :].strip() if code else (message or "")


def duration_text(seconds: int) -> str:
    """Seconds as the CLI writes a duration: 1d, 2h, 30m or 90s (the largest exact unit)."""
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def span_text(seconds: int) -> str:
    """A wait as '45s', '12m 05s' or '3h 07m'."""
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def lease_text(job: FileJob, now_ms: int) -> str:
    """'until T' for a live lease, 'EXPIRED T' for a lapsed one, '-' without one."""
    if job.lease_expires_at_ms is None:
        return "-"
    word = "until" if lease_live(job, now_ms) else "EXPIRED"
    return f"{word} {iso(job.lease_expires_at_ms)}"


def query_link(**changes: Any) -> str:
    """This page's URL with some query arguments changed (None removes one)."""
    values: dict[str, Any] = {**request.args.to_dict(), **(request.view_args or {})}
    for key, value in changes.items():
        if value is None:
            values.pop(key, None)
        else:
            values[key] = str(value)
    assert request.endpoint is not None
    return url_for(request.endpoint, **values)


def sort_link(key: str, current: str, descending: bool) -> str:
    """The header's link: sort by `key`, flipping the order when it is the current key."""
    order = "asc" if key != current or descending else "desc"
    return query_link(sort=key, order=order)


def shown(value: Any) -> Any:
    """Every `{{ value }}` of every template, before HTML escaping: text through the one
    redaction (dlpipe/domain/redaction.py), then with its invisible characters (controls,
    bidi, zero-width, separators, fillers) written as escapes, the CLI's one set
    (dlpipe/domain/text.py). Markup (the page's own) stays Markup, its invisible characters
    escaped: an escape adds no HTML."""
    if isinstance(value, Markup):
        return Markup(escape_invisible(str(value)))  # noqa: S704 - escapes are [\\xuU0-9a-f]
    return escape_invisible(redact(value)) if isinstance(value, str) else value


def register(app: Flask) -> None:
    """Make the helpers and the statuses and their groups available to every template, and
    pass every value a template shows through `shown` (the template finalizer)."""
    app.jinja_env.finalize = shown
    app.jinja_env.filters.update(
        iso=iso, short_time=short_time, error_code=error_code, error_detail=error_detail
    )
    app.jinja_env.globals.update(
        job_statuses=list(JobStatus),
        job_statuses_by_progress=JOB_STATUSES_BY_PROGRESS,
        unsuccessful_job_statuses=UNSUCCESSFUL_JOB_STATUSES,
        batch_statuses=list(BatchStatus),
        successful_batch_statuses=SUCCESSFUL_BATCH_STATUSES,
        lease_text=lease_text,
        query_link=query_link,
        sort_link=sort_link,
    )

"""`dlpipe batch audit --from D --to D [--feed NAME]`: each date's completed batch and its
manifest checked (dlpipe/services/ops/audit.py); exit 1 with one line per problem."""

from __future__ import annotations

import click

from dlpipe.cli.ops.context import pass_ops
from dlpipe.cli.ops.dates import date_range, resolve_day
from dlpipe.cli.ops.layout import Column
from dlpipe.cli.ops.options import feed_option, json_option
from dlpipe.cli.ops.param_types import DAY
from dlpipe.cli.ops.render import emit, table
from dlpipe.cli.safe_text import visible
from dlpipe.services.ops.audit import AuditDeps, DayCheck, audit_manifests
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import FeedChoice, feeds_shown

MAX_AUDIT_DAYS = 366  # one PollingDateIndex query and one pointer GET a day


@click.command("audit")
@click.option("--from", "first", type=DAY, required=True, help="First date (YYYY-MM-DD).")
@click.option("--to", "last", type=DAY, required=True, help="Last date, inclusive.")
@feed_option(every_by_default=True)
@json_option
@pass_ops
def batch_audit_command(
    ops: OpsContext, *, first: str, last: str, feed: FeedChoice, as_json: bool
) -> None:
    """Per date: a completed batch received every listed file, and its manifest verifies
    (latest.json's version and SHA-256, the Day Completed event's too; each object at its
    version, size and SHA-256; counts as the jobs'); a restated day's every earlier revision's
    manifest too, at the versions it names. Exit 1 if not."""
    now_ms = ops.now_ms()
    try:
        dates = date_range(resolve_day(first, now_ms), resolve_day(last, now_ms), MAX_AUDIT_DAYS)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--from/--to") from exc
    deps = AuditDeps(ops.batches(), ops.jobs(), ops.manifests())
    names = [feed] if feed else _feeds(ops, dates)
    order = {name: i for i, name in enumerate(names)}
    checks = sorted(
        (c for name in names for c in audit_manifests(deps, dates, name)),
        key=lambda c: (c.date, order[c.feed]),
    )
    days = [_audit_dict(c) for c in checks]
    rows = [tuple(d[c.name] for c in _AUDIT_COLUMNS) for d in days]
    emit(
        {"from": dates[0], "to": dates[-1], "feed": feed, "dates": days},
        [table("audit", _AUDIT_COLUMNS, rows)],
        as_json,
    )
    unrun = [c for c in checks if _never_ran(c)]
    lines = [line for check in checks if not _never_ran(check) for line in check.lines()]
    if unrun:
        lines.append(_no_batch_line(unrun, dates))
    for line in lines:
        click.echo(visible(line), err=True)
    if lines:
        raise click.exceptions.Exit(1)


def _feeds(ops: OpsContext, dates: list[str]) -> list[str]:
    """Every feed configured or seen in the dates' batches (one PollingDateIndex query a date)."""
    batches = [b for day in dates for b in ops.batches().query_by_date(day)]
    return feeds_shown(None, ops.feeds, batches)


# The two problems of a feed's date where nothing ran (services/ops/audit.py's words); any
# other problem of such a date (an unreadable latest.json, ...) keeps its own line.
_NOTHING_RAN = {"no completed batch", "manifest missing (no latest.json)"}


def _never_ran(check: DayCheck) -> bool:
    """A feed's date with no batch and no manifest: nothing ran, nothing to detail."""
    return check.batch is None and bool(check.problems) and set(check.problems) <= _NOTHING_RAN


def _no_batch_line(unrun: list[DayCheck], dates: list[str]) -> str:
    """One line for every feed's date that never ran (two lines each were noise): `no batch:
    feed-3 (every date), feed-4 (2026-03-01, 2026-03-02)`."""
    by_feed: dict[str, list[str]] = {}
    for check in unrun:
        by_feed.setdefault(check.feed, []).append(check.date)
    named = [
        f"{feed} ({'every date' if len(days) == len(dates) > 1 else ', '.join(days)})"
        for feed, days in by_feed.items()
    ]
    return f"no batch (nor manifest) for {len(unrun)} feed-date(s): {', '.join(named)}"


# The BatchID (a named feed's is 62 characters) goes first: the counts fit where it does not.
_AUDIT_COLUMNS = (
    Column("date", "time"),
    Column("feed", "id"),
    Column("batch", "id", drop=4),
    Column("status"),
    Column("expected", drop=1),
    Column("completed", drop=2),
    Column("entries", drop=3),
    Column("problems"),
)


def _audit_dict(check: DayCheck) -> dict[str, object]:
    batch = check.batch
    return {
        "date": check.date,
        "feed": check.feed,
        "batch": batch.batch_id if batch else None,
        "status": str(batch.status) if batch else None,
        "expected": batch.expected if batch else None,
        "completed": batch.completed if batch else None,
        "manifest": check.manifest_key,
        "entries": check.entries,
        "problems": len(check.problems),
        "problem_lines": check.lines(),
        "complete": check.ok,
        # A restated day: the pointer's revision, and each manifest it supersedes checked.
        "revision": check.revision,
        "revisions": [r.to_dict() for r in check.revisions],
    }

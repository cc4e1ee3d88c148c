"""`dlpipe handoff wait|show --feed NAME --date D`: a consumer's view of a feed's day
(dlpipe/services/ops/handoff.py). `wait` exits by the day's state (EXIT_CODES), `show`
verifies every object the day's manifest lists and the file lists beside it, and exits 1 on
any problem."""

from __future__ import annotations

import json

import click

from dlpipe.cli.ops.context import pass_ops
from dlpipe.cli.ops.dates import resolve_day
from dlpipe.cli.ops.options import date_option, feed_option, json_option
from dlpipe.cli.safe_text import error_line, visible
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.handoff import (
    DayHandoff,
    DayState,
    HandoffError,
    show_day,
    wait_for_day,
)

# 1 is any other error (an untrustworthy pointer or manifest, AWS, configuration), 2 a usage
# error, as for every command.
EXIT_CODES = {DayState.COMPLETED: 0, DayState.FAILED: 3, DayState.TIMEOUT: 4, DayState.NOT_YET: 5}
MAX_TIMEOUT_S = 7 * 86_400


@click.group("handoff")
def handoff_group() -> None:
    """A consumer's view of a feed's day: is it ready, does its manifest verify?"""


@handoff_group.command("wait")
@feed_option(every_by_default=False)
@date_option(required=True)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, max=MAX_TIMEOUT_S),
    default=0,
    show_default=True,
    metavar="SECONDS",
    help="Wait up to this long for the day to complete or fail (0: look once).",
)
@click.option(
    "--interval",
    "interval_s",
    type=click.FloatRange(min=1, max=3600),
    default=30,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between two looks.",
)
@click.option(
    "--verify",
    is_flag=True,
    help="Answer ready only once the completed day verifies as `handoff show` checks it"
    " (a HEAD of every object); exit 1 naming the first problem if it does not.",
)
@json_option
@pass_ops
def wait_command(
    ops: OpsContext,
    *,
    feed: str,
    day: str,
    timeout_s: float,
    interval_s: float,
    verify: bool,
    as_json: bool,
) -> None:
    """Exit 0 and print the day's manifest URI (and its file list's) once the day completed;
    3 if it failed, 4 if it timed out, 5 if it has no manifest yet."""
    found = wait_for_configured(
        ops, feed, day, timeout_s=timeout_s, interval_s=interval_s, verify=verify
    )
    if as_json:
        click.echo(json.dumps(found.to_dict(), indent=2, sort_keys=True))
    elif found.ready:
        for uri in (found.manifest_uri, found.file_list_uri):
            if uri:
                click.echo(visible(uri))
    else:
        click.echo(error_line(describe(found)), err=True)
    raise click.exceptions.Exit(EXIT_CODES[found.state])


def wait_for_configured(
    ops: OpsContext,
    feed: str,
    day: str,
    *,
    timeout_s: float,
    interval_s: float,
    verify: bool = False,
) -> DayHandoff:
    """`handoff wait`'s look(s) at a configured feed's day (usage error for another feed)."""
    date = resolve_day(day, ops.now_ms())
    configured(ops, feed)
    return wait_on(ops, feed, date, timeout_s=timeout_s, interval_s=interval_s, verify=verify)


def wait_line(ops: OpsContext, feed: str, date: str) -> tuple[int, str]:
    """`dlpipe handoff wait --feed F --date D`'s one look (timeout 0) as its exit code and a
    line naming the command (`dlpipe run --local` ends with one per feed)."""
    command = f"dlpipe handoff wait --feed {feed} --date {date}"
    try:
        found = wait_on(ops, feed, date, timeout_s=0, interval_s=1)
    except click.ClickException as exc:
        return exc.exit_code, f"{command}: exit {exc.exit_code}, {exc.format_message()}"
    code = EXIT_CODES[found.state]
    return code, f"{command}: exit {code}, {describe(found)}"


def wait_on(
    ops: OpsContext,
    feed: str,
    date: str,
    *,
    timeout_s: float,
    interval_s: float,
    verify: bool = False,
) -> DayHandoff:
    """The service's wait on the context's bucket; an untrustworthy pointer or manifest, or
    (`verify`) a completed day that does not verify, is a one-line error, exit 1."""
    reader = ops.manifests()
    bucket = str(ops.settings.destination_bucket)  # manifests() refused an unset one
    try:
        return wait_for_day(
            reader,
            bucket,
            feed,
            date,
            timeout_s=timeout_s,
            interval_s=interval_s,
            verify=verify,
        )
    except HandoffError as exc:
        raise click.ClickException(f"feed {feed}'s day {date}: {exc}") from exc


@handoff_group.command("show")
@feed_option(every_by_default=False)
@date_option(required=True)
@json_option
@pass_ops
def show_command(ops: OpsContext, *, feed: str, day: str, as_json: bool) -> None:
    """The day's manifest, every object it lists checked (version, size, SHA-256), its file
    list and COPY manifest checked against it, and a summary; exit 1 with a line per problem."""
    date = resolve_day(day, ops.now_ms())
    configured(ops, feed)
    bucket = str(ops.settings.destination_bucket or "")
    checked = show_day(ops.manifests(), bucket, feed, date)
    if as_json:
        click.echo(json.dumps(checked.to_dict(), indent=2, sort_keys=True))
    else:
        found = checked.handoff
        counts = found.counts or {}
        rows = [
            ("day", f"{date}, feed {feed}: {found.state}"),
            ("batch", found.batch_id),
            ("manifest", found.manifest_uri),
            ("file list", found.file_list_uri),
            ("counts", ", ".join(f"{k} {v}" for k, v in counts.items()) or None),
            (
                "verified",
                f"{checked.verified} of {checked.entries} objects (version, size, SHA-256)",
            ),
        ]
        for name, value in rows:
            click.echo(visible(f"{name:<10} {'-' if value is None else value}"))
    for problem in checked.problems:
        click.echo(visible(f"{date} {feed}: {problem}"), err=True)
    if checked.problems:
        raise click.exceptions.Exit(1)


def configured(ops: OpsContext, feed: str) -> None:
    """A usage error (exit 2, one line) unless `feed` is one of the configured feeds."""
    if feed not in ops.feeds:
        known = ", ".join(sorted(ops.feeds))
        raise click.BadParameter(
            f"{feed!a} is not a configured feed (configured: {known})",
            ctx=click.get_current_context(silent=True),
            param_hint="'--feed'",
        )


def describe(found: DayHandoff) -> str:
    """One line for people: the day's state, its batch's counts and its manifest's URI."""
    day = f"feed {found.feed}'s day {found.date}"
    if found.state is DayState.NOT_YET:
        return f"{day} has no manifest yet (no latest.json)"
    counts = found.counts or {}
    tally = ", ".join(f"{v} {k}" for k, v in counts.items())
    what = {
        DayState.COMPLETED: "completed",
        DayState.FAILED: "failed",
        DayState.TIMEOUT: "timed out (a repair may still complete it)",
    }[found.state]
    listed = f", file list {found.file_list_uri}" if found.file_list_uri else ""
    return f"{day} {what}: batch {found.batch_id} ({tally}), manifest {found.manifest_uri}{listed}"

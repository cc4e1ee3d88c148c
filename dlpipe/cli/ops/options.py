"""Options shared by the ops commands, and the date every date-less command defaults to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from dlpipe.cli.ops.dates import resolve_day
from dlpipe.cli.ops.param_types import DAY, DURATION, FEED
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import FeedChoice
from dlpipe.services.ops.opening_date import OPENING_WINDOW_DAYS, OpeningDate, opening_date

FC = TypeVar("FC", bound=Callable[..., Any])

json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document (stable keys) instead of tables.",
)
older_than_option = click.option(
    "--older-than",
    "older_than_s",
    type=DURATION,
    default="30m",
    show_default=True,
    help="Only jobs unchanged for this long (90s, 30m, 2h, 1d; 0s: any age).",
)
dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Show what would change and change nothing."
)


def date_option(required: bool = False) -> Callable[[FC], FC]:
    """--date YYYY-MM-DD | today | yesterday."""
    default = (
        ""
        if required
        else " [default: the day the feeds' schedules ran for last, or when the"
        f" {OPENING_WINDOW_DAYS} days up to it have no batch the latest date that has one]"
    )
    return click.option(
        "--date",
        "day",
        type=DAY,
        required=required,
        help=f"Polling date: YYYY-MM-DD, today or yesterday{default}.",
    )


def polling_date(ops: OpsContext, day: str | None, feed: FeedChoice) -> str:
    """The date `--date` names, or the one every screen without a date opens on (the web
    view's grid too): the day the schedule of `feed` (of any feed, for None) ran for last, in
    its own time zone, unless no date of the grid's window up to it has a batch, then the
    latest date that has one (services/ops/opening_date.py)."""
    return opened_date(ops, day, feed)[0]


def opened_date(
    ops: OpsContext, day: str | None, feed: FeedChoice
) -> tuple[str, OpeningDate | None]:
    """polling_date, and without `--date` how it was chosen (None with one)."""
    if day is None:
        opened = opening_date(ops, feed)
        return opened.date, opened
    return resolve_day(day, ops.now_ms()), None


def feed_option(*, every_by_default: bool) -> Callable[[FC], FC]:
    """--feed NAME: a listing shows every feed without it, a command on one day the default."""
    if every_by_default:
        default, text = None, "Only this feed's records [default: every feed]."
    else:
        default, text = (
            DEFAULT_FEED_NAME,
            f"The feed whose days to act on [default: {DEFAULT_FEED_NAME}].",
        )
    return click.option("--feed", "feed", type=FEED, default=default, metavar="NAME", help=text)

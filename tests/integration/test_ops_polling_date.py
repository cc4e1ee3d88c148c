"""`dlpipe status` without --date opens on the date a feed's schedule ran for last: the day its
last scheduled run covered, in the feed's time zone, at both sides of midnight UTC."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest

from dlpipe.domain.feeds import Feed
from tests.integration.test_ops_feeds import FEED, named_batch, with_feeds
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world
from tests.support import VENDOR_B

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below

# (time zone, minutes from midnight UTC after the world's day, days before that midnight of
# the date the feed's 06:00 local run covered last, with the default offset of one day).
# Auckland (UTC+12/+13) is already on the next day: its run of that day covered the world's
# day. Los Angeles (UTC-8/-7) is still on the world's day: its run then covered the day before.
CASES = [
    ("Pacific/Auckland", -30, 1),
    ("Pacific/Auckland", +30, 1),
    ("America/Los_Angeles", -30, 2),
    ("America/Los_Angeles", +30, 2),
]


def far_feed(time_zone: str) -> Feed:
    """vendor-b, scheduled at 06:00 in `time_zone`."""
    return replace(VENDOR_B, schedule="cron(0 6 * * ? *)", time_zone=time_zone, deadline=None)


def at_midnight_after(world: World, minutes: int) -> str:
    """Set the world's clock `minutes` from the midnight UTC that ends its day; that midnight's
    date."""
    midnight = datetime.combine(date.fromisoformat(world.day), datetime.min.time(), UTC)
    midnight += timedelta(days=1)
    world.clock.now = int((midnight + timedelta(minutes=minutes)).timestamp() * 1000)
    return midnight.date().isoformat()


def days_before(day: str, days: int) -> str:
    """The date `days` before `day`."""
    return (date.fromisoformat(day) - timedelta(days=days)).isoformat()


@pytest.mark.parametrize(("time_zone", "minutes", "back"), CASES)
def test_status_of_a_far_feed_opens_on_the_day_its_schedule_ran_for_last(
    world: World, dlpipe_cli: CliRunner, time_zone: str, minutes: int, back: int
) -> None:
    """--feed vendor-b without --date: the date its 06:00 local run covered, not UTC's."""
    with_feeds(world, far_feed(time_zone))
    expected = days_before(at_midnight_after(world, minutes), back)
    seeded = named_batch(world, expected)
    run = dlpipe_cli("status", "--feed", FEED, "--older-than", "0s", "--json")
    assert run.code == 0, run.err
    assert run.json()["date"] == expected
    assert [b["batch_id"] for b in run.json()["batches"]] == [seeded.batch_id]


@pytest.mark.parametrize(("time_zone", "minutes", "back"), CASES)
def test_status_of_every_feed_opens_on_the_latest_day_a_schedule_ran_for(
    world: World, dlpipe_cli: CliRunner, time_zone: str, minutes: int, back: int
) -> None:
    """Without --feed: the latest of the configured feeds' dates (the default feed runs at
    06:30 UTC and covered the day before the world's day), so no feed's last day is hidden."""
    with_feeds(world, far_feed(time_zone))
    midnight = at_midnight_after(world, minutes)
    expected = days_before(midnight, min(back, 2))
    assert dlpipe_cli("status", "--older-than", "0s", "--json").json()["date"] == expected

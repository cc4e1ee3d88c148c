"""The grid opens on the date a feed's schedule ran for last, in the feed's time zone, at both
sides of midnight UTC (Flask's test client, emulator tables)."""

from __future__ import annotations

import re

import pytest

from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST
from tests.integration.test_ops_feeds import FEED, named_batch, with_feeds
from tests.integration.test_ops_fixtures import World
from tests.integration.test_ops_polling_date import CASES, at_midnight_after, days_before, far_feed

pytestmark = pytest.mark.integration


def grid_end(world: World, query: str) -> str:
    """The last date of the grid `/{query}` shows, from its heading."""
    app = create_app(world.ops)
    answer_only_at(app, HOST, 80)
    page = app.test_client().get(f"/{query}").get_data(as_text=True)
    heading = re.search(r"<h1>Batches of \S+ to (\S+) \(", page)
    assert heading, page
    return heading.group(1)


@pytest.mark.parametrize(("time_zone", "minutes", "back"), CASES)
def test_the_grid_of_a_far_feed_opens_on_the_day_its_schedule_ran_for_last(
    world: World, time_zone: str, minutes: int, back: int
) -> None:
    """?feed=vendor-b: the grid ends on the date its 06:00 local run covered, not UTC's."""
    with_feeds(world, far_feed(time_zone))
    expected = days_before(at_midnight_after(world, minutes), back)
    named_batch(world, expected)
    assert grid_end(world, f"?feed={FEED}") == expected


@pytest.mark.parametrize(("time_zone", "minutes", "back"), CASES)
def test_the_grid_of_every_feed_ends_on_the_latest_day_a_schedule_ran_for(
    world: World, time_zone: str, minutes: int, back: int
) -> None:
    """Without ?feed: the latest of the configured feeds' dates (the default feed covered the
    day before the world's day), so every feed's last day is in view and reachable."""
    with_feeds(world, far_feed(time_zone))
    expected = days_before(at_midnight_after(world, minutes), min(back, 2))
    named_batch(world, expected)
    assert grid_end(world, "") == expected

"""`dlpipe ui`'s grid in a real browser (Debian's chromium through Selenium) with two feeds:
a row group per feed, each feed's batches in its own rows, dates as columns."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.integration.test_ops_feeds import FEED, VENDOR_B, with_feeds
from tests.integration.test_ops_fixtures import World
from tests.ui.seed import SeededDay
from tests.ui.test_browser import _wait
from tests.ui.test_feeds import seed_named

pytestmark = [pytest.mark.integration, pytest.mark.ui]


def test_the_grid_shows_two_feeds_by_date(
    browser: Any, ui_url: str, world: World, seeded: SeededDay
) -> None:
    """Each feed is a row group headed by its name; a batch's cell sits in its feed's group,
    in its date's column (the default feed's completed D-3, vendor-b's D-1 and D); a group's
    link narrows the grid to its feed and `every feed` widens it again."""
    with_feeds(world, VENDOR_B)
    named = seed_named(world)
    browser.get(f"{ui_url}/?end={seeded.day}")
    groups = browser.find_elements(By.CSS_SELECTOR, "#grid tbody.feed")
    assert [g.get_attribute("data-feed") for g in groups] == ["default", FEED]
    heads = [g.find_element(By.CSS_SELECTOR, "th.feedname .name").text for g in groups]
    assert heads == ["feed default", f"feed {FEED}"]
    dates = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#grid thead th.date")]

    def column_of(group: Any, batch_id: str) -> int:
        """The date column of the batch's cell (the row's first cell is its heading)."""
        cell = group.find_element(By.CSS_SELECTOR, f'a.cell[data-batch="{batch_id}"]')
        return int(browser.execute_script("return arguments[0].closest('td').cellIndex;", cell)) - 1

    default, vendor_b = groups
    for group, batch in (
        (vendor_b, named.before),
        (vendor_b, named.today),
        (default, seeded.batches["completed"]),
        (default, seeded.running),
    ):
        assert dates[column_of(group, batch.batch_id)] == batch.polling_date
    assert not default.find_elements(By.CSS_SELECTOR, f'a.cell[data-feed="{FEED}"]')
    cell = vendor_b.find_element(By.CSS_SELECTOR, f'a.cell[data-batch="{named.before.batch_id}"]')
    assert cell.value_of_css_property("background-color") == "rgba(46, 157, 73, 1)"
    # Narrowed to vendor-b by its group's link, and back to every feed.
    vendor_b.find_element(By.CSS_SELECTOR, "a.narrow").click()
    _wait(browser).until(lambda d: _feeds(d) == [FEED])
    assert not browser.find_elements(
        By.CSS_SELECTOR, f'a.cell[data-batch="{seeded.running.batch_id}"]'
    )
    browser.find_element(By.ID, "all-feeds").click()
    _wait(browser).until(lambda d: _feeds(d) == ["default", FEED])


def _feeds(driver: Any) -> list[str]:
    """The grid's row groups' feeds, read in one script (a navigation may swap the page)."""
    script = "return [...document.querySelectorAll('#grid tbody.feed')].map(g => g.dataset.feed);"
    return list(driver.execute_script(script))

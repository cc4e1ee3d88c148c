"""`dlpipe ui` on narrow screens, in a real browser (Debian's chromium through Selenium): at
800 and 1280 px the day page of a named feed's failed files and the grid fit the window. The
status and error columns and the newest date stay in view; long IDs are clipped, whole on hover.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dlpipe.domain.model import JobStatus
from tests.integration.test_ops_feeds import VENDOR_B, named_job, with_feeds
from tests.integration.test_ops_fixtures import World
from tests.ui.seed import SeededDay
from tests.ui.test_feeds import NamedDays, seed_named

pytestmark = [pytest.mark.integration, pytest.mark.ui]

WIDTHS = (800, 1280)
LONG_ERROR = (
    "wrong_key: the file's AES key did not decrypt with the feed's private key "
    "(key id vendor-b-2026-rotation-2); fix the key in the feed's secret, then requeue"
)

# Where each selector's elements end, the window's inner width and the page's scroll width.
_MEASURE = """
const right = s => [...document.querySelectorAll(s)].map(e => e.getBoundingClientRect().right);
return {
  inner: window.innerWidth,
  scroll: document.documentElement.scrollWidth,
  rights: Object.fromEntries(arguments[0].map(s => [s, right(s)])),
};
"""


@pytest.fixture
def named(world: World, seeded: SeededDay) -> NamedDays:
    """vendor-b's days beside the default feed's, one of its files failed with a long error."""
    with_feeds(world, VENDOR_B)
    days = seed_named(world)
    file_id = named_job(world, "corporate_actions", batch_id=days.today.batch_id).file_id
    world.jobs.claim(file_id, "worker-ip-10-0-12-34-a1b2c3d4", 60)
    world.jobs.finish_unsuccessfully(
        file_id, "worker-ip-10-0-12-34-a1b2c3d4", JobStatus.ERROR, LONG_ERROR
    )
    return days


@pytest.fixture(params=WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def width(request: pytest.FixtureRequest, browser: Any) -> Iterator[int]:
    """The browser's window at this width (and back to the fixtures' size afterwards)."""
    before = browser.get_window_size()
    browser.set_window_size(request.param, 900)
    yield int(request.param)
    browser.set_window_size(before["width"], before["height"])


def _measure(driver: Any, *selectors: str) -> dict[str, Any]:
    measured = driver.execute_script(_MEASURE, list(selectors))
    for selector in selectors:
        assert measured["rights"][selector], f"nothing matches {selector}"
    return dict(measured)


def _fits(measured: dict[str, Any]) -> None:
    """Nothing scrolls sideways and every measured element ends inside the window."""
    inner = measured["inner"]
    assert measured["scroll"] <= inner, f"the page is {measured['scroll']} px wide at {inner}"
    for selector, rights in measured["rights"].items():
        assert max(rights) <= inner, f"{selector} ends at {max(rights)} px, window {inner}"


def test_the_failed_day_page_keeps_its_status_and_error_columns_in_view(
    browser: Any, ui_url: str, named: NamedDays, width: int
) -> None:
    """The named feed's day (62-character BatchIDs, a long error): the batches table's status
    and count columns and the files table's status and error columns end inside the window,
    no row is a tall column of wrapped words, and a clipped ID is whole in its title."""
    browser.get(f"{ui_url}/day/{named.today.polling_date}?batch={named.today.batch_id}")
    measured = _measure(
        browser,
        "#batches td:nth-child(3)",  # status
        "#batches tr:not(.note) td:last-child",  # the last count
        "#files tbody td:nth-child(2)",  # status
        "#files tbody td:last-child",  # error
        "#files .errtext",
    )
    _fits(measured)
    heights = browser.execute_script(
        "return [...document.querySelectorAll('#files tbody tr')]"
        ".map(r => r.getBoundingClientRect().height);"
    )
    assert max(heights) <= 80, f"a files row is {max(heights)} px tall at {width} px"
    ids = browser.execute_script(
        "return [...document.querySelectorAll('#batches a.id, #files a.id')]"
        ".map(a => [a.textContent.trim(), a.title]);"
    )
    assert named.today.batch_id in [text for text, _ in ids]
    assert all(text == title for text, title in ids), ids


def test_the_grid_shows_the_newest_dates_inside_the_window(
    browser: Any, ui_url: str, seeded: SeededDay, named: NamedDays, width: int
) -> None:
    """The grid of two feeds over its default 14 days: the newest date's heading and cells
    end inside the window, the page does not scroll sideways."""
    browser.get(f"{ui_url}/?end={seeded.day}")
    measured = _measure(
        browser,
        "#grid thead th.date:last-child",
        "#grid tbody tr:not(.feed-head) td:last-child",
    )
    _fits(measured)
    newest = browser.execute_script(
        "return document.querySelector('#grid thead th.date:last-child').textContent.trim();"
    )
    assert newest == seeded.day

"""`dlpipe ui` on narrow screens, in a real browser (Debian's chromium through Selenium): at
800 and 1280 px the day page of a named feed's failed files and the grid fit the window. The
status and error columns and the newest date stay in view; long IDs are clipped, whole on hover;
an error message is shown whole, its code and trailing key fingerprint or digests included.
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

# Errors whose ends matter: the key's fingerprint a wrong_key names last, the digests of a
# checksum mismatch (64 hex digits each, no place to break but anywhere).
FINGERPRINT = "3f9a1c2b7d4e"
DECLARED = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
ACTUAL = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
WHOLE_ERRORS = {
    "holdings": (
        "wrong_key: could not unwrap the AES key: it was wrapped for a different RSA key, or it"
        " is corrupted; fix the key in the feed's secret, then requeue the file"
        f" (our key {FINGERPRINT})"
    ),
    "trades": f"checksum_mismatch: plaintext SHA-256 mismatch: expected {DECLARED}, got {ACTUAL}",
}

# Per files-table error cell: its text, and each piece of it drawn outside what shows of it
# (the window's width, and every ancestor that clips its overflow: a clamp, a scroll box).
_ERROR_CELLS = """
const out = [];
for (const td of document.querySelectorAll('#files tbody td.error')) {
  const cut = [];
  const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim()) continue;
    const box = {left: 0, right: window.innerWidth, top: -Infinity, bottom: Infinity};
    for (let el = node.parentElement; el; el = el.parentElement) {
      const style = getComputedStyle(el), r = el.getBoundingClientRect();
      if (style.overflowX !== 'visible') {
        box.left = Math.max(box.left, r.left); box.right = Math.min(box.right, r.right);
      }
      if (style.overflowY !== 'visible') {
        box.top = Math.max(box.top, r.top); box.bottom = Math.min(box.bottom, r.bottom);
      }
    }
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width && (r.left < box.left - 1 || r.right > box.right + 1
          || r.top < box.top - 1 || r.bottom > box.bottom + 1)) {
        cut.push({text: node.textContent.slice(0, 40), rect: [r.left, r.top, r.right, r.bottom],
                  box: [box.left, box.top, box.right, box.bottom]});
      }
    }
  }
  out.push({text: td.textContent.replace(/\\s+/g, ' ').trim(), cut: cut});
}
return out;
"""

# The files table's cells but the error's: how tall their content is; and how wide the error
# cells are.
_CELL_SIZES = """
const content = td => { const r = document.createRange(); r.selectNodeContents(td);
                        return r.getBoundingClientRect().height; };
const shown = [...document.querySelectorAll('#files tbody td')]
  .filter(td => getComputedStyle(td).display !== 'none');
return [shown.filter(td => !td.classList.contains('error')).map(content),
        shown.filter(td => td.classList.contains('error')).map(td => td.offsetWidth)];
"""

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
    no cell but the error's is a tall column of wrapped words, and a clipped ID is whole in
    its title."""
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
    heights, errors = browser.execute_script(_CELL_SIZES)
    # The error wraps to show all of it (test below); every other cell's content is at most
    # an ID's three lines high, and the error column keeps its floor of 11rem.
    assert max(heights) <= 80, f"a files cell is {max(heights)} px tall at {width} px"
    assert min(errors) >= 11 * 14, f"the error column is {min(errors)} px wide at {width} px"
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


@pytest.fixture
def whole_errors(world: World, named: NamedDays) -> dict[str, str]:
    """Two more of vendor-b's files ended `error`, with the messages of WHOLE_ERRORS."""
    for entity, message in WHOLE_ERRORS.items():
        file_id = named_job(world, entity, batch_id=named.today.batch_id).file_id
        world.jobs.claim(file_id, "w", 60)
        world.jobs.finish_unsuccessfully(file_id, "w", JobStatus.ERROR, message)
    return WHOLE_ERRORS


def test_an_error_message_is_shown_whole_with_its_code_and_its_fingerprint_or_digests(
    browser: Any, ui_url: str, named: NamedDays, whole_errors: dict[str, str], width: int
) -> None:
    """The files table's error column wraps a message to show all of it: the code, the words
    and the key fingerprint or 64-digit digests at its end, none of it clamped away below
    the cell's lines or cut off to the side behind the table's scrollbar."""
    browser.get(f"{ui_url}/day/{named.today.polling_date}?batch={named.today.batch_id}")
    cells = browser.execute_script(_ERROR_CELLS)
    shown = {cell["text"]: cell["cut"] for cell in cells}
    for message in whole_errors.values():
        code, detail = message.split(": ", 1)  # the code is a badge of its own, then the rest
        assert f"{code} {detail}" in shown, (message, list(shown))
        assert shown[f"{code} {detail}"] == [], f"at {width} px, parts of {message!r} are hidden"
    assert all(cut == [] for cut in shown.values()), shown
    _fits(_measure(browser, "#files tbody td:last-child", "#files .errtext"))

"""`dlpipe ui` in a real browser: Debian's chromium driven by Selenium against the app served by
waitress over the emulator's tables, with a seeded day."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from dlpipe.domain.model import BatchStatus, JobStatus
from tests.integration.test_ops_fixtures import World
from tests.ui.seed import OWNER, SeededDay

pytestmark = [pytest.mark.integration, pytest.mark.ui]

# The style sheet's palette (dlpipe/ui/static/style.css), as the browser computes it.
COLOURS = {
    BatchStatus.COMPLETED: "rgba(46, 157, 73, 1)",
    BatchStatus.FAILED: "rgba(217, 52, 43, 1)",
    BatchStatus.TIMEOUT: "rgba(224, 138, 0, 1)",
}


def _wait(driver: Any, seconds: float = 10) -> WebDriverWait:  # type: ignore[type-arg]
    return WebDriverWait(driver, seconds, poll_frequency=0.1)


def _text(driver: Any, element_id: str) -> str:
    """The element's text, read in one script (the live page swaps its <main> under us)."""
    return str(
        driver.execute_script(f"return document.getElementById('{element_id}').textContent;")
    ).strip()


def _column(driver: Any, selector: str) -> list[str]:
    """The text of every element `selector` matches, read in one script."""
    script = "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent.trim());"
    return list(driver.execute_script(script, selector))


def _click(driver: Any, selector: str) -> None:
    """Click the element `selector` matches, finding it again if the page swapped it."""
    _wait(driver).until(lambda d: _clicked(d, selector))


def _clicked(driver: Any, selector: str) -> bool:
    try:
        driver.find_element(By.CSS_SELECTOR, selector).click()
    except StaleElementReferenceException:
        return False
    return True


def test_grid_cells_show_completed_failed_and_timed_out_batches_in_their_colours(
    browser: Any, ui_url: str, seeded: SeededDay
) -> None:
    """Each batch is a cell coloured by its status; a date's re-run is a second cell."""
    browser.get(ui_url + "/")
    for name in ("completed", "failed", "rerun_timeout", "timeout"):
        batch = seeded.batches[name]
        cell = browser.find_element(By.CSS_SELECTOR, f'a.cell[data-batch="{batch.batch_id}"]')
        assert f"s-{batch.status}" in cell.get_attribute("class")
        assert cell.value_of_css_property("background-color") == COLOURS[batch.status]
    rerun_day = seeded.batches["failed"].polling_date
    column = [
        c
        for c in browser.find_elements(By.CSS_SELECTOR, "a.cell")
        if rerun_day in c.get_attribute("href")
    ]
    assert [c.get_attribute("data-status") for c in column] == ["failed", "timeout"]


def test_the_files_table_filtered_to_error_lists_the_error_files_with_their_codes(
    browser: Any, ui_url: str, seeded: SeededDay
) -> None:
    """Clicking the `error` filter leaves only error rows, each with its ErrorMessage code."""
    browser.get(f"{ui_url}/day/{seeded.day}")
    _click(browser, 'a[data-filter="error"]')
    _wait(browser).until(lambda d: "status=error" in d.current_url)
    statuses = _column(browser, "#files tbody tr td:nth-child(2)")
    assert statuses == ["error", "error"]
    expected = {j.file_id for j in seeded.jobs[JobStatus.ERROR]}
    assert set(_column(browser, "#files tbody tr td:first-child")) == expected
    assert set(_column(browser, "#files .errcode")) == {"tag_mismatch", "checksum_mismatch"}


def test_the_files_table_sorts_by_a_column_header(
    browser: Any, ui_url: str, seeded: SeededDay
) -> None:
    """Clicking `attempts` twice orders the files by attempts, most first."""
    browser.get(f"{ui_url}/day/{seeded.day}")
    _click(browser, 'a[data-sort="attempts"]')
    _wait(browser).until(lambda d: "sort=attempts&order=asc" in d.current_url)
    _click(browser, 'a[data-sort="attempts"]')
    _wait(browser).until(lambda d: "order=desc" in d.current_url)
    attempts = [int(a) for a in _column(browser, "#files tbody tr td:nth-child(6)")]
    assert attempts == sorted(attempts, reverse=True)
    assert attempts[0] == 5


def test_the_day_page_follows_files_finishing_without_a_reload_and_stops_at_the_end(
    browser: Any, ui_url: str, world: World, seeded: SeededDay
) -> None:
    """Jobs completed through the jobs table show up in the open page's counts, in the same
    document (no reload); once the batch ends, the page stops refreshing."""
    browser.get(f"{ui_url}/day/{seeded.day}")
    browser.execute_script("window.dlpipeTestMark = 'same page';")
    assert _text(browser, "count-completed") == "2"
    for job in seeded.jobs[JobStatus.DOWNLOADING]:
        if job.lease_owner != OWNER:
            continue
        world.jobs.complete(
            job.file_id, OWNER, byte_count=10, sha256="cd" * 32, destination_key=f"k/{job.file_id}"
        )
        done = int(_text(browser, "count-completed"))
        _wait(browser).until(lambda d, more=done: int(_text(d, "count-completed")) > more)
    assert _text(browser, "count-completed") == "6"
    assert _text(browser, "count-downloading") == "1"
    world.batches.finish(
        seeded.running.batch_id, BatchStatus.TIMEOUT, timeout_at="2000-01-01T00:00:00+00:00"
    )
    _wait(browser).until(lambda d: _text(d, "selected-status") == "timeout")
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-refresh") == ""
    assert browser.execute_script("return window.dlpipeTestMark;") == "same page"

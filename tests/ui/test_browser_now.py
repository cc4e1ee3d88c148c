"""`dlpipe ui` in Debian's chromium: the grid opens on the dates that have batches, and an open
day page shows the idle-worker warning as soon as it applies (no reload)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import JobStatus
from tests.integration.test_ops_fixtures import World
from tests.ui.seed import SeededDay
from tests.ui.test_browser import _text, _wait

pytestmark = [pytest.mark.integration, pytest.mark.ui]
THRESHOLD_S = 60


def test_the_grid_opens_on_the_seeded_dates_when_the_recent_ones_are_empty(
    browser: Any, ui_url: str, world: World, seeded: SeededDay
) -> None:
    """Forty days after the seeded day the grid still opens on it, and says so."""
    world.clock.advance(40 * 86_400)
    browser.get(f"{ui_url}/")
    cells = browser.find_elements(
        By.CSS_SELECTOR, f'#grid [data-batch="{seeded.running.batch_id}"]'
    )
    assert len(cells) == 1
    assert browser.find_element(By.TAG_NAME, "h1").text.endswith(f"to {seeded.day} (14 days)")
    assert browser.find_element(By.ID, "grid-moved").is_displayed()


def test_an_open_day_page_shows_the_idle_warning_once_the_threshold_passes(
    browser: Any, ui_url: str, world: World, seeded: SeededDay
) -> None:
    """The available job's message waits, nobody takes it: two minutes on, the open page (it
    refreshes itself while the batch runs) heads with the warning."""
    world.ops.settings = replace(world.ops.settings, idle_warning_seconds=THRESHOLD_S)
    (job,) = seeded.jobs[JobStatus.AVAILABLE]
    body = encode_message(JobMessage(job.file_id, job.batch_id))
    world.clients.sqs.send_message(QueueUrl=world.ops.settings.queue_url or "", MessageBody=body)
    browser.get(f"{ui_url}/day/{seeded.day}")
    assert _text(browser, "queue-visible") == "1"
    by_feed = '#queues-by-feed tr[data-feed="default"] .queue-visible'
    assert browser.find_element(By.CSS_SELECTOR, by_feed).text == "1"
    assert not browser.find_elements(By.ID, "idle-warning")
    world.clock.advance(2 * THRESHOLD_S)
    _wait(browser).until(lambda d: d.find_elements(By.ID, "idle-warning"))
    assert _text(browser, "idle-warning").startswith("no worker has received a message for 2 min")

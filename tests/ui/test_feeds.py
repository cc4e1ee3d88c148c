"""The web view shows every feed: a row group per feed in the grid, the feed on the day and
file pages, a named feed's freshness and start line (Flask's test client, emulator tables)."""

from __future__ import annotations

import html
import re
import shlex
from dataclasses import dataclass
from datetime import date, timedelta

import pytest
from flask.testing import FlaskClient

from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus
from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST
from tests.integration.test_ops_feeds import FEED, VENDOR_B, named_batch, named_job, with_feeds
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli
from tests.ui.seed import SeededDay

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli"]  # the ops tests' CLI runner, shared as is


@dataclass
class NamedDays:
    """vendor-b's seeded batches: completed the day before, a queued one on the day, its jobs."""

    before: Batch
    today: Batch
    jobs: dict[JobStatus, FileJob]


def seed_named(world: World) -> NamedDays:
    """vendor-b's two dates next to the seeded default feed's, through the table adapters."""
    before_day = (date.fromisoformat(world.day) - timedelta(days=1)).isoformat()

    before = named_batch(
        world,
        before_day,
        status=BatchStatus.COMPLETED,
        expected_count=2,
        completed_count=2,
    )
    today = named_batch(world, status=BatchStatus.QUEUED, expected_count=3, queued_count=3)
    jobs = {
        JobStatus.FAILED: named_job(world, "accounts", batch_id=today.batch_id),
        JobStatus.ERROR: named_job(world, "positions", batch_id=today.batch_id),
        JobStatus.AVAILABLE: named_job(world, "prices", batch_id=today.batch_id),
    }
    for status in (JobStatus.FAILED, JobStatus.ERROR):
        file_id = jobs[status].file_id
        world.jobs.claim(file_id, "w", 60)
        jobs[status] = world.jobs.finish_unsuccessfully(
            file_id, "w", status, f"{status}_code: seeded"
        )
    return NamedDays(before, today, jobs)


@pytest.fixture
def named(world: World, seeded: SeededDay) -> NamedDays:
    """The seeded default feed's days, vendor-b's beside them, vendor-b in the feeds file."""
    with_feeds(world, VENDOR_B)
    return seed_named(world)


@pytest.fixture
def client(world: World, named: NamedDays) -> FlaskClient:
    """A test client of `dlpipe ui`'s app over the world with two feeds."""
    app = create_app(world.ops)
    answer_only_at(app, HOST, 80)
    return app.test_client()


def test_the_grid_has_a_row_group_per_feed(
    client: FlaskClient, seeded: SeededDay, named: NamedDays
) -> None:
    """The default feed's group first, vendor-b's after it, each cell in its feed's group."""
    page = client.get(f"/?end={seeded.day}").get_data(as_text=True)
    groups = re.findall(r'<tbody class="feed" data-feed="([^"]+)">(.*?)</tbody>', page, re.S)
    assert [name for name, _ in groups] == ["default", FEED]
    default, vendor_b = (body for _, body in groups)
    assert f'data-batch="{named.before.batch_id}"' in vendor_b
    assert f'data-batch="{named.today.batch_id}"' in vendor_b
    assert f'data-batch="{seeded.running.batch_id}"' in default
    assert FEED not in default


def test_the_day_page_names_each_feed_and_its_freshness(
    client: FlaskClient, seeded: SeededDay, named: NamedDays
) -> None:
    """Each batch row names its feed; vendor-b, due at 09:00 Berlin, is late at 10:00Z."""
    page = client.get(f"/day/{seeded.day}").get_data(as_text=True)
    row = re.search(rf'<tr class="[^"]*" data-feed="{FEED}">(.*?)</tr>', page, re.S)
    assert row, page
    assert named.today.batch_id in row.group(1)
    deadline = re.search(rf'id="deadline-{FEED}"[^>]*>feed {FEED}: <strong>([^<]+)</strong>', page)
    assert deadline, page
    assert deadline.group(1) in ("late by 2 h 00 min", "late by 3 h 00 min")
    assert 'id="deadline-default"' not in page  # the default feed declares no deadline
    selected = client.get(f"/day/{seeded.day}?batch={named.today.batch_id}").get_data(as_text=True)
    assert f'id="selected-feed">feed {FEED}<' in selected
    assert named.jobs[JobStatus.FAILED].file_id in selected


def test_a_named_feeds_file_page_names_its_feed_and_links_to_its_day(
    client: FlaskClient, world: World, named: NamedDays
) -> None:
    """The day link comes from the BatchID's date, whatever the feed's prefix."""
    job = named.jobs[JobStatus.FAILED]
    page = client.get(f"/file/{job.file_id}").get_data(as_text=True)
    link = re.search(r'href="(/day/[^"]+)"', page)
    assert link, page
    day_page = client.get(html.unescape(link.group(1)))
    assert day_page.status_code == 200, link.group(1)
    assert named.today.batch_id in day_page.get_data(as_text=True)
    assert f'<strong id="feed">{FEED}</strong>' in page


def test_a_named_feed_without_a_batch_gets_its_own_start_line(
    world: World, seeded: SeededDay
) -> None:
    """vendor-b configured, no batch of it on the date: its line names it with --feed."""
    with_feeds(world, VENDOR_B)
    app = create_app(world.ops)
    answer_only_at(app, HOST, 80)
    page = app.test_client().get(f"/day/{seeded.day}").get_data(as_text=True)
    line = re.search(rf'id="no-batch-{FEED}"[^>]*>.*?<code>([^<]+)</code>', page, re.S)
    assert line, page
    assert line.group(1) == f"dlpipe run --date {seeded.day} --feed {FEED}"
    assert 'id="no-batch"' not in page  # the default feed has its batches


def test_every_ops_command_a_named_feeds_pages_suggest_runs_as_printed(
    client: FlaskClient, world: World, seeded: SeededDay, named: NamedDays, dlpipe_cli: CliRunner
) -> None:
    """The requeues and sweeps vendor-b's day page and its files' pages show run as printed
    and succeed (the start command, `dlpipe run`, runs a whole day: not here)."""
    day = f"/day/{seeded.day}?batch={named.today.batch_id}"
    pages = [client.get(day).get_data(as_text=True)]
    for file_id in sorted(set(re.findall(rf'href="/file/({FEED}\.[^"]+)"', pages[0]))):
        pages.append(client.get(f"/file/{file_id}").get_data(as_text=True))
    suggested = sorted(
        {c for page in pages for c in re.findall(r"<code[^>]*>(dlpipe [^<]+)</code>", page)}
    )
    ops_commands = [c for c in suggested if not c.startswith("dlpipe run ")]
    requeued = named.jobs[JobStatus.FAILED].file_id
    assert any(requeued in c for c in ops_commands), suggested
    for command in ops_commands:
        argv = shlex.split(html.unescape(command))
        assert argv[0] == "dlpipe", command
        run = dlpipe_cli(*argv[1:])
        assert run.code == 0, (command, run.out, run.err)


def test_the_grid_and_the_day_page_narrow_to_one_feed(
    client: FlaskClient, seeded: SeededDay, named: NamedDays
) -> None:
    """?feed=vendor-b: its group and batches alone; a bad name is a one-line 400 page."""
    grid = client.get(f"/?end={seeded.day}&feed={FEED}").get_data(as_text=True)
    assert re.findall(r'<tbody class="feed" data-feed="([^"]+)">', grid) == [FEED]
    assert seeded.running.batch_id not in grid
    assert f'href="/day/{seeded.day}?feed={FEED}"' in grid
    day = client.get(f"/day/{seeded.day}?feed={FEED}").get_data(as_text=True)
    assert named.today.batch_id in day
    assert seeded.running.batch_id not in day.split('id="stuck"')[0]
    bad = client.get("/?feed=Vendor_B")
    assert bad.status_code == 400
    assert "feed must be" in bad.get_data(as_text=True)


def test_a_feed_neither_configured_nor_seen_is_a_404_never_a_start_hint(
    client: FlaskClient, seeded: SeededDay
) -> None:
    """?feed=nosuch on the grid and the day page: 404 naming the feed and the configured ones
    (before: 200 with a line offering to start its day)."""
    for path in (f"/?end={seeded.day}&feed=nosuch", f"/day/{seeded.day}?feed=nosuch"):
        page = client.get(path)
        text = html.unescape(page.get_data(as_text=True))
        assert page.status_code == 404, path
        assert "feed 'nosuch' is not configured and has no batch" in text, text
        assert "dlpipe run" not in text, path

"""The web view says what is wrong now: the download queue's depth and oldest wait, a warning
when no worker takes the work, repair commands that run where they are shown, a grid that
opens on dates with batches, and times with their zone (Flask's test client, emulator tables)."""

from __future__ import annotations

import html
import re
import shlex
import uuid
from dataclasses import replace
from datetime import date, timedelta

import pytest
from flask.testing import FlaskClient

from dlpipe.domain.feeds import DEFAULT_FEED
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli
from tests.ui.seed import SeededDay

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli"]  # the ops tests' CLI runner, shared as is
THRESHOLD_S = 60
ARN = "arn:aws:lambda:eu-west-1:123456789012:function:dlpipe-orchestrator:live"


@pytest.fixture
def client(world: World, seeded: SeededDay) -> FlaskClient:
    """A test client of `dlpipe ui`'s app over the seeded world, with a one-minute idle threshold."""
    world.ops.settings = replace(world.ops.settings, idle_warning_seconds=THRESHOLD_S)
    app = create_app(world.ops)
    answer_only_at(app, HOST, 80)  # the test client's Host header is `localhost`
    return app.test_client()


def _queue_message(world: World, seeded: SeededDay) -> None:
    """The seeded available job's message, waiting on the world's queue."""
    (job,) = seeded.jobs[next(s for s in seeded.jobs if s == "available")]
    body = encode_message(JobMessage(job.file_id, job.batch_id))
    world.clients.sqs.send_message(QueueUrl=world.ops.settings.queue_url or "", MessageBody=body)


def test_the_day_page_shows_the_queue_depth_and_the_oldest_wait(
    client: FlaskClient, world: World, seeded: SeededDay
) -> None:
    """Waiting and in-flight messages, and how long the oldest available job waited (StatusIndex)."""
    _queue_message(world, seeded)
    page = client.get(f"/day/{seeded.day}").get_data(as_text=True)
    assert '<strong id="queue-visible">1</strong>' in page
    assert '<strong id="queue-in-flight">0</strong>' in page
    assert 'id="queue-oldest"' in page
    assert "oldest available job (StatusIndex)" in page
    assert 'id="idle-warning"' not in page  # the job has just become available


def test_the_day_page_warns_when_no_worker_took_the_work_past_the_threshold(
    client: FlaskClient, world: World, seeded: SeededDay
) -> None:
    """Two minutes later, nothing in flight: the warning heads the page."""
    _queue_message(world, seeded)
    world.clock.advance(2 * THRESHOLD_S)
    page = client.get(f"/day/{seeded.day}").get_data(as_text=True)
    warning = re.search(r'id="idle-warning">([^<]*)<', page)
    assert warning, page
    assert warning.group(1).startswith("no worker has received a message for ")


def test_the_queue_section_shows_each_feeds_queue_and_the_feed_holding_the_threads(
    client: FlaskClient, world: World, seeded: SeededDay
) -> None:
    """vendor-b has its own queue, a worker holds its one message; default's has waited two
    minutes with none in flight: a row per feed, and the page heads with the feed named."""
    sqs = world.clients.sqs
    url = sqs.create_queue(QueueName=f"ops-ui-feed-{uuid.uuid4().hex[:10]}")["QueueUrl"]
    try:
        world.ops.feeds = {
            DEFAULT_FEED.name: DEFAULT_FEED,
            "vendor-b": replace(DEFAULT_FEED, name="vendor-b", queue_url=url),
        }
        _queue_message(world, seeded)
        sqs.send_message(QueueUrl=url, MessageBody="held by a worker")
        sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)
        world.clock.advance(2 * THRESHOLD_S)
        page = client.get(f"/day/{seeded.day}").get_data(as_text=True)
    finally:
        sqs.delete_queue(QueueUrl=url)
    rows = dict(re.findall(r'<tr data-feed="([a-z-]+)">(.*?)</tr>', page, re.DOTALL))
    cells = {
        feed: re.findall(r'class="num queue-(?:visible|in-flight)">([^<]*)<', row)
        for feed, row in rows.items()
    }
    assert cells == {"default": ["1", "0"], "vendor-b": ["0", "1"]}, cells
    assert url.rsplit("/", 1)[-1] in rows["vendor-b"]
    warning = re.search(r'id="starving-warning">([^<]*)<', page)
    assert warning, page
    assert warning.group(1).startswith("vendor-b holds 1 of 1 in flight; 1 waiting on default for ")
    assert 'id="idle-warning"' not in page  # a worker holds a message: not idle


def test_without_an_orchestrator_the_start_command_is_dlpipe_run(client: FlaskClient) -> None:
    """Locally (no DLPIPE_ORCHESTRATOR_ARN) a date is started with `dlpipe run --date D`, the
    command that works there; backfill, which needs the deployed orchestrator, is not shown."""
    page = client.get("/day/1912-04-15").get_data(as_text=True)
    assert "<code>dlpipe run --date 1912-04-15</code>" in page
    assert "dlpipe backfill" not in page


def test_with_an_orchestrator_the_start_command_is_backfill(world: World) -> None:
    """Deployed (the orchestrator's ARN set), backfill starts it."""
    ops = replace(world.ops, settings=replace(world.ops.settings, orchestrator_arn=ARN))
    app = create_app(ops)
    answer_only_at(app, HOST, 80)
    page = app.test_client().get("/day/1912-04-15").get_data(as_text=True)
    assert "<code>dlpipe backfill --from 1912-04-15 --to 1912-04-15</code>" in page


def test_the_grid_opens_on_the_latest_dates_with_batches_and_says_which(
    client: FlaskClient, world: World, seeded: SeededDay
) -> None:
    """Forty days on, the default window is empty: the grid shows the seeded dates instead,
    with the range in its heading and a year on every date."""
    world.clock.advance(40 * 86_400)
    page = client.get("/").get_data(as_text=True)
    assert f'data-batch="{seeded.running.batch_id}"' in page
    first = (date.fromisoformat(seeded.day) - timedelta(days=13)).isoformat()
    assert f"Batches of {first} to {seeded.day}" in page
    assert 'id="grid-moved"' in page
    assert f">{seeded.day}</a></th>" in page


def test_the_heading_names_the_range_of_end(client: FlaskClient, seeded: SeededDay) -> None:
    """?end= and ?days= move the range, and the heading says so."""
    page = client.get("/?end=1999-03-10&days=3").get_data(as_text=True)
    assert "Batches of 1999-03-08 to 1999-03-10" in page
    assert "last 3 days" not in page


def test_every_time_on_the_day_and_file_pages_carries_its_zone(
    client: FlaskClient, seeded: SeededDay
) -> None:
    """Each HH:MM:SS shown is followed by its zone, Z (UTC)."""
    completed = seeded.jobs[next(s for s in seeded.jobs if s == "completed")][0]
    for path in (f"/day/{seeded.day}", f"/file/{completed.file_id}"):
        page = client.get(path).get_data(as_text=True)
        times = re.findall(r"\d{2}:\d{2}:\d{2}(?:\.\d+)?(\S?)", page)
        assert times, path
        assert set(times) == {"Z"}, (path, times)


def test_every_ops_command_the_pages_suggest_runs_as_printed(
    client: FlaskClient, world: World, seeded: SeededDay, dlpipe_cli: CliRunner
) -> None:
    """Each `dlpipe ...` the day page and its files' pages show (requeues, the stuck sweep, the
    DLQ's) runs as printed against the emulator and succeeds. (`dlpipe run`, the start command,
    runs a whole day: tests/e2e/test_now.py runs it.)"""
    world.clients.sqs.send_message(QueueUrl=world.ops.settings.dlq_url or "", MessageBody="x")
    day_page = client.get(f"/day/{seeded.day}").get_data(as_text=True)
    pages = [day_page]
    for file_id in sorted(set(re.findall(r'href="/file/([^"]+)"', day_page))):
        pages.append(client.get(f"/file/{file_id}").get_data(as_text=True))
    suggested = sorted(
        {c for page in pages for c in re.findall(r"<code[^>]*>(dlpipe [^<]+)</code>", page)}
    )
    ops_commands = [c for c in suggested if not c.startswith("dlpipe run ")]
    assert any("requeue --stuck" in c for c in ops_commands), suggested
    assert any("dlq redrive" in c for c in ops_commands), suggested
    for command in ops_commands:
        argv = shlex.split(html.unescape(command))
        assert argv[0] == "dlpipe", command
        assert "..." not in argv, command  # a cut list is no command to run
        run = dlpipe_cli(*argv[1:])
        assert run.code == 0, (command, run.out, run.err)

"""The web view's pages through Flask's test client over the emulator (no browser): what they
show, and bad input as a one-line 400/404 page; the world's Scan guard fails any Scan."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from dlpipe.domain.model import JobStatus
from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST
from tests.integration.test_ops_fixtures import World
from tests.ui.seed import SeededDay

pytestmark = pytest.mark.integration


@pytest.fixture
def client(world: World, seeded: SeededDay) -> FlaskClient:
    """A test client of `dlpipe ui`'s app over the seeded world, answering as if served on
    port 80 (the test client's Host header is `localhost`)."""
    app = create_app(world.ops)
    answer_only_at(app, HOST, 80)
    return app.test_client()


def test_the_grid_has_a_cell_per_batch_and_links_each_to_its_day(
    client: FlaskClient, seeded: SeededDay
) -> None:
    """Every seeded batch, re-runs included, is one cell of the grid with its status class."""
    page = client.get("/").get_data(as_text=True)
    for batch in seeded.batches.values():
        assert f'class="cell s-{batch.status}" data-batch="{batch.batch_id}"' in page
        assert f"/day/{batch.polling_date}?batch={batch.batch_id}" in page


def test_a_day_page_shows_counts_stuck_jobs_and_the_dlq_depth(
    client: FlaskClient, world: World, seeded: SeededDay
) -> None:
    """The running batch's counts come from BatchIndex; the expired claim is listed as stuck;
    the DLQ depth is read from the queue."""
    dlq = world.ops.settings.dlq_url
    assert dlq
    world.clients.sqs.send_message(QueueUrl=dlq, MessageBody='{"file_id": "x"}')
    page = client.get(f"/day/{seeded.day}").get_data(as_text=True)
    assert '<span class="n" id="count-downloading">5</span>' in page
    assert '<span class="n" id="count-error">2</span>' in page
    assert seeded.stuck[0].file_id in page
    assert "dlpipe jobs requeue --stuck --older-than 30m" in page
    assert '<strong id="dlq-depth">1</strong>' in page
    assert 'data-refresh="5.0"' in page  # the batch runs: the page refreshes itself


def test_the_files_table_filters_by_status_through_the_batch_index(
    client: FlaskClient, seeded: SeededDay
) -> None:
    """?status=error lists the error files only, with their ErrorMessage codes."""
    page = client.get(f"/day/{seeded.day}?status=error").get_data(as_text=True)
    assert page.count('<tr data-status="error">') == 2
    assert 'data-status="completed"' not in page
    assert '<code class="errcode">tag_mismatch</code>' in page


def test_a_file_page_shows_its_record_history_and_repair_command(
    client: FlaskClient, seeded: SeededDay
) -> None:
    """An error job's page names its claims and the requeue command, and masks the URL."""
    job = seeded.jobs[JobStatus.ERROR][0]
    page = client.get(f"/file/{job.file_id}").get_data(as_text=True)
    assert f"dlpipe jobs requeue {job.file_id}" in page
    assert "claimed 1 time(s)" in page
    assert "X-Amz-Signature=abc" not in page


@pytest.mark.parametrize(
    "path",
    ["/?end=9999-12-30", "/?end=0003-01-01&days=92", "/day/9999-12-30", "/day/0003-01-01"],
)
def test_the_dates_at_the_edges_of_the_range_are_pages(client: FlaskClient, path: str) -> None:
    """The first and last dates a page takes, with the widest window, still render (the
    calendar's own ends would overflow a neighbour or a lookback: those are the 400s above)."""
    assert client.get(path).status_code == 200


@pytest.mark.parametrize(
    ("path", "code", "message"),
    [
        ("/day/2026-02-30", 400, "is not a calendar date"),
        ("/day/yesterday", 400, "date must be YYYY-MM-DD"),
        ("/file/not%20a%20file", 400, "FileID must be"),
        ("/file/accounts-1970-01-02", 404, "no job accounts-1970-01-02"),
        ("/file/vendor-b.accounts-1970-01-02", 404, "no job vendor-b.accounts-1970-01-02"),
        ("/file/default.accounts-1970-01-02", 400, "FileID must be"),
        ("/day/1970-01-02?batch=vendor-b.batch-1970-01-02-x", 400, "BatchID must be"),
        ("/day/1970-01-02?status=lost", 400, "status must be one of"),
        ("/day/1970-01-02?sort=size", 400, "sort must be one of"),
        ("/?days=0", 400, "days must be a whole number"),
        ("/?end=9999-12-31", 400, "date must be from 0003-01-01 to 9999-12-30"),
        ("/?end=0001-01-01", 400, "date must be from 0003-01-01 to 9999-12-30"),
        ("/?end=0002-12-31", 400, "date must be from 0003-01-01 to 9999-12-30"),
        ("/day/9999-12-31", 400, "date must be from 0003-01-01 to 9999-12-30"),
        ("/day/0001-01-01", 400, "date must be from 0003-01-01 to 9999-12-30"),
        ("/nowhere", 404, "Not Found: GET /nowhere"),
    ],
)
def test_bad_input_is_a_one_line_page_never_a_traceback(
    client: FlaskClient, path: str, code: int, message: str
) -> None:
    """Invalid dates, FileIDs and arguments answer 400, unknown ones 404, in one line."""
    response = client.get(path)
    assert response.status_code == code
    text = response.get_data(as_text=True)
    assert message in text
    assert "Traceback" not in text


def test_the_view_is_read_only(client: FlaskClient, seeded: SeededDay) -> None:
    """No route accepts a write."""
    assert client.post(f"/day/{seeded.day}").status_code == 405
    assert client.delete(f"/file/{seeded.stuck[0].file_id}").status_code == 405

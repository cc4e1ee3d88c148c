"""The day page says why a batch failed (Flask's test client over the emulator): its cause and
errors grouped by code at any size, the rerun that adopted its files, and pages of files."""

from __future__ import annotations

import re

import pytest
from flask.testing import FlaskClient

from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.options import UiOptions
from dlpipe.ui.server import HOST
from tests.integration.test_batch_outcome import FILES, day_flow, wrong_key_day
from tests.integration.test_ops_fixtures import World
from tests.provider_support import StubFactory

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]
PAGE = 8  # files a page: the 20-file day needs three


@pytest.fixture
def client(world: World) -> FlaskClient:
    """`dlpipe ui`'s app over the world, PAGE files a page."""
    app = create_app(world.ops, UiOptions(files_limit=PAGE))
    answer_only_at(app, HOST, 80)  # the test client's Host header is `localhost`
    return app.test_client()


def _page(client: FlaskClient, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return response.get_data(as_text=True)


def _files(page: str) -> list[str]:
    return re.findall(
        r'<tr data-status="\w+">\s*<td class="mono"><a class="id" title="[^"]*" href="/file/([^"]+)"',
        page,
    )


def test_a_wrong_key_day_page_groups_its_errors_by_code_and_pages_its_files(
    client: FlaskClient, world: World, stub_factory: StubFactory, entity: str
) -> None:
    """The finished batch's 20 wrong_key errors are one row (from its summary) while the files
    table shows PAGE files and a next-page link; the pages together list every file once."""
    batch_id = wrong_key_day(world, day_flow(world, stub_factory, entity), entity)
    page = _page(client, f"/day/{world.day}")
    assert (
        '<tr data-code="wrong_key"><td><code class="errcode">wrong_key</code></td><td class="num">20</td>'
        in page
    )
    assert f"/file/{entity}00-{world.day}" in page.split('id="errors"')[1].split("</table>")[0]
    seen: list[str] = []
    url: str | None = f"/day/{world.day}?batch={batch_id}"
    while url is not None:
        page = _page(client, url)
        files = _files(page)
        assert len(files) <= PAGE
        seen += files
        found = re.search(r'<a id="next-page" href="([^"]+)"', page)
        url = found.group(1).replace("&amp;", "&") if found else None
    assert sorted(seen) == [f"{entity}{n:02d}-{world.day}" for n in range(FILES)]


def test_a_rerun_first_batch_page_says_who_adopted_its_files_and_keeps_its_cause(
    client: FlaskClient, world: World, stub_factory: StubFactory, entity: str
) -> None:
    """After the rerun adopted every file, the first batch's page links to the rerun and still
    shows its wrong_key count instead of only zeros."""
    flow = day_flow(world, stub_factory, entity)
    first = wrong_key_day(world, flow, entity)
    rerun = flow.create_batch(world.day, rerun=True)
    world.created_batches.append(rerun)
    flow.fetch_and_queue(rerun, world.day)
    page = _page(client, f"/day/{world.day}?batch={first}")
    assert (
        f'id="adopted-by">Its unfinished files were adopted by rerun <a class="mono" href="/day/{world.day}?batch={rerun}">'
        in page
    )
    assert 'data-code="wrong_key"' in page
    assert "no  file in this batch: rerun <a" in page


def test_a_running_batch_with_too_many_errors_to_read_says_n_a(
    client: FlaskClient, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running batch with more failed/error jobs than the bounded read allows shows 'n/a',
    not a partial count."""
    from dlpipe.services.ops import errors_by_code

    monkeypatch.setattr(errors_by_code, "LIVE_ERRORS_LIMIT", 1)
    batch = world.batch(status=BatchStatus.QUEUED)
    for n in range(2):
        job = world.job(f"bad{n}", batch_id=batch.batch_id)
        world.jobs.claim(job.file_id, "w", 60)
        world.jobs.finish_unsuccessfully(job.file_id, "w", JobStatus.ERROR, "bad_padding: x")
    page = _page(client, f"/day/{world.day}")
    assert "errors by code: n/a while the batch runs (0 failed, 2 error:" in page


@pytest.mark.parametrize(
    "cursor", ["not-base64!", "eyJhIjoxfQ", "x" * 2000], ids=["garbage", "other-keys", "long"]
)
def test_a_cursor_this_page_did_not_give_is_a_one_line_400(
    client: FlaskClient, world: World, cursor: str
) -> None:
    """An edited page cursor is refused as bad input, never a traceback or a query."""
    batch = world.batch(status=BatchStatus.QUEUED)
    response = client.get(f"/day/{world.day}?batch={batch.batch_id}&after={cursor}")
    assert response.status_code == 400
    assert "the page cursor is not one this page gave" in response.get_data(as_text=True)


def test_the_grid_tooltip_counts_failed_and_error_apart(
    client: FlaskClient, world: World, stub_factory: StubFactory, entity: str
) -> None:
    """The wrong-key day's cell says '0 failed, 20 error', the jobs table's words."""
    batch_id = wrong_key_day(world, day_flow(world, stub_factory, entity), entity)
    page = _page(client, f"/?end={world.day}&days=1")
    assert f"{batch_id}&#10;failed: 0/20 completed, 0 failed, 20 error" in page

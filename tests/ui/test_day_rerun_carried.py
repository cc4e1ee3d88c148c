"""A rerun's day page says where its carried completed files sit (Flask's test client over
the emulator): 'completed 20' above a files table of one row names the 19 under the earlier
batch of the date, with a link to that batch."""

from __future__ import annotations

import html
import re

import pytest
from flask.testing import FlaskClient

from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST
from tests.integration.test_ops_fixtures import World
from tests.integration.test_ops_rerun_note import rerun_day
from tests.provider_support import StubFactory

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]


@pytest.fixture
def client(world: World) -> FlaskClient:
    """`dlpipe ui`'s app over the world."""
    app = create_app(world.ops)
    answer_only_at(app, HOST, 80)  # the test client's Host header is `localhost`
    return app.test_client()


def _text(fragment: str) -> str:
    """A fragment of the page as read: tags dropped, entities and spaces folded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def test_a_rerun_day_page_names_the_earlier_batch_its_carried_completed_files_sit_under(
    client: FlaskClient, world: World, stub_factory: StubFactory, entity: str
) -> None:
    """The rerun's row in the batches table and its files section say that 19 of its 20
    completed files sit under the first batch, linked; its table lists the one it holds.
    The first batch's row says nothing of the kind."""
    day = rerun_day(world, stub_factory, entity)
    response = client.get(f"/day/{world.day}?batch={day.rerun}")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    link = f'href="/day/{world.day}?batch={day.first}"'
    said = (
        f"19 of its 20 completed files sit under earlier batch {day.first} of this date"
        " (they completed there; a later run adopts only unfinished files)"
    )
    row = re.search(rf'<tr class="note carried" data-batch="{day.rerun}">(.*?)</tr>', page, re.S)
    assert row, page
    assert link in row.group(1)
    assert _text(row.group(1)) == said
    hint = re.search(r'<p class="hint" id="carried">(.*?)</p>', page, re.S)
    assert hint, page
    assert link in hint.group(1)
    assert _text(hint.group(1)) == f"These are the files in this batch's partition: {said}."
    files = re.findall(r'<tr data-status="\w+">\s*<td class="mono"><a class="id"', page)
    assert len(files) == 1
    notes = re.findall(r'<tr class="note carried" data-batch="([^"]+)">', page)
    assert notes == [day.rerun]

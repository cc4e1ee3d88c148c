"""A restated day's page (Flask's test client over the emulator tables and moto S3, no
browser): the day says it is revision 2, which batch revises which and what changed, the
batches table notes the revision and the batch it replaced, and the revision's files are
marked changed or added (tests/integration/revision_day.py seeds the day)."""

from __future__ import annotations

import re

import pytest
from flask.testing import FlaskClient

from dlpipe.domain.clock import ms_from_iso, time_for_people
from dlpipe.local.provision import Provisioned
from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST
from tests.integration.revision_day import RevisionDay, seed_revision_day
from tests.integration.test_ops_fixtures import World

pytestmark = pytest.mark.integration


@pytest.fixture
def revised(world: World, provisioned: Provisioned) -> RevisionDay:
    return seed_revision_day(world, str(provisioned.destination_bucket))


@pytest.fixture
def client(world: World, revised: RevisionDay) -> FlaskClient:
    app = create_app(world.ops)
    answer_only_at(app, HOST, 80)  # the test client's Host header is `localhost`
    return app.test_client()


def _text(html: str) -> str:
    """The page's words: tags dropped, white space joined."""
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def test_the_day_page_says_it_is_revision_2_and_what_changed(
    client: FlaskClient, world: World, revised: RevisionDay
) -> None:
    """The feed's line (the latest batch is the revision), a note under each of the two
    batches, the selected revision's badge, and its files' marks."""
    first, revision = revised.first.batch_id, revised.revision.batch_id
    page = client.get(f"/day/{world.day}").get_data(as_text=True)
    created = time_for_people(ms_from_iso(revised.revision.created_at))
    (line,) = re.findall(r'<p class="revision" id="revision-default".*?</p>', page)
    assert _text(line) == (
        f"revision 2 of the day: {revision} revises {first}, created {created};"
        " 1 changed, 1 added, 1 withdrawn"
    )
    (note,) = re.findall(r'<tr class="note revision".*?</tr>', page, re.DOTALL)
    assert f'data-batch="{revision}"' in note
    assert f"revises {first}, created {created}; 1 changed, 1 added, 1 withdrawn" in _text(note)
    (replaced,) = re.findall(r'<tr class="note revised-by".*?</tr>', page, re.DOTALL)
    assert f'data-batch="{first}"' in replaced
    assert _text(replaced).startswith(f"revised by {revision} (revision 2)")
    assert '<span class="badge revision" id="selected-revision">revision 2</span>' in page
    assert 'data-revised="changed">changed</span>' in page
    assert 'data-revised="added">added</span>' in page


def test_the_revised_batch_page_has_no_revision_badge_and_links_its_revision(
    client: FlaskClient, world: World, revised: RevisionDay
) -> None:
    """?batch= the first batch: its files unmarked, no badge; its note links the revision."""
    first, revision = revised.first.batch_id, revised.revision.batch_id
    page = client.get(f"/day/{world.day}?batch={first}").get_data(as_text=True)
    assert 'id="selected-revision"' not in page
    assert "data-revised=" not in page
    (replaced,) = re.findall(r'<tr class="note revised-by".*?</tr>', page, re.DOTALL)
    assert f'href="/day/{world.day}?batch={revision}"' in replaced

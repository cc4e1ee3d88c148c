"""A file's page over the emulator (Flask's test client) shows the job's stored presigned URL
by its scheme and host only: its userinfo, path and query may carry a credential."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST
from tests.integration.test_ops_fixtures import World

pytestmark = pytest.mark.integration


@pytest.fixture
def client(world: World) -> FlaskClient:
    """`dlpipe ui`'s app over the world (the test client's Host header is `localhost`)."""
    app = create_app(world.ops)
    answer_only_at(app, HOST, 80)
    return app.test_client()


def test_the_file_page_shows_the_presigned_url_by_its_origin(
    client: FlaskClient, world: World, entity: str
) -> None:
    url = "https://svc:hunter2pass@files.example:8443/acct-7781/f?X-Amz-Signature=deadbeefcafe"
    job = world.job(entity, presigned_url=url)
    page = client.get(f"/file/{job.file_id}").get_data(as_text=True)
    assert '<th>presigned_url</th><td class="mono">https://files.example:8443</td>' in page
    for part in ("hunter2pass", "acct-7781", "deadbeefcafe", "svc:"):
        assert part not in page, part

"""A file's page over the emulator (Flask's test client): for a file claimed by a worker in a
batch that has ended, it suggests the run of the day that closes the day, never a requeue."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from dlpipe.domain.model import BatchStatus, JobStatus
from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.server import HOST
from tests.integration.test_ops_fixtures import World

pytestmark = pytest.mark.integration
LEASE_S = 600


@pytest.fixture
def client(world: World) -> FlaskClient:
    """`dlpipe ui`'s app over the world (the test client's Host header is `localhost`)."""
    app = create_app(world.ops)
    answer_only_at(app, HOST, 80)
    return app.test_client()


@pytest.mark.parametrize("expired", [False, True], ids=["live-claim", "expired-claim"])
@pytest.mark.parametrize("ended", [BatchStatus.FAILED, BatchStatus.TIMEOUT])
def test_a_claimed_file_of_an_ended_batch_suggests_the_run_of_the_day(
    client: FlaskClient, world: World, entity: str, ended: BatchStatus, expired: bool
) -> None:
    """No `jobs requeue` (with or without --force): the page names why and the run."""
    batch = world.batch(status=ended)
    job = world.job(entity, batch_id=batch.batch_id)
    world.jobs.claim(job.file_id, "worker-7", LEASE_S)
    if expired:
        world.clock.advance(LEASE_S + 1)
    assert world.jobs.require(job.file_id).status is JobStatus.DOWNLOADING
    response = client.get(f"/file/{job.file_id}")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert f'<code id="repair">dlpipe run --date {world.day}</code>' in page
    assert f"its batch {batch.batch_id} ended {ended}; a new run of the day adopts" in page
    assert "dlpipe jobs requeue" not in page


def test_a_live_claim_of_a_running_batch_still_names_requeue_force(
    client: FlaskClient, world: World, entity: str
) -> None:
    """A running batch's held file keeps the hint: --force takes a dead worker's claim."""
    batch = world.batch()
    job = world.job(entity, batch_id=batch.batch_id)
    world.jobs.claim(job.file_id, "worker-7", LEASE_S)
    page = client.get(f"/file/{job.file_id}").get_data(as_text=True)
    assert f"dlpipe jobs requeue --force {job.file_id}" in page
    assert "dlpipe run --date" not in page

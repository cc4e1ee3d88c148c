"""A withheld hand-off is seen where the operator looks: `dlpipe status` (text and JSON), the
day page, and the run's own last line and exit code."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from dlpipe.cli.outcome_text import result_line, run_exit_code
from dlpipe.domain.model import BatchStatus
from dlpipe.ui.app import answer_only_at, create_app
from dlpipe.ui.options import UiOptions
from dlpipe.ui.server import HOST
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below
PROBLEM = "manifest_tampered: the manifest m.json conflicts: it exists with other bytes"


def _withheld(world: World) -> str:
    batch = world.batch()
    world.batches.mark_queued(batch.batch_id, [])
    world.batches.finish(batch.batch_id, BatchStatus.COMPLETED)
    world.batches.record_handoff_problem(batch.batch_id, PROBLEM)
    return batch.batch_id


def test_status_names_a_withheld_hand_off(world: World, dlpipe_cli: CliRunner) -> None:
    batch_id = _withheld(world)
    shown = dlpipe_cli("status", "--date", world.day)
    assert shown.code == 0, shown.err
    assert f"{batch_id}: hand-off withheld: {PROBLEM}" in " ".join(shown.out.split())
    rows = dlpipe_cli("status", "--date", world.day, "--json").json()["batches"]
    assert [b["handoff_problem"] for b in rows] == [PROBLEM]
    world.batches.record_handoff_problem(batch_id, None)  # a later run handed it off
    assert "hand-off withheld" not in dlpipe_cli("status", "--date", world.day).out


def test_the_day_page_names_a_withheld_hand_off(world: World) -> None:
    _withheld(world)
    app = create_app(world.ops, UiOptions())
    answer_only_at(app, HOST, 80)  # the test client's Host header is `localhost`
    client: FlaskClient = app.test_client()
    response = client.get(f"/day/{world.day}")
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    page = response.get_data(as_text=True)
    assert '<tr class="note handoff-withheld">' in page
    assert 'hand-off withheld: <code class="errcode">manifest_tampered</code>' in page


def test_the_runs_line_and_exit_code_name_a_withheld_hand_off() -> None:
    result = {"batch_id": "b", "status": "completed", "completed": 2, "handoff_problem": PROBLEM}
    assert result_line(result).endswith(f"; hand-off withheld: {PROBLEM}")
    assert run_exit_code(result) == 1
    assert run_exit_code({"status": "completed"}) == 0
    assert run_exit_code({"status": "failed"}) == 1

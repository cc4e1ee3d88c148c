"""`dlpipe status` without --date opens on the date the web view's grid opens on: when the
grid's default window holds no batch, both open on the latest date that has one (one rule,
`services/ops/opening_date.py`), and status says so and exits 1."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from dlpipe.domain.model import Batch, BatchStatus
from dlpipe.domain.rules import batch_ttl_epoch_s
from dlpipe.ui.grid import grid
from dlpipe.ui.options import UiOptions
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world
from tests.support import BASE_MS, make_batch

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below
_BATCH_TTL = batch_ttl_epoch_s(BASE_MS // 1000)  # DynamoDB Local expires by real time


def completed_batch(world: World, day: str) -> Batch:
    """A completed batch of the default feed on `day`."""
    made = make_batch(
        day,
        now_ms=world.clock.now,
        ttl_epoch_s=_BATCH_TTL,
        status=BatchStatus.COMPLETED,
        expected_count=2,
        queued_count=2,
        completed_count=2,
        failed_count=0,
        error_count=0,
    )
    batch = world.batches.create(made)
    world.created_batches.append(batch.batch_id)
    return batch


def test_status_opens_where_the_grid_does_when_the_latest_dates_have_no_batch(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """The one batch lies 20 days before the latest date a schedule ran for (the world's
    day): the grid opens on its date, and so does status, which says it moved, shows that
    day's batch and exits 1 naming the latest date."""
    old = (date.fromisoformat(world.day) - timedelta(days=20)).isoformat()
    batch = completed_batch(world, old)
    opened = grid(world.ops, UiOptions().days)
    assert (opened.end, opened.moved) == (old, True)
    as_json = dlpipe_cli("status", "--older-than", "0s", "--json")
    assert as_json.json()["date"] == old
    assert as_json.json()["opened"] == {"latest": world.day, "moved": True, "window_days": 14}
    assert [b["batch_id"] for b in as_json.json()["batches"]] == [batch.batch_id]
    shown = dlpipe_cli("status", "--older-than", "0s")
    assert shown.code == 1, shown.err
    assert f"no batch in the 14 days up to {world.day}" in shown.out
    assert f"showing {old}, the latest date that has one" in shown.out
    assert batch.batch_id in shown.out
    assert shown.err.startswith(f"dlpipe: no batch in the 14 days up to {world.day}")

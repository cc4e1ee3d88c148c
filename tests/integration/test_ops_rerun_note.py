"""A rerun's completed count takes in the files completed under the earlier batch of its date
(a rerun adopts unfinished files only): `dlpipe status` says how many sit there, under which
batch, and how to list them, so `completed 20` over a partition of one file is explained."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dlpipe.domain.download_errors import WrongKeyError
from dlpipe.domain.model import JobStatus
from tests.integration.test_batch_outcome import FILES, day_flow
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world
from tests.provider_support import StubFactory

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


@dataclass(frozen=True)
class RerunDay:
    """A day whose first run ended failed with one file in `error`, and the rerun that
    adopted that file and completed it: 20 completed, 19 of them under the first batch."""

    first: str
    rerun: str
    adopted: str  # the one file in the rerun's partition


def _complete(world: World, file_id: str) -> None:
    world.jobs.claim(file_id, "w1", 60)
    world.jobs.complete(file_id, "w1", byte_count=64, sha256="0" * 64, destination_key="k")


def rerun_day(world: World, stub_factory: StubFactory, entity: str) -> RerunDay:
    """The orchestrator's flow over the world's tables: FILES files listed, FILES - 1 of them
    completed and one wrong_key in the first batch, then the rerun of the date."""
    flow = day_flow(world, stub_factory, entity)
    first = flow.create_batch(world.day)
    world.created_batches.append(first)
    flow.fetch_and_queue(first, world.day)
    files = [f"{entity}{n:02d}-{world.day}" for n in range(FILES)]
    world.created_jobs.extend(files)
    for file_id in files[:-1]:
        _complete(world, file_id)
    world.jobs.claim(files[-1], "w1", 60)
    world.jobs.finish_unsuccessfully(
        files[-1], "w1", JobStatus.ERROR, WrongKeyError().error_message
    )
    assert flow.check_completion(first, 1, False).status == "failed"
    rerun = flow.create_batch(world.day, rerun=True)
    world.created_batches.append(rerun)
    assert flow.fetch_and_queue(rerun, world.day).sent == 1  # the unfinished file, adopted
    _complete(world, files[-1])
    assert flow.check_completion(rerun, 1, False).status == "completed"
    stored = world.batches.require(rerun)
    assert (stored.completed, world.jobs.count_by_batch(rerun, JobStatus.COMPLETED)) == (FILES, 1)
    return RerunDay(first, rerun, files[-1])


def test_status_of_a_rerun_says_how_many_completed_files_sit_under_the_earlier_batch(
    world: World, dlpipe_cli: CliRunner, stub_factory: StubFactory, entity: str
) -> None:
    """The rerun counts 20 completed with one file in its partition: status names the 19
    under the first batch and the command that lists them there, and --json says the same."""
    day = rerun_day(world, stub_factory, entity)
    shown = dlpipe_cli("status", "--date", world.day)
    assert shown.code == 0, (shown.out, shown.err)
    lines = shown.out.splitlines()
    note = (
        f"{day.rerun}: 19 of its 20 completed files sit under earlier batch {day.first} of the"
        " date (they completed there; a later run adopts only unfinished files); see them:"
    )
    assert note in lines, shown.out
    assert lines[lines.index(note) + 1] == (
        f"dlpipe jobs list --status completed --batch {day.first}"
    )
    rows = dlpipe_cli("status", "--date", world.day, "--json").json()["batches"]
    carried = {b["batch_id"]: b["carried"] for b in rows}
    assert carried == {day.first: None, day.rerun: {"completed": 19, "under": [day.first]}}

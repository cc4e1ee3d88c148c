"""`dlpipe backfill` against the emulator's batches table, with a recording poller starter."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

import pytest

from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import BatchStatus
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


class RecordingStarter:
    """Remembers which dates it was asked to start, and of which feed."""

    def __init__(self) -> None:
        self.started: list[tuple[str, bool]] = []
        self.feeds: list[str] = []

    def start(self, polling_date: str, rerun: bool, feed: str = DEFAULT_FEED_NAME) -> str:
        self.started.append((polling_date, rerun))
        self.feeds.append(feed)
        return "recorded"


def _days(world: World, count: int) -> list[str]:
    """`count` consecutive dates ending on the world's day."""
    last = date.fromisoformat(world.day)
    return [(last - timedelta(days=n)).isoformat() for n in reversed(range(count))]


def _seed(world: World, days: list[str]) -> None:
    """days[0] completed, days[1] timed out, days[2] running, days[3] never polled."""
    for day, status in zip(
        days, (BatchStatus.COMPLETED, BatchStatus.TIMEOUT, BatchStatus.QUEUED), strict=False
    ):
        world.day = day
        world.batch(status=status)


def test_backfill_starts_only_days_without_a_completed_or_running_batch(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """A completed day and a running day are skipped; the timed-out and the unpolled day start."""
    days = _days(world, 4)
    _seed(world, days)
    starter = RecordingStarter()
    run = dlpipe_cli(
        "backfill",
        "--from",
        days[0],
        "--to",
        days[-1],
        "--json",
        obj=replace(world.ops, starter=starter),
    )
    assert run.code == 0, run.err
    assert starter.started == [(days[1], False), (days[3], False)]
    assert starter.feeds == [DEFAULT_FEED_NAME, DEFAULT_FEED_NAME]
    actions = [d["action"] for d in run.json()["dates"]]
    assert actions == ["skipped", "started", "skipped", "started"]


def test_backfill_rerun_starts_completed_days_too(world: World, dlpipe_cli: CliRunner) -> None:
    """--rerun starts every day of the range, passing rerun to the poller."""
    days = _days(world, 4)
    _seed(world, days)
    starter = RecordingStarter()
    dlpipe_cli(
        "backfill",
        "--from",
        days[0],
        "--to",
        days[-1],
        "--rerun",
        obj=replace(world.ops, starter=starter),
    )
    assert starter.started == [(day, True) for day in days]


def test_backfill_dry_run_starts_nothing_and_writes_nothing(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """--dry-run reports 'would start' and never calls the starter (nor needs an orchestrator ARN)."""
    days = _days(world, 4)
    _seed(world, days)
    before = {d: world.batches.query_by_date(d) for d in days}
    starter = RecordingStarter()
    run = dlpipe_cli(
        "backfill",
        "--from",
        days[0],
        "--to",
        days[-1],
        "--dry-run",
        "--json",
        obj=replace(world.ops, starter=starter),
    )
    assert run.code == 0, run.err
    assert starter.started == []
    assert [d["action"] for d in run.json()["dates"]].count("would start") == 2
    assert {d: world.batches.query_by_date(d) for d in days} == before


@pytest.mark.parametrize(
    ("first_offset", "last_offset", "message"),
    [(-1, -2, "is after --to"), (-100, 0, "at most 92"), (-1, 5, "in the future")],
)
def test_backfill_refuses_a_bad_range_as_a_usage_error(
    world: World, dlpipe_cli: CliRunner, first_offset: int, last_offset: int, message: str
) -> None:
    """A reversed, too long or future range (days from the world's day) exits 2 with the reason."""
    day = date.fromisoformat(world.day)
    first, last = (str(day + timedelta(days=n)) for n in (first_offset, last_offset))
    run = dlpipe_cli("backfill", "--from", first, "--to", last)
    assert run.code == 2
    assert message in run.err


def test_backfill_refuses_a_malformed_date_as_a_usage_error(dlpipe_cli: CliRunner) -> None:
    """--to 1980-13-01 is not a date: exit 2."""
    run = dlpipe_cli("backfill", "--from", "1980-01-01", "--to", "1980-13-01")
    assert run.code == 2
    assert "is not a date" in run.err


def test_backfill_without_an_orchestrator_arn_is_a_one_line_config_error(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """No starter injected and DLPIPE_ORCHESTRATOR_ARN unset: one line, exit 1, naming the
    command that starts a date without a deployed orchestrator."""
    run = dlpipe_cli("backfill", "--from", world.day, "--to", world.day)
    assert run.code == 1
    (line,) = run.err.strip().splitlines()
    assert line.startswith("dlpipe: configuration error: DLPIPE_ORCHESTRATOR_ARN is not set")
    assert "`dlpipe run --date D`" in line


def test_backfill_of_an_orchestrator_that_does_not_exist_is_one_line_naming_the_call(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """DLPIPE_ORCHESTRATOR_ARN naming a function that is not deployed (the emulator has none):
    Lambda's refusal becomes one line at the adapter's edge (service, call, function, AWS's
    code), exit 1."""
    arn = "arn:aws:lambda:us-east-1:123456789012:function:dlpipe-orchestrator:live"
    settings = replace(world.ops.settings, orchestrator_arn=arn)
    run = dlpipe_cli(
        "backfill", "--from", world.day, "--to", world.day, obj=world.rewired(settings)
    )
    assert run.code == 1, run.err
    (line,) = run.err.strip().splitlines()
    assert "Lambda Invoke on 'dlpipe-orchestrator' refused: ResourceNotFoundException" in line

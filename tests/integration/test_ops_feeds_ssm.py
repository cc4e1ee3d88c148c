"""On AWS the operator's commands know the feeds from their SSM parameters (no feeds file):
`dlpipe status` lists each, with or without batches, and its freshness; the default feed's
deadline comes from DLPIPE_DAY_DEADLINE. Parameters in the emulator (moto), as terraform writes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.cli.ui import ui_command
from dlpipe.domain.model import BatchStatus
from tests.integration import test_ops_fixtures as fixtures
from tests.integration.test_feed_parameters import AS_TERRAFORM_WRITES, path, put
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "path", "world"]  # fixtures used by the tests below


def on_aws(world: World, path: str, **changes: object) -> None:
    """The world's ops wired as on AWS: the parameter path set, no feeds file."""
    settings = replace(world.ops.settings, feeds_parameter_path=path, **changes)  # type: ignore[arg-type]
    world.ops = world.rewired(settings)


def test_status_lists_every_feed_under_the_parameter_path_with_its_freshness(
    world: World, dlpipe_cli: CliRunner, clients: AwsClients, path: str
) -> None:
    """Two parameters, no batch of either: both feeds are listed with their start command;
    vendor-b's deadline 09:00 UTC the next day has passed at 10:00Z, vendor-c has none."""
    put(
        clients,
        f"{path}/vendor-b",
        {**AS_TERRAFORM_WRITES, "deadline": "09:00", "time_zone": "UTC"},
    )
    vendor_c = {"name": "vendor-c", "destination_prefix": "vendors/vendor-c"}
    put(clients, f"{path}/vendor-c", {**AS_TERRAFORM_WRITES, **vendor_c})
    world.batch(status=BatchStatus.QUEUED)
    on_aws(world, path)
    payload = dlpipe_cli("status", "--date", world.day, "--json").json()
    by_feed = {d["feed"]: d for d in payload["feeds"]}
    assert sorted(by_feed) == ["default", "vendor-b", "vendor-c"], by_feed
    assert by_feed["vendor-b"]["batches"] == by_feed["vendor-c"]["batches"] == []
    assert by_feed["vendor-b"]["freshness"] == "late by 1 h 00 min"
    assert by_feed["vendor-c"]["freshness"] is None
    run = dlpipe_cli("status", "--date", world.day)
    # vendor-b is late: the date needs the operator (exit 1, one line naming it).
    assert (run.code, run.err) == (1, f"dlpipe: {world.day}: feed vendor-b late by 1 h 00 min\n")
    assert f"batches of {world.day}, feed vendor-c: none" in run.out, run.out
    assert "freshness: late by 1 h 00 min (deadline " in run.out, run.out


def test_day_deadline_gives_the_default_feed_its_freshness(
    world: World, dlpipe_cli: CliRunner, path: str
) -> None:
    """DLPIPE_DAY_DEADLINE 08:30 (UTC): the default feed's day, not complete at 10:00Z the
    next day, is late by 90 min; an empty parameter path lists the default feed alone."""
    world.batch(status=BatchStatus.QUEUED)
    on_aws(world, path, day_deadline="08:30")
    payload = dlpipe_cli("status", "--date", world.day, "--json").json()
    fresh = {d["feed"]: d["freshness"] for d in payload["feeds"]}
    assert fresh == {"default": "late by 1 h 30 min"}


def test_a_malformed_day_deadline_is_one_line_naming_the_variable(
    world: World, dlpipe_cli: CliRunner, path: str
) -> None:
    on_aws(world, path, day_deadline="25:99")
    run = dlpipe_cli("status", "--date", world.day)
    assert run.code == 1, run.out
    assert run.err.startswith("dlpipe: configuration error: DLPIPE_DAY_DEADLINE: "), run.err
    assert len(run.err.splitlines()) == 1, run.err


def test_a_bad_parameter_is_one_line_naming_it(
    world: World, dlpipe_cli: CliRunner, clients: AwsClients, path: str
) -> None:
    put(clients, f"{path}/vendor-b", "not json")
    on_aws(world, path)
    run = dlpipe_cli("status", "--date", world.day)
    assert run.code == 1, run.out
    assert (
        run.err == f"dlpipe: feeds.vendor-b: SSM parameter {path}/vendor-b is not a JSON object\n"
    )


def test_two_parameters_with_overlapping_prefixes_are_one_line_naming_both(
    world: World, dlpipe_cli: CliRunner, clients: AwsClients, path: str
) -> None:
    """`shared` and `shared/ssmb`: the operator is told which feeds and prefixes clash."""
    for name, prefix in (("ssma", "shared"), ("ssmb", "shared/ssmb")):
        put(
            clients,
            f"{path}/{name}",
            {**AS_TERRAFORM_WRITES, "name": name, "destination_prefix": prefix},
        )
    on_aws(world, path)
    run = dlpipe_cli("status", "--date", world.day)
    assert run.code == 1, run.out
    assert run.err == (
        "dlpipe: feeds.ssmb.destination_prefix: 'shared/ssmb' overlaps feed ssma's 'shared' (no"
        " prefix may equal, contain or lie inside another, in any letter case)\n"
    )


def test_dlpipe_ui_stops_at_a_bad_parameter_before_serving(
    world: World,
    dlpipe_cli: CliRunner,
    clients: AwsClients,
    path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The web view reads the feeds once at start: a bad parameter is the command's one line,
    not an error page on every request."""
    import dlpipe.ui.server

    monkeypatch.setattr(fixtures, "COMMANDS", [*fixtures.COMMANDS, ui_command])

    def serve(*_: object, **__: object) -> None:
        raise AssertionError("served with a bad feed parameter")

    monkeypatch.setattr(dlpipe.ui.server, "serve", serve)
    put(clients, f"{path}/vendor-b", {**AS_TERRAFORM_WRITES, "time_zone": "Mars/Base"})
    on_aws(world, path)
    run = dlpipe_cli("ui", "--port", "0")
    assert run.code == 1, (run.out, run.err)
    assert run.err == "dlpipe: feeds.vendor-b.time_zone: 'Mars/Base' is not an IANA time zone\n"

"""Values from a provider or a job record reach the operator's terminal as plain text: rich
markup in them is shown, not interpreted, and control characters are shown as escapes."""

from __future__ import annotations

import pytest

from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below

CLOSE = "[/]"
LINK = "[link=https://evil.example/]click[/link]"
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
RAW = "\x1b\x07\x9b"  # ESC, BEL and the 8-bit CSI: none may reach the terminal as written


def _seed(world: World, entity: str, error: str) -> tuple[str, str]:
    """A batch and a job of the world's day whose error message (and the job's cipher and
    entity attributes) hold `error`; returns (batch id, file id)."""
    batch = world.batch(error_message=error)
    job = world.job(entity, batch_id=batch.batch_id, cipher=error, error_message=error)
    world.clients.dynamodb.update_item(
        TableName=world.jobs.table_name,
        Key={"FileID": {"S": job.file_id}},
        UpdateExpression="SET Entity = :e",
        ExpressionAttributeValues={":e": {"S": error}},
    )
    world.clock.advance(3600)  # stuck for `status`
    return batch.batch_id, job.file_id


def _commands(world: World, batch_id: str, file_id: str) -> list[tuple[str, ...]]:
    return [
        ("status", "--date", world.day),
        ("batch", "show", "--date", world.day),
        ("batch", "list", "--date", world.day),
        ("jobs", "show", file_id),
        ("jobs", "list", "--batch", batch_id),
        ("jobs", "stuck", "--status", "available"),
    ]


@pytest.mark.parametrize("value", [CLOSE, LINK, f"{CLOSE} {LINK}"])
def test_markup_in_a_record_is_printed_as_written(
    world: World, dlpipe_cli: CliRunner, entity: str, value: str
) -> None:
    """`[/]` and a `[link=...]` in an ErrorMessage, a cipher or an entity: every command
    prints them literally and exits 0 (before: a MarkupError traceback, or a live link)."""
    batch_id, file_id = _seed(world, entity, value)
    for args in _commands(world, batch_id, file_id):
        run = dlpipe_cli(*args)
        assert (run.code, "Traceback" in run.err) == (0, False), (args, run.err[-800:])
        assert value in run.out.replace("\n", ""), (args, run.out)


@pytest.mark.parametrize("value", [TITLE, CLEAR, RAW])
def test_control_characters_in_a_record_are_shown_as_escapes(
    world: World, dlpipe_cli: CliRunner, entity: str, value: str
) -> None:
    """An ESC (or BEL, or an 8-bit CSI) in a record is printed as `\\x1b` (`\\x07`, `\\x9b`),
    never raw: the terminal's title, screen and links stay the operator's."""
    batch_id, file_id = _seed(world, entity, value)
    for args in _commands(world, batch_id, file_id):
        run = dlpipe_cli(*args)
        assert run.code == 0, (args, run.err[-800:])
        raw = [c for c in "\x1b\x07\x9b" if c in run.out + run.err]
        assert raw == [], (args, run.out)
        assert "\\x1b" in run.out or "\\x07" in run.out, (args, run.out)


@pytest.mark.parametrize("value", [TITLE, LINK])
def test_json_output_escapes_control_characters(
    world: World, dlpipe_cli: CliRunner, entity: str, value: str
) -> None:
    """--json: the value round-trips through the JSON document and no control character is
    written raw."""
    _, file_id = _seed(world, entity, value)
    run = dlpipe_cli("jobs", "show", file_id, "--json")
    assert (run.code, run.json()["error_message"]) == (0, value)
    assert ("\x1b" in run.out, "\x07" in run.out) == (False, False)

"""The lazy command map of `dlpipe` (dlpipe/cli/main.py) against the commands it names: the
listing `dlpipe --help` prints from the map is the one click prints from the commands."""

from __future__ import annotations

import importlib
import sys

import click
import pytest

from dlpipe.cli.lazy import LazyGroup
from dlpipe.cli.main import COMMANDS, EXPECTED, cli, expected_template
from dlpipe.cli.ops.commands import COMMANDS as OPS_COMMANDS


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_entry_names_its_command_and_its_first_help_line(name: str) -> None:
    entry = COMMANDS[name]
    command = entry.load()
    assert command.name == name
    assert entry.short_help == command.get_short_help_str(limit=sys.maxsize)
    for limit in range(10, 120):
        assert entry.listed_help(limit) == command.get_short_help_str(limit), limit


def test_every_ops_command_is_in_the_map() -> None:
    for command in OPS_COMMANDS:
        assert command.name is not None
        assert COMMANDS[command.name].load() is command


@pytest.mark.parametrize("width", [40, 80, 200])
def test_the_listing_is_click_s_own(width: int) -> None:
    """Byte for byte what a plain group of the loaded commands prints."""
    lazy = LazyGroup("dlpipe", lazy_commands=COMMANDS, help=cli.help)
    eager = click.Group("dlpipe", commands=[e.load() for e in COMMANDS.values()], help=cli.help)
    lazy_ctx = click.Context(lazy, info_name="dlpipe", terminal_width=width)
    eager_ctx = click.Context(eager, info_name="dlpipe", terminal_width=width)
    assert lazy.get_help(lazy_ctx) == eager.get_help(eager_ctx)


def test_an_unknown_command_is_still_none() -> None:
    assert cli.get_command(click.Context(cli), "nosuch") is None


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, n, _ in EXPECTED])
def test_each_expected_error_names_a_class(module: str, name: str) -> None:
    """A typo in a module or class name would let that error through as a traceback."""
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, Exception)
    assert expected_template(cls.__new__(cls)) is not None


def test_any_other_error_is_not_expected() -> None:
    assert expected_template(KeyError("x")) is None

"""A click group that imports a command's module only when that command is run or asked for
its own help (click's documented lazy-loading pattern).

`dlpipe --help` lists every command: the listing takes each command's short help from the
map, so printing it imports no command module (and none of boto3, the local stack or the
durable SDK behind them). tests/unit/test_cli_lazy.py holds each map entry to its command.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives (`module:attr`) and its short help, as `--help` lists it."""

    target: str
    short_help: str

    def load(self) -> click.Command:
        """Import the command's module and return the command."""
        module_name, attr = self.target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.target} is not a click command")
        return command

    def listed_help(self, limit: int) -> str:
        """The short help cut to `limit` exactly as click cuts the command's own help."""
        return click.Command(None, help=self.short_help).get_short_help_str(limit)


class LazyGroup(click.Group):
    """A group whose commands are imported on first use, named by a map of LazyCommands."""

    def __init__(
        self, name: str | None = None, *, lazy_commands: Mapping[str, LazyCommand], **kwargs: Any
    ) -> None:
        super().__init__(name, **kwargs)
        self.lazy_commands = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            self.add_command(self.lazy_commands[cmd_name].load(), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing (rows, widths, cut), with a lazy command's help from the map."""
        names = [n for n in self.list_commands(ctx) if n in self.lazy_commands or self._shown(n)]
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, self._short_help(name, limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _shown(self, name: str) -> bool:
        command = self.commands.get(name)
        return command is not None and not command.hidden

    def _short_help(self, name: str, limit: int) -> str:
        if name in self.commands:
            return self.commands[name].get_short_help_str(limit)
        return self.lazy_commands[name].listed_help(limit)

"""Errors an operator can act on: one line on stderr and exit code 1, never a traceback."""

from __future__ import annotations

from typing import IO, Any

import click

from dlpipe.cli.safe_text import error_line


class OpsError(click.ClickException):
    """An expected failure of an operator command; shown as `dlpipe: <message>`."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the one-line message to stderr."""
        click.echo(error_line(self.format_message()), err=True, file=file)


class IncompleteRecoveryError(OpsError):
    """Some requested files were refused, unknown or not sent; the summary says which."""


class IncompleteDaysError(OpsError):
    """An audit found dates whose batch did not complete every listed file."""

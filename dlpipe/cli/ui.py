"""`dlpipe ui`: serve the read-only web view on 127.0.0.1 against AWS or the local stack."""

from __future__ import annotations

import errno

import click

from dlpipe.cli.ops.context import pass_ops
from dlpipe.cli.ops.options import older_than_option
from dlpipe.services.ops.context import OpsContext

_DEFAULT_PORT = 8765
# A port taken by another process, or one below 1024 without the privilege to bind it.
_CANNOT_LISTEN = (errno.EADDRINUSE, errno.EACCES)


@click.command("ui")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=_DEFAULT_PORT,
    show_default=True,
    help="Port on 127.0.0.1; 0 picks a free one.",
)
@click.option(
    "--days",
    type=click.IntRange(1, 92),
    default=14,
    show_default=True,
    help="Dates in the grid (one PollingDateIndex query each).",
)
@click.option(
    "--refresh",
    "refresh_s",
    type=click.FloatRange(0.5, 3600),
    default=5.0,
    show_default=True,
    help="Seconds between refreshes of a page while a batch in view runs.",
)
@older_than_option
@pass_ops
def ui_command(ops: OpsContext, port: int, days: int, refresh_s: float, older_than_s: int) -> None:
    """Serve a read-only web view of the batches and files (Ctrl-C stops it)."""
    # Imported here, not at the top: the rest of the CLI works without the `ui` extra.
    try:
        from dlpipe.ui.app import create_app  # noqa: PLC0415
        from dlpipe.ui.options import UiOptions  # noqa: PLC0415
        from dlpipe.ui.server import serve  # noqa: PLC0415
    except ModuleNotFoundError as exc:  # flask or waitress is missing
        raise click.ClickException(
            f"dlpipe ui needs the `ui` extra ({exc.name} is missing): pip install 'dlpipe[ui]'"
        ) from exc
    options = UiOptions(days=days, refresh_seconds=refresh_s, stuck_older_than_s=older_than_s)
    # The configured feeds read now (on AWS, the SSM parameters): a bad one stops the command
    # with its one line rather than failing every page.
    len(ops.feeds)
    try:
        serve(create_app(ops, options), port, on_ready=_announce)
    except OSError as exc:
        if exc.errno not in _CANNOT_LISTEN:
            raise
        reason = (
            "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
        )
        raise click.ClickException(
            f"port {port} of 127.0.0.1 {reason}: choose another with --port, or --port 0 for"
            " a free one"
        ) from exc


def _announce(url: str) -> None:
    click.echo(f"dlpipe ui: {url} (read-only; Ctrl-C stops it)", err=True)

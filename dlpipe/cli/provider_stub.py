"""`dlpipe provider-stub`: the stub provider in the foreground, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import click

from dlpipe.config import ENV_ENDPOINT_URL, ENV_PROVIDER_TOKEN, Settings
from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.model import validate_date
from dlpipe.local.stub import DEFAULT_BUCKET
from dlpipe.local.stub.faults import BROKEN_PAGE_KINDS, Faults
from dlpipe.log import configure_logging


def _dates(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> list[str]:
    try:
        return [validate_date(value) for value in values]
    except InvalidIdentifierError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command("provider-stub")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8900,
    show_default=True,
    help="0 picks a free port.",
)
@click.option(
    "--public-key",
    "public_key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="PEM RSA public key that wraps each file's AES key.",
)
@click.option(
    "--token",
    envvar=ENV_PROVIDER_TOKEN,
    required=True,
    help=f"Bearer token clients must send (default: ${ENV_PROVIDER_TOKEN}).",
)
@click.option(
    "--files",
    "n_files",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Files per day (default_day).",
)
@click.option(
    "--date",
    "dates",
    multiple=True,
    callback=_dates,
    help="Publish this date at start; other dates publish on their first listing.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the plaintext and of the fault draws.",
)
@click.option(
    "--bucket", default=DEFAULT_BUCKET, show_default=True, help="Bucket for the ciphertext."
)
@click.option(
    "--page-size",
    type=click.IntRange(min=1),
    default=None,
    help="Serve the listing in pages of N entries linked by `next` cursors (default: one answer).",
)
@click.option(
    "--synthetic-files",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Add N listing-only entries (synthetic_0000000, ...): signed URLs of objects never"
    " stored, so large days list without storing files; downloading them gets 404.",
)
@click.option(
    "--broken-page",
    type=click.IntRange(min=1),
    default=None,
    help="Fault: answer listing page N (1-based) with broken JSON.",
)
@click.option(
    "--broken-kind",
    type=click.Choice(BROKEN_PAGE_KINDS),
    default=BROKEN_PAGE_KINDS[0],
    show_default=True,
    help="How --broken-page breaks: truncated (stops mid-entry) or malformed (a bad token).",
)
@click.option(
    "--broken-at-entry",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Entries of the broken page served intact before the break.",
)
def provider_stub(  # noqa: PLR0917 - click passes every option as an argument
    port: int,
    public_key: Path,
    token: str,
    n_files: int,
    dates: list[str],
    seed: int,
    bucket: str,
    page_size: int | None,
    synthetic_files: int,
    broken_page: int | None,
    broken_kind: str,
    broken_at_entry: int,
) -> None:
    """Serve the provider API on 127.0.0.1 (needs AWS_ENDPOINT_URL pointing at the emulator)."""
    # boto3 and cryptography load when the stub starts, not for `--help`.
    from dlpipe.adapters.aws import AwsClients  # noqa: PLC0415
    from dlpipe.local.stub.crypto import load_public_key  # noqa: PLC0415
    from dlpipe.local.stub.publish import default_day  # noqa: PLC0415
    from dlpipe.local.stub.server import StubProvider  # noqa: PLC0415

    try:  # a file that is no RSA public key: one line, before anything starts
        load_public_key(public_key.read_bytes())
    except (ValueError, TypeError) as exc:
        reason = str(exc).split(".", 1)[0]
        raise click.BadParameter(
            f"{public_key}: not a PEM RSA public key ({reason})", param_hint="'--public-key'"
        ) from exc
    settings = Settings.from_env()
    if not settings.endpoint_url:
        raise click.UsageError(f"{ENV_ENDPOINT_URL} must point at the emulator")
    configure_logging(settings.log_level)
    stopping = threading.Event()

    def stop(_signum: int, _frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    faults = Faults(
        broken_page=broken_page or 0, broken_page_kind=broken_kind, broken_at_entry=broken_at_entry
    )
    stub = StubProvider(
        AwsClients(settings), public_key.read_bytes(), token, default_day(n_files),
        bucket=bucket, seed=seed, port=port, faults=faults, page_size=page_size,
        synthetic_files=synthetic_files,
    )  # fmt: skip
    with stub:
        for day in dates:
            stub.publish(day)
        click.echo(stub.base_url)  # stdout: the one line a script needs; logs go to stderr
        while not stopping.wait(0.5):
            pass


if __name__ == "__main__":
    provider_stub()

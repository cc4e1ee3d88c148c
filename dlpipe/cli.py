"""The `dlpipe` command line: entry point only; commands live in their packages."""

from __future__ import annotations

import click


@click.group()
def cli() -> None:
    """dlpipe: daily download-pipeline orchestrator on AWS."""


def main() -> None:
    """Console-script entry point."""
    cli()

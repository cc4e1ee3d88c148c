"""The ops commands' context: built from the environment, or passed in by tests as click's obj."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

import click

from dlpipe.config import ENV_LOG_LEVEL, Settings
from dlpipe.log import configure_logging
from dlpipe.services.ops.context import OpsContext

INTERACTIVE_LOG_LEVEL = "WARNING"
P = ParamSpec("P")
R = TypeVar("R")


class _Stderr:
    """Writes to whatever sys.stderr is at the time, so logs never land on stdout."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def context_from_env() -> OpsContext:
    """Settings from the environment, real clients, the wall clock; logs to stderr, warnings
    and errors only unless DLPIPE_LOG_LEVEL says otherwise: an operator command's table says
    what it did, an INFO line above it is noise (README: "Logs of the commands")."""
    settings = Settings.from_env()
    level = settings.log_level if os.environ.get(ENV_LOG_LEVEL) else INTERACTIVE_LOG_LEVEL
    configure_logging(level, stream=_Stderr())
    from dlpipe.bootstrap.ops import build_ops_context  # noqa: PLC0415 - boto3: not for `--help`

    return build_ops_context(settings)


def get_context(ctx: click.Context) -> OpsContext:
    """The OpsContext passed as click's `obj`, or one built from the environment."""
    found = ctx.find_object(OpsContext)
    if found is None:
        found = context_from_env()
        ctx.obj = found
    return found


def pass_ops(
    command: Callable[Concatenate[OpsContext, P], R],
) -> Callable[P, R]:
    """Decorator: call `command` with the OpsContext as its first argument."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return command(get_context(click.get_current_context()), *args, **kwargs)

    return wrapper

"""Wiring of the operator commands: the OpsContext their use cases run against."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import Settings
from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.services.ops.context import RECEIVE_WAIT_SECONDS, OpsContext

if TYPE_CHECKING:
    from dlpipe.services.ops.backfill import Starter


def build_ops_context(
    settings: Settings,
    clients: AwsClients | None = None,
    *,
    clock: Clock | None = None,
    starter: Starter | None = None,
    receive_wait_seconds: int = RECEIVE_WAIT_SECONDS,
) -> OpsContext:
    """The ops context on real clients and the wall clock; each keyword replaces one."""
    return OpsContext(
        settings=settings,
        clients=clients or AwsClients(settings),
        clock=clock or SystemClock(),
        starter=starter,
        receive_wait_seconds=receive_wait_seconds,
    )

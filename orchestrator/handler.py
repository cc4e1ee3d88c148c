"""Lambda entry point: the durable orchestrator, wired from the environment on first use."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from dlpipe.config import Settings
from dlpipe.domain.outage import OutageBackoff
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.ports import BatchFlow


def _build_flow(settings: Settings) -> BatchFlow:
    # Imported here so this module imports (and Lambda init builds nothing) before any AWS call.
    # The ignore only matters while flow.py is being written alongside this module.
    from dlpipe.services.orchestrator.flow import (  # type: ignore[import-not-found, unused-ignore]  # noqa: PLC0415
        build_flow,
    )

    flow: BatchFlow = build_flow(settings)
    return flow


@functools.cache
def durable_handler() -> Callable[[Any, Any], Any]:
    """The durable handler, built once per Lambda container from Settings.from_env()."""
    settings = Settings.from_env()
    return build_durable_handler(
        functools.partial(_build_flow, settings),
        settings.poll_interval_seconds,
        settings.max_polls,
        date_offset_days=settings.date_offset_days,
        outage=OutageBackoff(budget_seconds=settings.provider_outage_budget_seconds),
    )


def handler(event: Any, context: Any) -> Any:
    """Lambda handler (orchestrator.handler.handler): one durable invocation."""
    return durable_handler()(event, context)

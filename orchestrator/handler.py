"""Lambda entry point: the durable orchestrator, wired from the environment on first use."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from dlpipe.bootstrap.orchestrator import build_flow, build_orchestrator_handler
from dlpipe.config import Settings


@functools.cache
def durable_handler() -> Callable[[Any, Any], Any]:
    """The durable handler, built once per Lambda container from Settings.from_env()."""
    settings = Settings.from_env()
    # The flow itself is built, from the event's feed's settings, inside the first step that
    # runs (a name looked up then, so a test may replace it).
    return build_orchestrator_handler(settings, lambda own: build_flow(own))  # noqa: PLW0108


def handler(event: Any, context: Any) -> Any:
    """Lambda handler (orchestrator.handler.handler): one durable invocation."""
    return durable_handler()(event, context)

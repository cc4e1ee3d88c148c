"""The durable SDK's log of a retried step, at the level it deserves.

The SDK logs each failed step attempt at ERROR with a traceback (operation/step.py), even one
that its retry strategy is about to retry. An outage being waited out within its budget is
not an error: the flow logs it once as a warning (batch.provider_unavailable,
batch.dependency_unavailable), and here the SDK's line becomes a one-line warning as well.
"""

from __future__ import annotations

import logging

from dlpipe.domain.errors import DependencyUnavailableError
from dlpipe.services.orchestrator.ports import ProviderOutage

_SDK_STEP_LOGGER = "aws_durable_execution_sdk_python.operation.step"


class _OutageRetryLog(logging.Filter):
    """The SDK logs each failed step attempt at ERROR with a traceback. An attempt that met an
    outage being waited out (logged by us as batch.*_unavailable) is a one-line warning there
    too; a budget spent (OutageBudgetSpent, DependencyBudgetSpent) stays an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, ProviderOutage | DependencyUnavailableError):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
            # Formatted now (no args left), so an exception text with a % in it stays text.
            record.msg = f"{record.getMessage()} (retried later: {type(exc).__name__}: {exc})"
            record.args = ()
        return True


def quiet_sdk_retry_logs() -> None:
    """Install the filter on the SDK's step logger (once per process)."""
    sdk_steps = logging.getLogger(_SDK_STEP_LOGGER)
    if not any(isinstance(f, _OutageRetryLog) for f in sdk_steps.filters):
        sdk_steps.addFilter(_OutageRetryLog())

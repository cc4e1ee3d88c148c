"""The local durable runner refuses what the Lambda durable service refuses: checkpoints > 256 KB."""

from __future__ import annotations

from typing import Any

import pytest
from aws_durable_execution_sdk_python import durable_execution
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.context import DurableContext
from aws_durable_execution_sdk_python.retries import RetryDecision

from dlpipe.local.durable_runner import LocalRunError, run_durable_locally

# The failing case takes ~20 s: the SDK gives up on its checkpoint thread after its own timeout.
pytestmark = pytest.mark.integration

LIMIT_BYTES = 256 * 1024


def _handler_returning_a_step_result_of(n_bytes: int) -> Any:
    @durable_execution
    def handler(event: Any, context: DurableContext) -> dict[str, Any]:
        result = context.step(
            lambda _step: "x" * n_bytes,
            name="big-step",
            config=StepConfig(retry_strategy=lambda _e, _n: RetryDecision.no_retry()),
        )
        return {"length": len(result)}

    return handler


def test_a_step_result_just_under_the_checkpoint_limit_is_checkpointed() -> None:
    """A step result of 250 KB (JSON-encoded) passes, as on AWS."""
    result = run_durable_locally(_handler_returning_a_step_result_of(250 * 1024), {})
    assert result == {"length": 250 * 1024}


def test_a_step_result_over_the_checkpoint_limit_fails_the_execution() -> None:
    """A step result over 256 KB cannot be checkpointed: the run fails naming the limit
    (the testing package alone let it through)."""
    with pytest.raises(LocalRunError, match="checkpoint limit"):
        run_durable_locally(_handler_returning_a_step_result_of(LIMIT_BYTES + 1024), {})

"""Run a durable handler in-process under the SDK's local runner: no AWS, no pytest needed."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestResult

# The runner's execution timer fires in real seconds; this backstop only catches a runner
# that never reports at all.
_WAIT_GRACE_SECONDS = 5.0


class LocalRunError(RuntimeError):
    """The durable execution failed, timed out or returned no result; the message says which."""

    def __init__(
        self, message: str, *, execution_status: str | None = None, error_type: str | None = None
    ) -> None:
        super().__init__(message)
        self.execution_status = execution_status
        self.error_type = error_type


def run_durable_locally(
    handler: Callable[..., Any],
    event: dict[str, Any],
    skip_time: bool = True,
    timeout_seconds: float = 300.0,
) -> dict[str, Any]:
    """Run `handler` (a @durable_execution function) to its end and return its result dict.

    With skip_time, durable waits and retry backoffs pass in virtual time; `timeout_seconds`
    is real time. Raises LocalRunError unless the execution succeeded with a JSON object.
    """
    # Imported here: the testing package is a local/dev extra, absent from the Lambda bundle.
    from aws_durable_execution_sdk_python_testing.runner import (  # noqa: PLC0415
        DurableFunctionTestRunner,
    )

    enforce_checkpoint_size_limit()

    # The context manager's close() stops the runner's scheduler and worker pools; a handler
    # still busy in a step when the run times out finishes on its own daemon thread.
    with DurableFunctionTestRunner(handler=handler, skip_time=skip_time) as runner:
        execution_arn = runner.run_async(
            input=json.dumps(event), execution_timeout=max(1, math.ceil(timeout_seconds))
        )
        try:
            outcome = runner.wait_for_result(
                execution_arn, timeout=timeout_seconds + _WAIT_GRACE_SECONDS
            )
        except TimeoutError as exc:
            raise LocalRunError(
                f"durable execution did not finish within {timeout_seconds}s"
            ) from exc
    return _result_of(outcome)


_LIMIT_INSTALLED = False


def enforce_checkpoint_size_limit() -> None:
    """Make the local runner refuse an operation payload over 256 KB, as the Lambda durable
    service does (the testing package checks only error objects and chained invokes).

    A step whose result outgrows a checkpoint then fails here, in a test, not on AWS.
    """
    global _LIMIT_INSTALLED  # noqa: PLW0603 - one patch per process, installed on first use
    if _LIMIT_INSTALLED:
        return
    from aws_durable_execution_sdk_python.constants import (  # noqa: PLC0415
        CHECKPOINT_SIZE_LIMIT_BYTES,
    )
    from aws_durable_execution_sdk_python_testing.checkpoint.validators.checkpoint import (  # noqa: PLC0415
        CheckpointValidator,
    )
    from aws_durable_execution_sdk_python_testing.exceptions import (  # noqa: PLC0415
        InvalidParameterValueException,
    )

    original = CheckpointValidator._validate_payload_sizes

    def validate(update: Any, execution: Any) -> None:
        payload = getattr(update, "payload", None)
        if payload is not None and len(payload.encode("utf-8")) > CHECKPOINT_SIZE_LIMIT_BYTES:
            raise InvalidParameterValueException(
                f"operation {getattr(update, 'name', None) or update.operation_id} payload is "
                f"{len(payload.encode('utf-8'))} bytes: over the {CHECKPOINT_SIZE_LIMIT_BYTES}-byte "
                "checkpoint limit"
            )
        original(update, execution)

    CheckpointValidator._validate_payload_sizes = staticmethod(validate)  # type: ignore[method-assign]
    _LIMIT_INSTALLED = True


def _result_of(outcome: DurableFunctionTestResult) -> dict[str, Any]:
    """The handler's result dict from the runner's outcome, or LocalRunError."""
    status = outcome.execution_status.value if outcome.execution_status else "UNKNOWN"
    if status != "SUCCEEDED":
        error_type = outcome.error.type if outcome.error else None
        message = (outcome.error.message if outcome.error else None) or "no error recorded"
        raise LocalRunError(
            f"durable execution {status}: {error_type or 'error'}: {message}",
            execution_status=status,
            error_type=error_type,
        )
    result = json.loads(outcome.result) if outcome.result else None
    if not isinstance(result, dict):
        raise LocalRunError(f"durable execution returned {result!r}, not a JSON object")
    return result

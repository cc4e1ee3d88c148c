"""Lambda entry point for the SQS event source (downloader.handler.handler).

The logic lives in dlpipe.entrypoints.lambda_batch; nothing AWS is touched at import:
the runtime is built on the first call, once per execution environment.
"""

from __future__ import annotations

import threading
from typing import Any

from dlpipe.entrypoints.lambda_batch import Runtime, build_runtime, handle_event

_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def _get_runtime() -> Runtime:
    global _runtime  # noqa: PLW0603 - the execution environment's cache, built on first use
    with _runtime_lock:
        if _runtime is None:
            _runtime = build_runtime()
        return _runtime


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda handler (downloader.handler.handler)."""
    return handle_event(event, _get_runtime(), context)

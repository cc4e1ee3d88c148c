"""One EMF document per finished file (completed, failed, error): what the dashboard graphs.

Dimensions stay low-cardinality (dlpipe.metrics.FILE_DIMENSION_SETS); the FileID, BatchID and
Cipher ride along as properties, searchable in CloudWatch Logs Insights, never a dimension.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dlpipe import metrics
from dlpipe.domain.cipher_format import SUPPORTED_CIPHERS
from dlpipe.domain.model import FileJob
from dlpipe.log import get_logger

log = get_logger()

# Set by the Lambda runtime in every function, never in an ECS task or a local worker.
LAMBDA_FUNCTION_ENV = "AWS_LAMBDA_FUNCTION_NAME"
NO_ERROR = "none"
LAMBDA, WORKER = "lambda", "worker"  # the Component dimension's two values


@dataclass(frozen=True)
class FileFinish:
    """How one claimed file ended, as far as its metrics go."""

    outcome: str  # completed | failed | error
    error_code: str = NO_ERROR
    seconds: float | None = None  # claim to outcome; None when nothing was attempted
    byte_count: int | None = None  # plaintext bytes transferred and published by this claim
    transfers: int = 0  # transfers tried under this claim


def component() -> str:
    """`lambda` inside the Lambda runtime, `worker` for the long-poll worker."""
    return LAMBDA if os.environ.get(LAMBDA_FUNCTION_ENV) else WORKER


def record_finished(job: FileJob, finish: FileFinish) -> None:
    """Write the file's EMF document; a metric never changes how the file ended."""
    values: metrics.MetricValues = {
        metrics.FILE_DOWNLOADS: (1, metrics.COUNT),
        metrics.FILE_ATTEMPTS: (job.attempts, metrics.COUNT),
        metrics.FILE_TRANSFER_ATTEMPTS: (finish.transfers, metrics.COUNT),
    }
    if finish.seconds is not None:
        values[metrics.FILE_DOWNLOAD_SECONDS] = (finish.seconds, metrics.SECONDS)
    if finish.byte_count is not None:
        values[metrics.FILE_BYTES] = (finish.byte_count, metrics.BYTES)
        if finish.seconds:
            throughput = finish.byte_count / finish.seconds
            values[metrics.FILE_THROUGHPUT] = (throughput, metrics.BYTES_PER_SECOND)
    dimensions = {
        "Component": component(),
        "Outcome": finish.outcome,
        "ErrorCode": finish.error_code,
        metrics.FEED: job.feed,
    }
    # Provider input: an unknown cipher is written as "other", never as the provider sent it.
    cipher = job.cipher if job.cipher in SUPPORTED_CIPHERS else "other"
    properties = {"FileID": job.file_id, "BatchID": job.batch_id, "Cipher": cipher}
    try:
        metrics.emit(values, dimensions=dimensions, **properties)
    except Exception as exc:  # noqa: BLE001 - the job's status is already written; keep it
        log.warning("metrics.emit_failed", error_type=type(exc).__name__, error=str(exc))

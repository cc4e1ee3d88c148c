"""CloudWatch Embedded Metric Format lines (namespace `dlpipe`), via Powertools.

In Lambda the lines go to stdout, where CloudWatch Logs turns them into metrics (the ECS
worker's awslogs driver sends stdout to CloudWatch Logs the same way); local runs can send
them elsewhere with `set_sink`. CATALOG names every metric dlpipe emits and the dimension
sets it is emitted under: `emit` refuses anything else, and the static tests check the
dashboard and the alarms in terraform/ against it, so a renamed metric fails a test.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Mapping, Sequence

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from dlpipe.domain.model import parse_batch_key
from dlpipe.domain.redaction import redact
from dlpipe.domain.statuses import FINISHED_BATCH_METRIC, BatchStatus

NAMESPACE = "dlpipe"
COUNT = MetricUnit.Count
BYTES = MetricUnit.Bytes
SECONDS = MetricUnit.Seconds
BYTES_PER_SECOND = MetricUnit.BytesPerSecond

DimensionSets = tuple[tuple[str, ...], ...]
MetricValues = dict[str, tuple[float, MetricUnit]]  # name -> (value, unit)

# The feed a batch or file belongs to: its name, "default" for the default feed. A handful
# of values per deployment (the feeds map's keys), never a BatchID or FileID.
FEED = "Feed"
# The orchestrator's and the sweeper's metrics, one per batch (BatchID is only a property):
# with no dimensions, every feed's total, which the deployment-wide alarms and graphs in
# terraform/ watch (a deployment without named feeds has the default feed's alone there); and
# by Feed, which the per-feed alarms and dashboard rows watch.
BATCH_DIMENSION_SETS: DimensionSets = ((), (FEED,))
# The downloader's per-file metrics (dlpipe/services/download/file_metrics.py). Every value
# is low-cardinality: Component lambda|worker, Outcome completed|failed|error, ErrorCode a
# DownloadError code or "none", Feed a feed's name; never a FileID. Each set is what a
# dashboard widget reads; every set multiplies the custom metrics billed, so a question no
# widget asks (throughput by cipher, say) is answered from the documents' properties in Logs
# Insights instead.
FILE_DIMENSION_SETS: DimensionSets = (
    ("Outcome",),
    ("Component", "Outcome"),
    ("Outcome", "ErrorCode"),
    (FEED, "Outcome"),
)

BATCH_METRICS = (
    "FilesExpected",
    "FilesQueued",
    "FilesRejected",
    *FINISHED_BATCH_METRIC.values(),  # BatchCompleted, BatchFailed, BatchTimedOut
    "FilesCompleted",
    "FilesFailed",
    "BatchDurationSeconds",
    "StuckJobs",
)
FILE_DOWNLOADS = "FileDownloads"  # 1 per finished file
FILE_BYTES = "FileBytes"  # plaintext bytes published (completed files)
FILE_DOWNLOAD_SECONDS = "FileDownloadSeconds"  # claim to outcome, retries included
FILE_THROUGHPUT = "FileThroughput"  # FileBytes / FileDownloadSeconds
FILE_ATTEMPTS = "FileAttempts"  # claims of the job so far (1 unless redelivered or taken over)
FILE_TRANSFER_ATTEMPTS = "FileTransferAttempts"  # transfers tried under this claim
FILE_METRICS = (
    FILE_DOWNLOADS,
    FILE_BYTES,
    FILE_DOWNLOAD_SECONDS,
    FILE_THROUGHPUT,
    FILE_ATTEMPTS,
    FILE_TRANSFER_ATTEMPTS,
)

# The metric counted once when a batch ends in a final status (the status table's rows).
BATCH_FINISHED: Mapping[BatchStatus, str] = FINISHED_BATCH_METRIC
CATALOG: Mapping[str, DimensionSets] = {
    **dict.fromkeys(BATCH_METRICS, BATCH_DIMENSION_SETS),
    **dict.fromkeys(FILE_METRICS, FILE_DIMENSION_SETS),
}

_stdout_lock = threading.Lock()


def stdout_line(line: str) -> None:
    """One EMF document per line, whole: a worker's threads emit at once, and a line split
    between two writes (print writes the text and its newline apart) can interleave with
    another thread's, leaving two documents on one line that CloudWatch cannot parse."""
    with _stdout_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


_sink: Callable[[str], None] = stdout_line


def batch_dimensions(batch_id: str) -> dict[str, str]:
    """The dimension values of a batch's metrics: its feed, read from its BatchID."""
    feed, _ = parse_batch_key(batch_id)
    return {FEED: feed}


def set_sink(sink: Callable[[str], None]) -> Callable[[str], None]:
    """Send EMF lines to `sink` instead of stdout (local runs, tests); the sink before it, for
    the caller to put back."""
    global _sink
    before, _sink = _sink, sink
    return before


def emit(
    values: Mapping[str, tuple[float, MetricUnit]],
    *,
    dimensions: Mapping[str, str] | None = None,
    **properties: str | int,
) -> None:
    """Emit one EMF line with `values` (name -> (value, unit)), published under each metric's
    CATALOG dimension sets (`dimensions` holds their values), and searchable `properties`."""
    if not values:
        return
    dimension_sets = _catalogued(values)
    metrics = EphemeralMetrics(namespace=NAMESPACE)
    for name, (value, unit) in values.items():
        metrics.add_metric(name=name, unit=unit, value=value)
    # Dimension values and properties name feeds, entities and causes: provider text.
    shown = {key: redact(value) for key, value in (dimensions or {}).items()}
    _add_dimension_sets(metrics, dimension_sets, shown)
    for key, prop in properties.items():
        metrics.add_metadata(key=key, value=redact(prop) if isinstance(prop, str) else prop)
    _sink(json.dumps(metrics.serialize_metric_set(), separators=(",", ":")))
    metrics.clear_metrics()


def _catalogued(values: Mapping[str, object]) -> DimensionSets:
    """The one dimension layout every metric of the line shares; ValueError otherwise (a bug)."""
    unknown = sorted(set(values) - set(CATALOG))
    if unknown:
        raise ValueError(f"metrics not in dlpipe.metrics.CATALOG: {', '.join(unknown)}")
    layouts = {CATALOG[name] for name in values}
    if len(layouts) != 1:
        raise ValueError(f"one EMF line mixes dimension layouts: {sorted(values)}")
    return layouts.pop()


def _add_dimension_sets(
    metrics: EphemeralMetrics, dimension_sets: Sequence[tuple[str, ...]], values: Mapping[str, str]
) -> None:
    needed = {key for dimension_set in dimension_sets for key in dimension_set}
    if needed != set(values):
        raise ValueError(f"dimensions {sorted(values)} do not match {sorted(needed)}")
    first, *others = dimension_sets
    for key in first:  # Powertools' primary set; an empty one means "no dimensions"
        metrics.add_dimension(name=key, value=values[key])
    for dimension_set in others:
        metrics.add_dimensions(**{key: values[key] for key in dimension_set})

"""CloudWatch Embedded Metric Format lines (namespace `dlpipe`), via Powertools.

In Lambda the lines go to stdout, where CloudWatch Logs turns them into metrics; local runs
can send them elsewhere with `set_sink`. The alarms in terraform/alarms.tf watch
BatchTimedOut, BatchFailed and StuckJobs in this namespace, without dimensions.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

NAMESPACE = "dlpipe"
COUNT = MetricUnit.Count
BYTES = MetricUnit.Bytes
SECONDS = MetricUnit.Seconds

_sink: Callable[[str], None] = lambda line: print(line, file=sys.stdout, flush=True)  # noqa: E731


def set_sink(sink: Callable[[str], None]) -> None:
    """Send EMF lines to `sink` instead of stdout (local runs, tests)."""
    global _sink  # noqa: PLW0603 - one process-wide destination, like stdout itself
    _sink = sink


def emit(values: Mapping[str, tuple[float, MetricUnit]], **properties: str | int) -> None:
    """Emit one EMF line with `values` (name -> (value, unit)) and searchable `properties`."""
    if not values:
        return
    metrics = EphemeralMetrics(namespace=NAMESPACE)
    for name, (value, unit) in values.items():
        metrics.add_metric(name=name, unit=unit, value=value)
    for key, prop in properties.items():
        metrics.add_metadata(key=key, value=prop)
    _sink(json.dumps(metrics.serialize_metric_set(), separators=(",", ":")))
    metrics.clear_metrics()

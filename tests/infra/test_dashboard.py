"""terraform/dashboard.tf against the code: every graphed metric exists, every alarm links here.

A dlpipe metric on the dashboard must be in dlpipe.metrics.CATALOG (which `emit` enforces)
under a dimension set the code emits it with, and with dimension values the code writes:
CloudWatch shows an empty graph, not an error, for a metric nobody emits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from dlpipe import metrics
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.services.download.file_metrics import LAMBDA, NO_ERROR, WORKER
from dlpipe.services.download.service import Outcome
from tests.infra.hcl import Module, literal, unquote

MODULE = Module.load()
DASHBOARD = ("aws_cloudwatch_dashboard", "dlpipe")
NAMESPACE_REF = "${local.metric_namespace}"
# The values the code writes for each per-file dimension (ErrorCode: any DownloadError code).
DIMENSION_VALUES = {
    "Outcome": {Outcome.COMPLETED.value, Outcome.FAILED.value, Outcome.ERROR.value},
    "Component": {LAMBDA, WORKER},
}
_SEARCH = re.compile(r"^SEARCH\('\{([^}]*)\}\s+MetricName=\"(\w+)\"")


@dataclass(frozen=True)
class Graphed:
    """One metric a widget graphs: namespace, name, {dimension: value}."""

    widget: str
    namespace: str
    name: str
    dimensions: dict[str, str]


def _namespace(text: str) -> str:
    return metrics.NAMESPACE if text == NAMESPACE_REF else unquote(text)


def _from_search(widget: str, expression: str) -> Graphed:
    match = _SEARCH.match(expression.replace(NAMESPACE_REF, metrics.NAMESPACE))
    assert match, f"{widget}: unreadable SEARCH expression {expression!r}"
    namespace, *keys = (part.strip() for part in match.group(1).split(","))
    return Graphed(widget, _namespace(namespace), match.group(2), dict.fromkeys(keys, "*"))


def _from_entry(widget: str, entry: list[Any]) -> Graphed:
    """A metrics-array entry: [namespace, name, dim, value, ..., {options}] or [{expression}]."""
    fields = [item for item in entry if not isinstance(item, dict)]
    if not fields:
        (options,) = entry
        return _from_search(widget, literal(options["expression"]).replace('\\"', '"'))
    assert "." not in fields, f"{widget}: write each entry out, no '.' shorthand"
    namespace, name, *pairs = fields
    assert len(pairs) % 2 == 0, f"{widget}: {entry}"
    dimensions = {literal(k): literal(v) for k, v in zip(pairs[::2], pairs[1::2], strict=True)}
    return Graphed(widget, _namespace(namespace), literal(name), dimensions)


def widgets() -> list[dict[str, Any]]:
    """The dashboard's widgets, as python-hcl2 reads the local the body is encoded from."""
    found: list[dict[str, Any]] = MODULE.locals["dashboard_widgets"]
    return found


def graphed() -> list[Graphed]:
    """Every metric any widget graphs."""
    return [
        _from_entry(literal(w["properties"]["title"]), entry)
        for w in widgets()
        if literal(w["type"]) == "metric"
        for entry in w["properties"]["metrics"]
    ]


def test_the_dashboard_encodes_the_widgets_local_under_its_name() -> None:
    """The body is jsonencode of the widgets read here, then the feed rows
    (tests/infra/test_dashboard_feeds.py); the name is the one the URL uses."""
    dashboard = MODULE.resource(*DASHBOARD)
    assert dashboard["dashboard_body"] == (
        "${jsonencode({widgets = concat(local.dashboard_widgets, local.dashboard_feed_widgets)})}"
    )
    assert dashboard["dashboard_name"] == "${local.dashboard_name}"
    assert literal(MODULE.locals["dashboard_url"]) == (
        "https://${var.aws_region}.console.aws.amazon.com/cloudwatch/home"
        "?region=${var.aws_region}#dashboards/dashboard/${local.dashboard_name}"
    )


@pytest.mark.parametrize("metric", graphed(), ids=lambda g: f"{g.widget}:{g.name}")
def test_every_graphed_metric_is_from_aws_or_emitted_by_dlpipe(metric: Graphed) -> None:
    """AWS/... metrics, or a CATALOG metric under a dimension set and values the code emits."""
    if metric.namespace.startswith("AWS/"):
        return
    assert metric.namespace == metrics.NAMESPACE
    assert metric.name in metrics.CATALOG, f"{metric.name} is not emitted by dlpipe"
    emitted = {frozenset(s) for s in metrics.CATALOG[metric.name]}
    assert frozenset(metric.dimensions) in emitted, (metric.name, sorted(metric.dimensions))
    for key, value in metric.dimensions.items():
        if value != "*" and key in DIMENSION_VALUES:
            assert value in DIMENSION_VALUES[key], (metric.name, key, value)
    assert metric.dimensions.get("ErrorCode", "*") in {"*", NO_ERROR}


def test_the_dashboard_shows_what_operators_watch() -> None:
    """Batches, files by outcome, throughput, every DLQ, stuck jobs, failed executions."""
    names = {(g.namespace, g.name) for g in graphed()}
    ns = metrics.NAMESPACE
    assert {(ns, "BatchCompleted"), (ns, "BatchFailed"), (ns, "BatchTimedOut")} <= names
    assert {(ns, metrics.FILE_DOWNLOADS), (ns, metrics.FILE_THROUGHPUT), (ns, "StuckJobs")} <= names
    assert ("AWS/Lambda", "DurableExecutionFailed") in names
    outcomes = {g.dimensions.get("Outcome") for g in graphed() if g.name == metrics.FILE_DOWNLOADS}
    assert DIMENSION_VALUES["Outcome"] <= outcomes
    dlq_names = {
        g.dimensions["QueueName"]
        for g in graphed()
        if g.name == "ApproximateNumberOfMessagesVisible"
    }
    alarmed = {literal(v) for v in MODULE.locals["dead_letter_queues"].values()}
    assert dlq_names == alarmed


def test_every_metric_widget_names_its_region_and_title() -> None:
    """CloudWatch refuses a metric widget without a region."""
    for widget in widgets():
        if literal(widget["type"]) == "metric":
            assert widget["properties"]["region"] == "${var.aws_region}"
            assert literal(widget["properties"]["title"])


def test_every_alarm_description_links_to_the_dashboard() -> None:
    """An operator paged by any alarm lands on the dashboard in one click."""
    alarms = {
        name: body
        for (rtype, name), body in MODULE.resources.items()
        if rtype == "aws_cloudwatch_metric_alarm"
    }
    assert alarms
    missing = [
        n for n, b in alarms.items() if "${local.dashboard_url}" not in b["alarm_description"]
    ]
    assert missing == []


def dlpipe_alarms() -> list[tuple[str, str, dict[str, str]]]:
    """(alarm resource, metric name, {dimension: value}) for every alarm on a dlpipe metric;
    `each.key` stands for each key of the resource's for_each (a local map, or the feeds)."""
    found = []
    for (rtype, label), body in MODULE.resources.items():
        if rtype != "aws_cloudwatch_metric_alarm" or body["namespace"] != NAMESPACE_REF:
            continue
        if body.get("for_each") == "${local.pipeline_metrics}":
            for name, entry in MODULE.locals["pipeline_metrics"].items():
                dimensions = {k: literal(v) for k, v in entry["dimensions"].items()}
                found.append((label, name, dimensions))
            continue
        dimensions = {k: literal(v) for k, v in body.get("dimensions", {}).items()}
        found.append((label, literal(body["metric_name"]), dimensions))
    return found


def test_alarms_on_dlpipe_metrics_watch_what_the_code_emits() -> None:
    """Each alarm's metric is in CATALOG under the alarm's dimension set; a Feed is "default"
    or the feed of the alarm's own for_each key (the feed names), never a literal name."""
    alarms = dlpipe_alarms()
    assert {name for _, name, _ in alarms} >= {"BatchFailed", "BatchTimedOut", "StuckJobs"}
    for label, name, dimensions in alarms:
        assert name in metrics.CATALOG, (label, name)
        emitted = {frozenset(s) for s in metrics.CATALOG[name]}
        assert frozenset(dimensions) in emitted, (label, name, sorted(dimensions))
        if metrics.FEED in dimensions:
            feed = dimensions[metrics.FEED]
            # Keyed by the feeds map, or by every feed's name with the default's (the
            # dead-man's switch, terraform/deadman.tf).
            keyed = MODULE.resource("aws_cloudwatch_metric_alarm", label).get("for_each")
            assert feed == DEFAULT_FEED_NAME or (
                feed == "${each.key}" and keyed in ("${var.feeds}", "${local.feeds_and_default}")
            ), (label, name, feed)


def test_the_default_feeds_batch_alarms_keep_their_names_and_watch_its_feed() -> None:
    """dlpipe-BatchFailed and dlpipe-BatchTimedOut are still the default feed's: Feed=default,
    not the all-feeds total (a named feed's batch pages under its own alarm)."""
    by_metric = {name: d for label, name, d in dlpipe_alarms() if label == "pipeline"}
    for name in ("BatchFailed", "BatchTimedOut"):
        assert by_metric[name] == {metrics.FEED: DEFAULT_FEED_NAME}, name
        description = MODULE.locals["pipeline_metrics"][name]["description"]
        assert "default feed" in description, description
    assert by_metric["StuckJobs"] == {}  # the downloaders are shared: every feed's total

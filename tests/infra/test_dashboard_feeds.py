"""The dashboard's per-feed rows (dashboard.tf), rendered by the terraform binary for the
two-feed fixture and checked like the fixed widgets (tests/infra/test_dashboard.py): every
graphed dlpipe metric is emitted under that dimension set, its Feed one of the deployment's
feeds, and every queue metric names the download queue Terraform makes for that feed.

The rows are a `for` over the default feed and var.feeds, which python-hcl2 cannot expand, so
the dashboard's body is rendered by tests/infra/terraform_render.py (every variable and local
copied verbatim, a stand-in for each resource) and terraform prints it. Skipped where no
terraform binary is installed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dlpipe import metrics
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from tests.infra import test_dashboard as fixed
from tests.infra.terraform_render import TERRAFORM, Rendered, Value
from tests.infra.test_dashboard import DASHBOARD, DIMENSION_VALUES, MODULE, Graphed, _from_entry
from tests.infra.test_terraform_feeds_eval import _fixture

pytestmark = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH")

REQUIRED = {"provider_base_url": "https://provider.example.com"}
VALUES = {
    "body": Value(*DASHBOARD, ("dashboard_body",)),
    "queue": Value("aws_sqs_queue", "downloads"),
    "feed_queues": Value("aws_sqs_queue", "feed_downloads"),
}
# What a feed's download queue graphs (AWS/SQS, by QueueName).
QUEUE_METRICS = {
    "ApproximateNumberOfMessagesVisible",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateAgeOfOldestMessage",
}


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return Rendered(tmp_path_factory.mktemp("dashboard"), VALUES)


def _outputs(module: Rendered, feeds: dict[str, Any]) -> dict[str, Any]:
    return module.outputs({**REQUIRED, "feeds": feeds})


def _rows(module: Rendered, feeds: dict[str, Any]) -> list[dict[str, Any]]:
    """The widgets below the fixed ones, as the dashboard's body holds them."""
    widgets: list[dict[str, Any]] = json.loads(_outputs(module, feeds)["body"])["widgets"]
    return widgets[len(fixed.widgets()) :]


def _graphed(rows: list[dict[str, Any]]) -> list[Graphed]:
    # terraform prints plain JSON: quote the strings as python-hcl2 would have kept them.
    return [
        _from_entry(row["properties"]["title"], [_quoted(item) for item in entry])
        for row in rows
        for entry in row["properties"]["metrics"]
    ]


def _quoted(item: Any) -> Any:
    return f'"{item}"' if isinstance(item, str) else item


def test_each_feed_has_a_row_the_default_feed_first(module: Rendered) -> None:
    """default, vendor-a, vendor-b: each feed's widgets below the fixed ones, titled by feed."""
    rows = _rows(module, _fixture())
    feeds = [DEFAULT_FEED_NAME, "vendor-a", "vendor-b"]
    titles = [row["properties"]["title"] for row in rows]
    assert [t.split(":")[0] for t in titles] == [f"Feed {f}" for f in feeds for _ in range(3)]
    bottom = max(int(w["y"]) + int(w["height"]) for w in fixed.widgets())
    tops = sorted({row["y"] for row in rows})
    assert tops == [bottom + 6 * index for index in range(len(feeds))]


def test_every_metric_of_a_feed_row_is_emitted_by_feed(module: Rendered) -> None:
    """Each graphed dlpipe metric is in the catalogue with a Feed set, its Feed the row's feed."""
    for row_metric in _graphed(_rows(module, _fixture())):
        fixed.test_every_graphed_metric_is_from_aws_or_emitted_by_dlpipe(row_metric)
        if row_metric.namespace == "AWS/SQS":
            continue  # the feed's queue: below
        assert row_metric.namespace == metrics.NAMESPACE
        feed = row_metric.widget.split(":")[0].removeprefix("Feed ")
        assert row_metric.dimensions[metrics.FEED] == feed, row_metric


def test_a_feed_row_shows_its_batches_and_its_files_by_outcome(module: Rendered) -> None:
    """Batches completed / failed / timed out, and files completed / failed / error."""
    graphed = [g for g in _graphed(_rows(module, _fixture())) if g.namespace == metrics.NAMESPACE]
    for feed in (DEFAULT_FEED_NAME, "vendor-a", "vendor-b"):
        names = {g.name for g in graphed if g.dimensions[metrics.FEED] == feed}
        assert {"BatchCompleted", "BatchFailed", "BatchTimedOut", "FileDownloads"} <= names
        outcomes = {
            g.dimensions.get("Outcome")
            for g in graphed
            if g.dimensions[metrics.FEED] == feed and g.name == "FileDownloads"
        }
        assert outcomes == DIMENSION_VALUES["Outcome"], feed


def test_without_feeds_the_default_feed_has_its_row(module: Rendered) -> None:
    """feeds = {}: one row, the default feed's."""
    rows = _rows(module, {})
    assert {row["properties"]["title"].split(":")[0] for row in rows} == {"Feed default"}


def test_a_feed_row_graphs_the_download_queue_terraform_makes_for_it(module: Rendered) -> None:
    """Waiting, in flight and oldest age of the feed's own queue: the main queue for the
    default feed, its aws_sqs_queue.feed_downloads for a named feed; no other queue."""
    feeds = _fixture()
    outputs = _outputs(module, feeds)
    rows = json.loads(outputs["body"])["widgets"][len(fixed.widgets()) :]
    queues = {DEFAULT_FEED_NAME: outputs["queue"]["name"]}
    queues |= {name: queue["name"] for name, queue in outputs["feed_queues"].items()}
    assert sorted(queues) == sorted([DEFAULT_FEED_NAME, *feeds])
    assert len(set(queues.values())) == len(queues)  # every feed its own queue
    for feed, queue in queues.items():
        graphed = [
            g
            for g in _graphed(rows)
            if g.namespace == "AWS/SQS" and g.widget.startswith(f"Feed {feed}:")
        ]
        assert {g.name for g in graphed} == QUEUE_METRICS, feed
        assert {g.dimensions["QueueName"] for g in graphed} == {queue}, feed


def test_the_dashboard_body_holds_the_fixed_widgets_then_the_feed_rows() -> None:
    """dashboard_body encodes both locals, the fixed widgets first."""
    body = MODULE.resource(*DASHBOARD)["dashboard_body"]
    assert body == (
        "${jsonencode({widgets = concat(local.dashboard_widgets, local.dashboard_feed_widgets)})}"
    )

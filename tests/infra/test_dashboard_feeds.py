"""The dashboard's per-feed rows (dashboard.tf), rendered by the terraform binary for the
two-feed fixture and checked like the fixed widgets (tests/infra/test_dashboard.py): every
graphed metric is emitted under that dimension set, its Feed one of the deployment's feeds.

The rows are a `for` over the default feed and var.feeds, which python-hcl2 cannot expand, so
the locals are copied into a provider-free module (as tests/infra/test_terraform_feeds_eval.py
does) and terraform prints them. Skipped where no terraform binary is installed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from dlpipe import metrics
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from tests.infra import test_dashboard as fixed
from tests.infra.hcl import TERRAFORM_DIR
from tests.infra.test_dashboard import DASHBOARD, DIMENSION_VALUES, MODULE, Graphed, _from_entry
from tests.infra.test_terraform_feeds_eval import TERRAFORM, _apply, _block, _fixture, _outputs

pytestmark = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH")

# What the rows read besides the feeds: the region and the namespace.
STAND_INS = """
variable "aws_region" {
  type    = string
  default = "eu-west-1"
}
locals {
  metric_namespace = "dlpipe"
}
output "rows" { value = local.dashboard_feed_widgets }
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("dashboard")
    variable = _block((TERRAFORM_DIR / "variables.tf").read_text(), 'variable "feeds"')
    dashboard = (TERRAFORM_DIR / "dashboard.tf").read_text()
    rows = _block(dashboard[dashboard.index("# --- per feed") :], "locals {")
    (directory / "main.tf").write_text("\n".join([variable, rows, STAND_INS]))
    assert TERRAFORM is not None
    subprocess.run(
        [TERRAFORM, "init", "-input=false"], cwd=directory, check=True, capture_output=True
    )
    return directory


def _rows(module: Path, feeds: dict[str, Any]) -> list[dict[str, Any]]:
    applied = _apply(module, feeds)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    rows: list[dict[str, Any]] = _outputs(module)["rows"]
    return rows


def _graphed(rows: list[dict[str, Any]]) -> list[Graphed]:
    # terraform prints plain JSON: quote the strings as python-hcl2 would have kept them.
    return [
        _from_entry(row["properties"]["title"], [_quoted(item) for item in entry])
        for row in rows
        for entry in row["properties"]["metrics"]
    ]


def _quoted(item: Any) -> Any:
    return f'"{item}"' if isinstance(item, str) else item


def test_each_feed_has_a_row_the_default_feed_first(module: Path) -> None:
    """default, vendor-a, vendor-b: each feed's widgets below the fixed ones, titled by feed."""
    rows = _rows(module, _fixture())
    feeds = [DEFAULT_FEED_NAME, "vendor-a", "vendor-b"]
    titles = [row["properties"]["title"] for row in rows]
    assert [t.split(":")[0] for t in titles] == [f"Feed {f}" for f in feeds for _ in range(2)]
    bottom = max(int(w["y"]) + int(w["height"]) for w in fixed.widgets())
    tops = sorted({row["y"] for row in rows})
    assert tops == [bottom + 6 * index for index in range(len(feeds))]


def test_every_metric_of_a_feed_row_is_emitted_by_feed(module: Path) -> None:
    """Each graphed metric is in the catalogue with a Feed set, its Feed the row's feed."""
    for row_metric in _graphed(_rows(module, _fixture())):
        fixed.test_every_graphed_metric_is_from_aws_or_emitted_by_dlpipe(row_metric)
        assert row_metric.namespace == metrics.NAMESPACE
        feed = row_metric.widget.split(":")[0].removeprefix("Feed ")
        assert row_metric.dimensions[metrics.FEED] == feed, row_metric


def test_a_feed_row_shows_its_batches_and_its_files_by_outcome(module: Path) -> None:
    """Batches completed / failed / timed out, and files completed / failed / error."""
    graphed = _graphed(_rows(module, _fixture()))
    for feed in (DEFAULT_FEED_NAME, "vendor-a", "vendor-b"):
        names = {g.name for g in graphed if g.dimensions[metrics.FEED] == feed}
        assert {"BatchCompleted", "BatchFailed", "BatchTimedOut", "FileDownloads"} <= names
        outcomes = {
            g.dimensions.get("Outcome")
            for g in graphed
            if g.dimensions[metrics.FEED] == feed and g.name == "FileDownloads"
        }
        assert outcomes == DIMENSION_VALUES["Outcome"], feed


def test_without_feeds_the_default_feed_has_its_row(module: Path) -> None:
    """feeds = {}: one row, the default feed's."""
    rows = _rows(module, {})
    assert {row["properties"]["title"].split(":")[0] for row in rows} == {"Feed default"}


def test_the_dashboard_body_holds_the_fixed_widgets_then_the_feed_rows() -> None:
    """dashboard_body encodes both locals, the fixed widgets first."""
    body = MODULE.resource(*DASHBOARD)["dashboard_body"]
    assert body == (
        "${jsonencode({widgets = concat(local.dashboard_widgets, local.dashboard_feed_widgets)})}"
    )

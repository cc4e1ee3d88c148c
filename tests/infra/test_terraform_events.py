"""Static checks of the hand-off in terraform/ (events.tf, deadman.tf): the bus only the
orchestrator may put on, the example consumer a downstream team copies, and one dead-man's
switch per feed on the metric the code emits. The provider schema test validates the same
resources' arguments (tests/infra/test_provider_schema.py)."""

from __future__ import annotations

import pytest

from dlpipe import config
from dlpipe.domain.handoff_events import SOURCE
from dlpipe.local.events import HANDOFF_PATTERN
from tests.infra.hcl import Module, literal, policy_statements

MODULE = Module.load()


def _grants(action: str) -> list[tuple[str, list[str]]]:
    return [
        (name, statement["resources"])
        for (dtype, name), body in MODULE.data.items()
        if dtype == "aws_iam_policy_document"
        for statement in policy_statements(body)
        if f'"{action}"' in statement.get("actions", [])
    ]


def test_only_the_orchestrator_may_put_events_and_only_on_the_handoff_bus() -> None:
    assert _grants("events:PutEvents") == [("orchestrator", ["${local.event_bus_arn}"])]
    arn = MODULE.locals["event_bus_arn"]
    assert arn.endswith(':event-bus/${var.event_bus_name}"')


def test_the_orchestrator_is_told_the_bus_and_the_default_feeds_deadline() -> None:
    environment = MODULE.locals["handoff_environment"]
    assert "local.handoff_environment" in str(
        MODULE.resource("aws_lambda_function", "orchestrator")["environment"]
    )
    for name in (config.ENV_EVENT_BUS, config.ENV_DAY_DEADLINE, config.ENV_DAY_DEADLINE_TIME_ZONE):
        assert name in environment


def test_a_custom_bus_is_created_only_when_named() -> None:
    bus = MODULE.resource("aws_cloudwatch_event_bus", "handoff")
    assert bus["count"] == "${local.custom_event_bus ? 1 : 0}"
    assert MODULE.locals["custom_event_bus"] == '${var.event_bus_name != "default"}'


def test_the_example_rule_matches_what_the_local_stack_delivers() -> None:
    """The example rule's pattern is the local stand-in's (dlpipe/local/events.py): source dlpipe."""
    pattern = {
        k: [literal(v) for v in vs] for k, vs in MODULE.locals["handoff_event_pattern"].items()
    }
    assert pattern == HANDOFF_PATTERN == {"source": [SOURCE]}
    rule = MODULE.resource("aws_cloudwatch_event_rule", "handoff_example")
    assert rule["event_pattern"] == "${jsonencode(local.handoff_event_pattern)}"
    assert rule["event_bus_name"] == "${local.event_bus_name}"


@pytest.mark.parametrize(
    ("rtype", "label"),
    [
        ("aws_cloudwatch_event_rule", "handoff_example"),
        ("aws_cloudwatch_event_target", "handoff_example"),
        ("aws_sqs_queue", "handoff_example"),
        ("aws_sqs_queue_policy", "handoff_example"),
    ],
)
def test_the_example_consumer_exists_only_when_asked_for(rtype: str, label: str) -> None:
    assert MODULE.resource(rtype, label)["count"] == "${var.example_downstream_queue ? 1 : 0}"


def test_only_events_for_the_example_rule_may_reach_the_example_queue() -> None:
    (statement,) = policy_statements(
        MODULE.data[("aws_iam_policy_document", "handoff_example_queue")]
    )
    assert [literal(a) for a in statement["actions"]] == ["sqs:SendMessage"]
    (principal,) = statement["principals"]
    assert [literal(i) for i in principal["identifiers"]] == ["events.amazonaws.com"]
    (condition,) = statement["condition"]
    assert (literal(condition["test"]), literal(condition["variable"])) == (
        "ArnEquals",
        "aws:SourceArn",
    )
    assert condition["values"] == ["${aws_cloudwatch_event_rule.handoff_example[0].arn}"]


def test_every_feed_has_a_dead_mans_switch_on_its_completed_days() -> None:
    """One alarm per feed name (the default feed and var.feeds), keyed by the name, on
    BatchCompleted by Feed; no data for the whole window is what breaches."""
    alarm = MODULE.resource("aws_cloudwatch_metric_alarm", "feed_freshness")
    assert alarm["for_each"] == "${local.feeds_and_default}"
    assert MODULE.locals["feeds_and_default"] == '${toset(concat(["default"], keys(var.feeds)))}'
    assert alarm["namespace"] == "${local.metric_namespace}"
    assert (literal(alarm["metric_name"]), alarm["dimensions"]) == (
        "BatchCompleted",
        {"Feed": "${each.key}"},
    )
    assert (literal(alarm["statistic"]), literal(alarm["comparison_operator"])) == (
        "Sum",
        "LessThanThreshold",
    )
    assert (alarm["threshold"], literal(alarm["treat_missing_data"])) == (1, "breaching")
    # Every hourly period of the window must be empty: one completed day keeps it quiet.
    assert alarm["period"] == 3600
    assert (
        alarm["evaluation_periods"]
        == alarm["datapoints_to_alarm"]
        == "${var.freshness_window_hours}"
    )


def test_the_window_stays_within_what_cloudwatch_evaluates() -> None:
    """period x evaluation_periods may not pass 7 days; less than 25 h would page every day a
    run finishes a little later than the day before."""
    variable = MODULE.variables["freshness_window_hours"]
    condition = variable["validation"][0]["condition"]
    assert ">= 25" in condition
    assert "<= 168" in condition
    assert 3600 * 168 <= 604_800

"""Static checks of the feeds in terraform/, with the two-feed fixture (fixtures/two-feeds.tfvars).

Each named feed gets its own schedule, secrets, configuration parameter and IAM statements,
all keyed by the feed's name (for_each, never count or an index), so that adding or removing a
feed plans only that feed's resources. With `feeds` empty (the default) none of them exist.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import hcl2
import pytest

from dlpipe import config
from tests.infra.hcl import (
    DATA_REF,
    LOCAL_REF,
    RESOURCE_REF,
    Module,
    literal,
    literal_string,
    policy_statements,
    strings,
)

MODULE = Module.load()
FIXTURE = Path(__file__).parent / "fixtures" / "two-feeds.tfvars"


def _fixture_feeds() -> dict[str, dict[str, Any]]:
    with FIXTURE.open() as handle:
        raw = hcl2.load(handle)["feeds"]
    return {
        name: {
            field: [literal(v) for v in value] if isinstance(value, list) else literal(value)
            for field, value in feed.items()
        }
        for name, feed in raw.items()
    }


FEEDS = _fixture_feeds()
KEYWORD = "<aws.scheduler.scheduled-time>"

# A for-expression over the feeds that keeps each feed's name as its key.
# Every feed's name, the default feed's included: keyed by name as well.
EVERY_FEED_NAME = "${local.feeds_and_default}"
KEYED_BY_NAME = re.compile(r"^\$\{\{\s*for (\w+), (\w+) in var\.feeds\s*:\s*\1 =>")


def _render(text: str, name: str, iterator: str = "each") -> str:
    """`text` with `${each.key}` and `${each.value.FIELD}` replaced for feed `name`."""
    feed = FEEDS[name]
    text = text.replace("${" + iterator + ".key}", name)
    return re.sub(r"\$\{" + iterator + r"\.value\.(\w+)\}", lambda m: str(feed[m.group(1)]), text)


def _feed_resources() -> dict[tuple[str, str], dict[str, Any]]:
    """Every resource whose definition reads the feeds map; a lifecycle precondition that
    checks every feed at once (the orchestrator's) does not make a resource per feed."""
    return {
        address: body
        for address, body in MODULE.resources.items()
        if any(
            "var.feeds" in s or "local.feed" in s
            for s in strings({k: v for k, v in body.items() if k != "lifecycle"})
        )
    }


def _filter_of(for_each: str) -> str | None:
    """The `if` condition of a for-expression over the feeds (None: every feed)."""
    match = re.search(r"\bif (.+)\}\}$", for_each)
    return match.group(1).strip() if match else None


def _kept(for_each: str) -> set[str]:
    """The feeds of the fixture a for_each keeps: all, or those whose `feed.X == null`."""
    if for_each == "${var.feeds}":
        return set(FEEDS)
    assert KEYED_BY_NAME.match(for_each), for_each
    condition = _filter_of(for_each)
    if condition is None:
        return set(FEEDS)
    (field,) = re.fullmatch(r"\w+\.(\w+) == null", condition).groups()  # type: ignore[union-attr]
    return {name for name, feed in FEEDS.items() if feed.get(field) is None}


# --- the variable ----------------------------------------------------------------------------


def test_feeds_is_an_optional_map_of_objects_empty_by_default() -> None:
    """`feeds` defaults to {}: with it unset the stack is the single default feed, as before."""
    variable = MODULE.variables["feeds"]
    assert variable["default"] == {}
    assert variable["type"].startswith("${map(object(")
    assert "optional(" in variable["type"]


def _validation_regexes() -> dict[str, list[str]]:
    """field -> the regex(...) patterns the feeds' validations apply to it."""
    found: dict[str, list[str]] = {}
    for validation in MODULE.variables["feeds"]["validation"]:
        for pattern, subject in re.findall(
            r'regex\("((?:[^"\\]|\\.)*)",\s*([\w.]+)\)', validation["condition"]
        ):
            field = subject.rsplit(".", 1)[-1] if "." in subject else "name"
            found.setdefault(field, []).append(pattern.replace("\\\\", "\\"))
    return found


# (field, a value every validation of it must accept, a value one must refuse)
FIELD_CASES = [
    ("name", "vendor-a", "Vendor_A"),
    ("name", "a" * 31, "a" * 32),
    ("name", "0day", "-leading-hyphen"),
    ("provider_base_url", "https://api.example.com/v2", "http://api.example.com"),
    ("schedule", "cron(0 7 * * ? *)", "0 7 * * *"),
    ("schedule", "rate(1 day)", "at(2026-01-01T00:00:00)"),
    ("time_zone", "America/Argentina/Buenos_Aires", "Europe London"),
    ("time_zone", "Etc/GMT+5", "../etc/passwd"),
    ("destination_prefix", "vendor-a/daily/", "vendor-a//"),
    ("destination_prefix", "v/", "/vendor-a/"),
    ("deadline", "09:30", "9:30"),
    ("deadline", "23:59", "24:00"),
]


@pytest.mark.parametrize(("field", "accepted", "refused"), FIELD_CASES)
def test_feed_validation_accepts_good_values_and_refuses_bad_ones(
    field: str, accepted: str, refused: str
) -> None:
    """Each field's validation regexes (RE2 syntax Python shares) pass the good value, not the bad."""
    patterns = _validation_regexes()[field]
    assert all(re.search(p, accepted) for p in patterns), patterns
    assert not all(re.search(p, refused) for p in patterns), patterns


def test_the_fixture_passes_every_validation_regex() -> None:
    """The two-feed fixture is a valid `feeds` map as far as the fields' own regexes go."""
    regexes = _validation_regexes()
    for field in {case[0] for case in FIELD_CASES}:
        for name, feed in FEEDS.items():
            value = name if field == "name" else feed.get(field)
            if value is not None:
                assert all(re.search(p, str(value)) for p in regexes[field]), (name, field)


def test_every_feed_field_the_issue_names_is_validated() -> None:
    """Each field with a rule has a validation naming it in its condition and its message."""
    validations = MODULE.variables["feeds"]["validation"]
    for field in (
        "provider_base_url",
        "schedule",
        "time_zone",
        "destination_prefix",
        "deadline",
        "poll_interval_seconds",
        "max_polls",
        "large_file_threshold_bytes",
        "restatement_window_days",
        "token_secret",
        "private_key_secret",
    ):
        assert any(
            field in v["condition"] and field in literal(v["error_message"]) for v in validations
        ), field
    # The default feed's name is the existing variables' feed; a named feed cannot take it.
    assert any('"default"' in v["condition"] for v in validations)


# --- schedules -------------------------------------------------------------------------------


def test_each_feed_has_its_own_schedule_keyed_by_name_in_its_time_zone() -> None:
    """One schedule per feed (for_each over the names), its expression and time zone its own."""
    body = MODULE.resource("aws_scheduler_schedule", "feed")
    assert body["for_each"] == "${var.feeds}"
    assert "count" not in body
    for name in FEEDS:
        assert name in _render(literal(body["name"]), name)
    for name, feed in FEEDS.items():
        assert _render(body["schedule_expression"], name) == feed["schedule"]
        assert _render(body["schedule_expression_timezone"], name) == feed["time_zone"]


def test_each_feed_schedule_sends_its_name_and_the_scheduled_time() -> None:
    """Input: {"feed": NAME, "scheduled_time": <keyword>}, literal text (no jsonencode)."""
    (target,) = MODULE.resource("aws_scheduler_schedule", "feed")["target"]
    assert "jsonencode" not in target["input"]
    for name in FEEDS:
        text = literal_string(_render(target["input"], name))
        assert text is not None
        assert json.loads(text) == {"feed": name, "scheduled_time": KEYWORD}


def test_feed_schedules_start_the_orchestrator_like_the_default_one() -> None:
    """Same alias, role, retry policy and dead-letter queue as the default feed's schedule."""
    (daily,) = MODULE.resource("aws_scheduler_schedule", "daily")["target"]
    (feed,) = MODULE.resource("aws_scheduler_schedule", "feed")["target"]
    for key in ("arn", "role_arn", "retry_policy", "dead_letter_config"):
        assert feed[key] == daily[key], key


def test_the_default_feeds_schedule_keeps_its_address_and_input() -> None:
    """aws_scheduler_schedule.daily is one resource, still sending only the scheduled time."""
    body = MODULE.resource("aws_scheduler_schedule", "daily")
    assert "for_each" not in body
    assert "count" not in body
    (target,) = body["target"]
    assert json.loads(literal_string(target["input"]) or "") == {"scheduled_time": KEYWORD}


# --- keyed by name, never by position --------------------------------------------------------


def test_every_feed_resource_is_keyed_by_feed_name() -> None:
    """Everything that reads the feeds map is for_each over names: no count, no index."""
    resources = _feed_resources()
    assert set(resources) >= {
        ("aws_scheduler_schedule", "feed"),
        ("aws_secretsmanager_secret", "feed_token"),
        ("aws_secretsmanager_secret", "feed_private_key"),
        ("aws_ssm_parameter", "feed"),
        ("aws_sqs_queue", "feed_downloads"),
        ("aws_lambda_event_source_mapping", "feed_downloads"),
        ("aws_cloudwatch_metric_alarm", "feed_queue_oldest_message"),
    }
    for address, body in resources.items():
        assert "count" not in body, address
        assert body["for_each"] in ("${var.feeds}", EVERY_FEED_NAME) or KEYED_BY_NAME.match(
            body["for_each"]
        ), address
    # The default feed's name and the map's keys (the dead-man's switch, deadman.tf).
    assert "keys(var.feeds)" in MODULE.locals["feeds_and_default"]
    numeric_index = re.compile(r"(feed\w*|var\.feeds)\[\d+\]")
    assert [s for p in MODULE.files.values() for s in strings(p) if numeric_index.search(s)] == []


# Shared resources that adding or removing a feed updates in place, and why.
IN_PLACE = {
    ("aws_iam_role_policy", "orchestrator"): "the feed's statements",
    ("aws_iam_role_policy", "downloader"): "the feed's statements (downloader_code)",
    ("aws_iam_role_policy", "ecs_task"): "the feed's statements (downloader_code)",
    ("aws_cloudwatch_dashboard", "dlpipe"): "the feed's row",
    # The first feed sets DLPIPE_FEEDS_PARAMETER_PATH; later ones change no function (the
    # environment names no feed: test_terraform_feeds_eval.py). The orchestrator also checks
    # every feed's polling in a precondition, which changes nothing.
    ("aws_lambda_function", "orchestrator"): "the parameter path, from the first feed on",
    ("aws_lambda_function", "downloader"): "the parameter path, from the first feed on",
    ("aws_ecs_task_definition", "worker"): "the parameter path, from the first feed on",
    # The default feed holds every downloader alone, its share (feed_max_share_percent) of them
    # once there is a named feed; a later feed changes neither.
    ("aws_lambda_event_source_mapping", "downloads"): "its cap, from the first feed on",
    # Every download queue may dead-letter to the one DLQ: the feed's queue is among them.
    ("aws_sqs_queue_redrive_allow_policy", "downloads_dlq"): "the feed's queue as a source",
}


def _feed_dependent() -> tuple[set[str], set[tuple[str, str]], set[tuple[str, str]]]:
    """(locals, data sources, resources) whose value follows var.feeds, directly or through
    locals, policy documents or a per-feed resource; a resource's other attributes (ARNs,
    versions) are not followed."""
    keyed = set(_feed_resources())
    dependent_locals: set[str] = set()
    dependent_data: set[tuple[str, str]] = set()

    def follows(value: Any) -> bool:
        text = " ".join(strings(value))
        return (
            "var.feeds" in text
            or bool(set(LOCAL_REF.findall(text)) & dependent_locals)
            or bool(set(DATA_REF.findall(text)) & dependent_data)
            or bool(set(RESOURCE_REF.findall(text)) & keyed)
        )

    grown = True
    while grown:
        before = len(dependent_locals) + len(dependent_data)
        dependent_locals |= {n for n, v in MODULE.locals.items() if follows(v)}
        dependent_data |= {a for a, b in MODULE.data.items() if follows(b)}
        grown = len(dependent_locals) + len(dependent_data) > before
    resources = {a for a, b in MODULE.resources.items() if follows(b)}
    return dependent_locals, dependent_data, resources


def test_adding_a_feed_changes_only_its_own_resources_and_the_listed_shared_ones() -> None:
    """Whatever follows the feeds map is keyed by feed name, or one of the shared resources
    updated in place (IN_PLACE says why); nothing else changes when a feed comes or goes."""
    _, data, resources = _feed_dependent()
    assert ("aws_iam_policy_document", "downloader_code") in data
    keyed = set(_feed_resources())
    assert resources - keyed == set(IN_PLACE)


def test_secrets_are_created_only_for_feeds_that_name_none() -> None:
    """vendor-a's token and key are created; vendor-b references a token and shares a key."""
    token = MODULE.resource("aws_secretsmanager_secret", "feed_token")
    key = MODULE.resource("aws_secretsmanager_secret", "feed_private_key")
    assert _kept(token["for_each"]) == {"vendor-a"}
    assert _kept(key["for_each"]) == {"vendor-a"}
    for body in (token, key):
        assert "${each.key}" in body["name"]
        assert body["kms_key_id"] == "${aws_kms_key.dlpipe.arn}"


def test_shared_key_resolves_through_the_named_feed() -> None:
    """A feed's key ARN: its own created secret, or the named feed's (created or referenced), or an ARN."""
    local = MODULE.locals["feed_private_key_secret_arns"]
    assert KEYED_BY_NAME.match(local)
    assert (
        "aws_secretsmanager_secret.feed_private_key[coalesce(feed.private_key_secret, name)].arn"
        in local
    )
    assert "var.feeds[feed.private_key_secret].private_key_secret" in local


# --- configuration in SSM --------------------------------------------------------------------


def test_each_feed_has_one_parameter_with_its_settings_and_no_secret_value() -> None:
    """/{prefix}dlpipe/feeds/NAME holds the feed's JSON: settings and secret ARNs, never values."""
    body = MODULE.resource("aws_ssm_parameter", "feed")
    assert body["for_each"] == "${var.feeds}"
    assert body["name"] == '"${local.feeds_parameter_path}/${each.key}"'
    assert MODULE.locals["feeds_parameter_path"] == '"/${var.name_prefix}dlpipe/feeds"'
    assert literal(body["type"]) == "String"
    value = body["value"]
    # The entry's every field, as given (tests/infra/test_deployment_contract.py loads what it
    # renders), with the name and the secrets resolved to ARNs over it.
    assert value.startswith("${jsonencode(merge(each.value, {"), value
    for field in ("name", "token_secret", "private_key_secret"):
        assert f"{field} = " in value, field
    assert "secret_string" not in value


# --- where the functions find the parameters -------------------------------------------------


def test_the_parameter_path_reaches_every_function_through_their_environments() -> None:
    """The orchestrator's and the downloaders' environments (Lambda and ECS) merge in
    local.feeds_environment: the path, set only when var.feeds is non-empty."""
    environment = MODULE.locals["feeds_environment"]
    assert KEYED_BY_NAME.match(environment) is None  # keyed by variable name, not feed name
    assert f"{config.ENV_FEEDS_PARAMETER_PATH} = local.feeds_parameter_path" in environment
    assert environment.rstrip("}").rstrip().endswith("if length(var.feeds) > 0")
    for name in ("orchestrator_environment", "downloader_environment"):
        assert "local.feeds_environment" in MODULE.locals[name], name
    assert "local.downloader_environment" in MODULE.locals["ecs_worker_environment"]


# --- IAM: each secret readable only by who needs it ------------------------------------------

# A statement present once while there are named feeds (their parameters, listing their path).
WITH_FEEDS = '${length(var.feeds) > 0 ? ["feeds"] : []}'
# The documents the roles our code runs as are made of.
ROLE_DOCUMENTS = ("orchestrator", "downloader_code", "downloader", "ecs_task")
# What the named feeds add to those documents (terraform/iam.tf's locals).
FEED_LISTS = (
    "local.feed_queue_arn_patterns",
    "local.feed_parameter_arn_patterns",
    "local.feed_token_secret_arn_list",
    "local.feed_private_key_secret_arn_list",
)


def _document_text(document: str) -> str:
    body = MODULE.data[("aws_iam_policy_document", document)]
    return " ".join(strings(list(policy_statements(body))))


def test_no_statement_is_repeated_per_feed() -> None:
    """A named feed adds ARNs to the statements of their purpose, never a statement of its own
    (IAM's 10,240 characters per role then hold many feeds: tests/iam/test_policy_size.py);
    the only dynamic statements over the feeds are present once while there are any."""
    for document in ROLE_DOCUMENTS:
        body = MODULE.data[("aws_iam_policy_document", document)]
        for dynamic in body.get("dynamic", []):
            for label, block in dynamic.items():
                if literal(label) == "statement" and "feeds" in block["for_each"]:
                    assert block["for_each"] == WITH_FEEDS, document
        assert "statement.key" not in _document_text(document), document


def test_the_feeds_queues_and_parameters_are_granted_by_the_names_dlpipe_gives_them() -> None:
    """The patterns are the feed queue's name (sqs.tf) and the feed parameter's (feeds.tf) with
    the feed's name as "*", in this account and region, and exist only with named feeds."""
    queue = literal(MODULE.resource("aws_sqs_queue", "feed_downloads")["name"])
    parameter = literal(MODULE.resource("aws_ssm_parameter", "feed")["name"])
    account_region = "${data.aws_region.current.region}:${local.account_id}:"
    for local, name, service in (
        ("feed_queue_arn_patterns", queue, "sqs"),
        ("feed_parameter_arn_patterns", f"parameter{parameter}", "ssm"),
    ):
        pattern = name.replace("${each.key}", "*")
        assert pattern.endswith("-*") or pattern.endswith("/*"), pattern
        expected = f'["arn:${{local.partition}}:{service}:{account_region}{pattern}"]'
        text = MODULE.locals[local].replace(" ", "").replace("\n", "")
        assert text == f"${{length(var.feeds)>0?{expected}:[]}}", (local, text)


@pytest.mark.parametrize("kind", ["token", "private_key"])
def test_the_feeds_secrets_are_listed_by_exact_arn_once_each(kind: str) -> None:
    """Every feed's secret ARN as feeds.tf resolves it (created, named, or shared), once."""
    expected = (
        f"${{distinct([for name in sort(keys(var.feeds)) : local.feed_{kind}_secret_arns[name]])}}"
    )
    assert MODULE.locals[f"feed_{kind}_secret_arn_list"] == expected


def test_orchestrator_reads_each_feeds_token_and_parameter_never_a_key() -> None:
    """The orchestrator lists files with the feed's token; it never decrypts, so no key."""
    text = _document_text("orchestrator")
    assert "local.feed_token_secret_arn_list" in text
    assert "local.feed_parameter_arn_patterns" in text
    assert "private_key" not in text


def test_downloaders_read_each_feeds_key_token_and_parameter() -> None:
    """The Lambda and the ECS worker (one shared document) decrypt and refresh URLs per feed."""
    text = _document_text("downloader_code")
    for needed in FEED_LISTS[1:]:
        assert needed in text, needed


def test_no_other_role_names_a_feed_secret_or_parameter() -> None:
    """The scheduler, the ECS execution role and the key policy never see feed secrets; the
    Lambda's and the ECS task's own documents only the feeds' queues."""
    for (dtype, name), body in MODULE.data.items():
        if dtype != "aws_iam_policy_document" or name in {"orchestrator", "downloader_code"}:
            continue
        text = " ".join(strings(list(policy_statements(body))))
        if name in {"downloader", "ecs_task"}:
            text = text.replace("local.feed_queue_arn_patterns", "")
        assert "feed_" not in text, name
        assert "aws_ssm_parameter" not in text, name


# The statements on the main queue, by document (their sids); each grants its actions on every
# named feed's queue alike.
MAIN_QUEUE_STATEMENTS = {
    "orchestrator": {"QueueDownloads"},
    "downloader_code": {"KeepAndDeferDownloads"},
    "downloader": {"EventSourceConsumesDownloads", "FindDownloadQueue"},
    "ecs_task": {"ReceiveDownloads"},
}


@pytest.mark.parametrize("document", MAIN_QUEUE_STATEMENTS)
def test_each_role_may_use_a_feeds_queue_as_it_uses_the_main_queue(document: str) -> None:
    """Every statement on the main queue lists the feeds' queues besides it (the same actions),
    and no other statement names a feed's queue."""
    body = MODULE.data[("aws_iam_policy_document", document)]
    on_main, on_feeds = set(), set()
    for statement in policy_statements(body):
        resources = " ".join(strings(statement.get("resources", [])))
        if "aws_sqs_queue.downloads.arn" in resources:
            on_main.add(literal(statement["sid"]))
        if "feed_queue_arn_patterns" in resources or "feed_downloads" in resources:
            on_feeds.add(literal(statement["sid"]))
            assert statement["resources"] == (
                "${concat([aws_sqs_queue.downloads.arn], local.feed_queue_arn_patterns)}"
            ), statement["sid"]
    assert on_main == on_feeds == MAIN_QUEUE_STATEMENTS[document]


def test_the_orchestrator_checks_every_feeds_polling_against_its_execution_timeout() -> None:
    """A precondition on the orchestrator names each feed whose polling overrides (else the
    deployment's), budgets and margin overrun durable_execution_timeout_seconds."""
    (lifecycle,) = MODULE.resource("aws_lambda_function", "orchestrator")["lifecycle"]
    conditions = [p["condition"] for p in lifecycle["precondition"]]
    assert "${length(local.feeds_past_execution_timeout) == 0}" in conditions
    over = MODULE.locals["feeds_past_execution_timeout"]
    for term in (
        "coalesce(feed.poll_interval_seconds, var.poll_interval_seconds)",
        "coalesce(feed.max_polls, var.max_polls)",
        "var.provider_outage_budget_seconds",
        "var.aws_outage_budget_seconds",
        "var.durable_setup_margin_seconds",
        "> var.durable_execution_timeout_seconds",
    ):
        assert term in over, term


# --- alarms ----------------------------------------------------------------------------------

FEED_ALARMS = {"feed_batch_failed": "BatchFailed", "feed_batch_timed_out": "BatchTimedOut"}


@pytest.mark.parametrize(("label", "metric"), FEED_ALARMS.items())
def test_each_feed_has_its_own_batch_alarms_naming_it(label: str, metric: str) -> None:
    """One alarm per feed and metric, keyed by the feed's name, on its Feed dimension, with
    the feed in its name and description."""
    body = MODULE.resource("aws_cloudwatch_metric_alarm", label)
    assert body["for_each"] == "${var.feeds}"
    assert literal(body["metric_name"]) == metric
    assert body["namespace"] == "${local.metric_namespace}"
    assert body["dimensions"] == {"Feed": "${each.key}"}
    for name in FEEDS:
        assert name in _render(literal(body["alarm_name"]), name)
        assert f"eed {name}" in _render(literal(body["alarm_description"]), name)
    assert body["alarm_actions"] == ["${aws_sns_topic.alarms.arn}"]
    daily = MODULE.resource("aws_cloudwatch_metric_alarm", "pipeline")
    for key in ("period", "evaluation_periods", "comparison_operator", "threshold"):
        assert body[key] == daily[key], key

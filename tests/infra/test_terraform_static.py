"""Static checks of terraform/: references, variables, tables, IAM, environment, formatting.

No terraform binary is needed: python-hcl2 parses the files, and each test states one rule.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from typing import Any

import pytest

from dlpipe import config, metrics
from dlpipe.domain import routing, schema
from dlpipe.domain.events import parse_event
from dlpipe.domain.outage import OutageBackoff
from dlpipe.domain.rules import assert_recovery_fits, visibility_margin_seconds
from dlpipe.local.terraform import TerraformModule
from dlpipe.services.orchestrator.durable import assert_polling_fits
from tests.infra.hcl import (
    DATA_REF,
    LOCAL_REF,
    RESOURCE_REF,
    TERRAFORM_DIR,
    VAR_REF,
    Module,
    index_keys,
    literal,
    literal_string,
    policy_statements,
    strings,
    unquote,
)

MODULE = Module.load()

# Statements that must name "*" as their resource, each with the reason AWS leaves no choice.
WILDCARD_RESOURCE_ALLOWED = {
    # Key policies: "*" is the key itself; no other resource may be named there.
    ("kms_key", "AccountAdministersKeyThroughIam"),
    ("kms_key", "CloudWatchLogsEncryptsOurLogGroups"),
    ("kms_key", "CloudWatchAlarmsPublishToEncryptedTopic"),
    # xray:PutTraceSegments / PutTelemetryRecords have no resource-level permissions.
    ("orchestrator", "XRayTraces"),
    ("downloader", "XRayTraces"),
    # ecr:GetAuthorizationToken has no resource-level permissions.
    ("ecs_execution", "EcrLogin"),
}

CONFIG_ENV_NAMES = {value for name, value in vars(config).items() if name.startswith("ENV_")}

ORCHESTRATOR_NEEDS = {
    config.ENV_JOBS_TABLE,
    config.ENV_BATCHES_TABLE,
    config.ENV_QUEUE_URL,
    config.ENV_DLQ_URL,
    config.ENV_PROVIDER_URL,
    config.ENV_PROVIDER_TOKEN_SECRET,
    config.ENV_POLL_INTERVAL_SECONDS,
    config.ENV_MAX_POLLS,
    config.ENV_DATE_OFFSET_DAYS,
    config.ENV_SWEEP_REQUEUE,
    config.ENV_RESEND_AFTER_SECONDS,
    config.ENV_LOG_LEVEL,
    config.ENV_PROVIDER_OUTAGE_BUDGET_SECONDS,
    config.ENV_LARGE_QUEUE_URL,
    config.ENV_LARGE_FILE_THRESHOLD_BYTES,
    config.ENV_DEST_BUCKET,
    config.ENV_LEASE_SECONDS,
    # Where a named feed's parameter is (set only when there are named feeds).
    config.ENV_FEEDS_PARAMETER_PATH,
}
DOWNLOADER_NEEDS = {
    config.ENV_JOBS_TABLE,
    config.ENV_QUEUE_URL,
    config.ENV_DEST_BUCKET,
    config.ENV_PRIVATE_KEY_SECRET,
    config.ENV_PROVIDER_URL,
    config.ENV_PROVIDER_TOKEN_SECRET,
    config.ENV_LEASE_SECONDS,
    # A delayed copy of a message is routed like every send (dlpipe/adapters/download_queue.py).
    config.ENV_LARGE_QUEUE_URL,
    config.ENV_LARGE_FILE_THRESHOLD_BYTES,
    config.ENV_FEEDS_PARAMETER_PATH,  # a job's feed's parameter (set only with named feeds)
    config.ENV_MAX_SHARE_PERCENT,  # the share one feed may hold (set only with named feeds)
}

TABLES = [
    pytest.param(
        schema.JOBS_RESOURCE,
        schema.JOBS_HASH_KEY,
        schema.JOBS_KEY_ATTRIBUTE_TYPES,
        schema.JOBS_INDEXES,
        id="jobs",
    ),
    pytest.param(
        schema.BATCHES_RESOURCE,
        schema.BATCHES_HASH_KEY,
        schema.BATCHES_KEY_ATTRIBUTE_TYPES,
        schema.BATCHES_INDEXES,
        id="batches",
    ),
]


def _all_strings() -> list[str]:
    return [text for parsed in MODULE.files.values() for text in strings(parsed)]


def _table(label: str) -> dict[str, Any]:
    return MODULE.resource("aws_dynamodb_table", label)


def _environment_names(value: Any) -> set[str]:
    """Names in an environment map: a literal map, or the object literals of a merge(...)."""
    value = MODULE.resolve_local(value)
    if isinstance(value, dict):
        return {unquote(key) for key in value if not key.startswith("__")}
    names: set[str] = set()
    for local_name in LOCAL_REF.findall(value):
        names |= _environment_names(MODULE.locals[local_name])
    for body in re.findall(r"\{([^{}]*)\}", value.removeprefix("${").removesuffix("}")):
        names |= set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*=", body))
    return names


def _lambda_environment(label: str) -> set[str]:
    body = MODULE.resource("aws_lambda_function", label)
    return _environment_names(body["environment"][0]["variables"])


# --- references and declarations ------------------------------------------------------------


def test_every_var_reference_names_a_declared_variable() -> None:
    """Every var.X used anywhere is declared in a variable block."""
    used = {name for text in _all_strings() for name in VAR_REF.findall(text)}
    assert used - MODULE.variables.keys() == set()


def test_every_local_reference_names_a_defined_local() -> None:
    """Every local.X used anywhere is defined in a locals block."""
    used = {name for text in _all_strings() for name in LOCAL_REF.findall(text)}
    assert used - MODULE.locals.keys() == set()


def test_every_data_reference_names_a_declared_data_source() -> None:
    """Every data.T.N used anywhere is declared as a data source."""
    used = {ref for text in _all_strings() for ref in DATA_REF.findall(text)}
    assert used - MODULE.data.keys() == set()


def test_every_resource_reference_names_a_declared_resource() -> None:
    """Every aws_T.N used anywhere is declared as a resource."""
    used = {ref for text in _all_strings() for ref in RESOURCE_REF.findall(text)}
    assert used - MODULE.resources.keys() == set()


def test_every_declared_variable_is_used() -> None:
    """No variable is declared that nothing reads."""
    used = {name for text in _all_strings() for name in VAR_REF.findall(text)}
    assert MODULE.variables.keys() - used == set()


def test_every_variable_has_a_description_and_a_type() -> None:
    """Every variable says what it is for and what type it takes."""
    incomplete = [
        name
        for name, body in MODULE.variables.items()
        if not literal(body.get("description", "")).strip() or "type" not in body
    ]
    assert incomplete == []


def test_every_output_has_a_description() -> None:
    """Every output says what it holds."""
    assert [n for n, b in MODULE.outputs.items() if not literal(b.get("description", ""))] == []


# --- tables: terraform/dynamodb.tf agrees with dlpipe/domain/schema.py ----------------------------


@pytest.mark.parametrize(("label", "hash_key", "attribute_types", "indexes"), TABLES)
def test_table_hash_key_and_billing_match_the_schema(
    label: str, hash_key: str, attribute_types: dict[str, str], indexes: dict[str, Any]
) -> None:
    """Each table is keyed on the schema's hash key alone and billed per request."""
    table = _table(label)
    assert literal(table["hash_key"]) == hash_key
    assert "range_key" not in table
    assert literal(table["billing_mode"]) == "PAY_PER_REQUEST"


@pytest.mark.parametrize(("label", "hash_key", "attribute_types", "indexes"), TABLES)
def test_table_key_attribute_types_match_the_schema(
    label: str, hash_key: str, attribute_types: dict[str, str], indexes: dict[str, Any]
) -> None:
    """Each table declares exactly the schema's key attributes, with the schema's types."""
    declared = {literal(a["name"]): literal(a["type"]) for a in _table(label)["attribute"]}
    assert declared == attribute_types


@pytest.mark.parametrize(("label", "hash_key", "attribute_types", "indexes"), TABLES)
def test_table_indexes_match_the_schema(
    label: str, hash_key: str, attribute_types: dict[str, str], indexes: dict[str, Any]
) -> None:
    """Each table has exactly the schema's GSIs, with its hash and range keys and projection."""
    projections = {schema.JOBS_RESOURCE: schema.JOBS_PROJECTIONS}.get(
        label, schema.BATCHES_PROJECTIONS
    )
    declared, projected = {}, {}
    for index in _table(label).get("global_secondary_index", []):
        name = literal(index["name"])
        declared[name] = index_keys(index)
        non_key = tuple(literal(a) for a in index.get("non_key_attributes", []))
        projected[name] = (literal(index["projection_type"]), non_key)
    assert declared == indexes
    assert projected == projections


@pytest.mark.parametrize(("label", "hash_key", "attribute_types", "indexes"), TABLES)
def test_table_ttl_is_enabled_on_the_schema_attribute(
    label: str, hash_key: str, attribute_types: dict[str, str], indexes: dict[str, Any]
) -> None:
    """Each table expires items through the schema's TTL attribute."""
    (ttl,) = _table(label)["ttl"]
    assert literal(ttl["attribute_name"]) == schema.TTL_ATTRIBUTE
    assert ttl["enabled"] is True


@pytest.mark.parametrize(("label", "hash_key", "attribute_types", "indexes"), TABLES)
def test_point_in_time_recovery_is_on_in_prod_only(
    label: str, hash_key: str, attribute_types: dict[str, str], indexes: dict[str, Any]
) -> None:
    """Each table's point-in-time recovery follows local.is_prod, which is environment == prod."""
    (pitr,) = _table(label)["point_in_time_recovery"]
    assert pitr["enabled"] == "${local.is_prod}"
    assert MODULE.locals["is_prod"] == '${var.environment == "prod"}'


# --- IAM -------------------------------------------------------------------------------------


def _statements() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (name, literal(statement.get("sid", "")), statement)
        for (dtype, name), body in MODULE.data.items()
        if dtype == "aws_iam_policy_document"
        for statement in policy_statements(body)
    ]


def _names_wildcard(resources: Any) -> bool:
    if isinstance(resources, list):
        return any(literal(item) == "*" for item in resources)
    return '"*"' in resources


def test_policy_statements_name_specific_resources() -> None:
    """No policy statement grants on resource "*" unless AWS requires it (allow-list above)."""
    wildcard = {
        (name, sid)
        for name, sid, statement in _statements()
        if _names_wildcard(statement.get("resources", []))
    }
    assert wildcard - WILDCARD_RESOURCE_ALLOWED == set()


def test_wildcard_allow_list_has_no_stale_entries() -> None:
    """Every allow-listed wildcard statement still exists and still needs the wildcard."""
    present = {(name, sid) for name, sid, _ in _statements()}
    assert WILDCARD_RESOURCE_ALLOWED - present == set()


def test_only_the_key_policy_grants_a_whole_service() -> None:
    """No Allow grants "*" or "service:*" actions except key administration through IAM."""
    broad = {
        (name, sid)
        for name, sid, statement in _statements()
        if literal(statement.get("effect", "Allow")) == "Allow"
        for action in statement.get("actions", [])
        if literal(action) == "*" or literal(action).endswith(":*")
    }
    assert broad == {("kms_key", "AccountAdministersKeyThroughIam")}


def test_every_role_has_its_own_policy() -> None:
    """Each role (orchestrator, downloader, scheduler, ECS task and execution) has one policy."""
    roles = {name for (rtype, name) in MODULE.resources if rtype == "aws_iam_role"}
    policies = {name for (rtype, name) in MODULE.resources if rtype == "aws_iam_role_policy"}
    assert (
        roles
        == policies
        == {"orchestrator", "downloader", "scheduler", "ecs_task", "ecs_execution"}
    )


def test_durable_checkpoint_permission_is_scoped_to_the_orchestrators_versions() -> None:
    """The orchestrator may checkpoint only executions of its own function versions (ARN:*)."""
    (statement,) = [s for n, sid, s in _statements() if sid == "DurableExecutionCheckpoints"]
    assert statement["resources"] == ['"${local.orchestrator_function_arn}:*"']
    assert MODULE.locals["orchestrator_function_name"].endswith('dlpipe-orchestrator"')


def test_scheduler_may_invoke_only_the_live_alias() -> None:
    """The scheduler's role invokes the orchestrator through its alias and nothing else."""
    invoke = [
        s
        for n, _, s in _statements()
        if n == "scheduler" and '"lambda:InvokeFunction"' in s["actions"]
    ]
    assert [s["resources"] for s in invoke] == [["${aws_lambda_alias.orchestrator_live.arn}"]]


# --- Lambda wiring ---------------------------------------------------------------------------


def test_lambda_environment_names_are_defined_in_config() -> None:
    """Every environment variable Terraform sets is a name dlpipe/config.py reads."""
    names = _lambda_environment("orchestrator") | _lambda_environment("downloader")
    names |= _environment_names(MODULE.locals["ecs_worker_environment"])
    assert names - CONFIG_ENV_NAMES == set()


def test_orchestrator_receives_every_setting_it_reads() -> None:
    """The orchestrator gets its tables, queues, provider, secret, polling and sweep settings."""
    assert ORCHESTRATOR_NEEDS - _lambda_environment("orchestrator") == set()


def test_downloader_receives_every_setting_it_reads() -> None:
    """The downloader gets its table, queue, bucket, secrets, provider and lease settings."""
    assert DOWNLOADER_NEEDS - _lambda_environment("downloader") == set()


def test_ecs_worker_runs_with_the_downloaders_settings() -> None:
    """The ECS worker reads the same settings as the downloader Lambda, plus its region."""
    names = _environment_names(MODULE.locals["ecs_worker_environment"])
    assert names == DOWNLOADER_NEEDS | {config.ENV_LOG_LEVEL, config.ENV_REGION}


def test_orchestrator_is_a_published_durable_function() -> None:
    """The orchestrator is durable (timeout and retention set) and publishes versions."""
    body = MODULE.resource("aws_lambda_function", "orchestrator")
    (durable,) = body["durable_config"]
    assert durable.keys() >= {"execution_timeout", "retention_period"}
    assert body["publish"] is True
    assert literal(body["handler"]) == "orchestrator.handler.handler"


@pytest.mark.parametrize("label", ["orchestrator", "downloader"])
def test_lambda_handler_names_a_function_in_the_package(label: str) -> None:
    """Each function's handler string ("module.function") resolves to a callable in our code."""
    module_name, _, function = literal(
        MODULE.resource("aws_lambda_function", label)["handler"]
    ).rpartition(".")
    assert callable(getattr(importlib.import_module(module_name), function))


def test_default_poll_budget_fits_the_durable_execution_timeout() -> None:
    """With default variables, every poll, a whole provider outage and the setup margin fit."""
    default = {name: body.get("default") for name, body in MODULE.variables.items()}
    assert_polling_fits(
        default["poll_interval_seconds"],
        default["max_polls"],
        default["durable_execution_timeout_seconds"],
        margin_seconds=default["durable_setup_margin_seconds"],
        outage_budget_seconds=default["provider_outage_budget_seconds"],
        dependency_budget_seconds=default["aws_outage_budget_seconds"],
    )


def test_default_aws_outage_budget_is_the_orchestrators_own_default() -> None:
    """Terraform's aws_outage_budget_seconds defaults to what the code assumes unset."""
    default = MODULE.variables["aws_outage_budget_seconds"]["default"]
    assert default == config.Settings().aws_outage_budget_seconds


def test_default_outage_budget_is_the_orchestrators_own_default() -> None:
    """Terraform's provider_outage_budget_seconds defaults to what the code assumes unset."""
    default = MODULE.variables["provider_outage_budget_seconds"]["default"]
    assert default == config.Settings().provider_outage_budget_seconds
    assert default == OutageBackoff().budget_seconds


def test_orchestrator_rejects_a_poll_budget_beyond_the_execution_timeout() -> None:
    """A plan fails when polls plus the outage budget and margin overrun the durable timeout."""
    (lifecycle,) = MODULE.resource("aws_lambda_function", "orchestrator")["lifecycle"]
    conditions = [p["condition"] for p in lifecycle["precondition"]]
    assert any(
        "var.poll_interval_seconds * var.max_polls" in c
        and "var.provider_outage_budget_seconds" in c
        and "var.aws_outage_budget_seconds" in c
        and "var.durable_setup_margin_seconds" in c
        and "<= var.durable_execution_timeout_seconds" in c
        for c in conditions
    )


def test_schedule_starts_the_orchestrator_through_the_live_alias() -> None:
    """The daily schedule targets the alias ARN (a durable function needs a qualified ARN)."""
    (target,) = MODULE.resource("aws_scheduler_schedule", "daily")["target"]
    assert target["arn"] == "${aws_lambda_alias.orchestrator_live.arn}"
    assert target["dead_letter_config"][0]["arn"] == "${aws_sqs_queue.schedule_dlq.arn}"
    assert "retry_policy" in target


def test_schedule_input_becomes_an_event_the_orchestrator_reads() -> None:
    """The schedule's input is literal JSON in which Scheduler's time keyword survives, and once substituted it names the previous day."""
    (target,) = MODULE.resource("aws_scheduler_schedule", "daily")["target"]
    template = literal_string(target["input"])
    assert template is not None, "the input must be a literal string: jsonencode escapes < and >"
    # Scheduler replaces the keyword in the text it holds, before anything parses it as JSON.
    sent = template.replace("<aws.scheduler.scheduled-time>", "2026-03-01T06:30:00Z")
    assert parse_event(json.loads(sent)).polling_date == "2026-02-28"


@pytest.mark.parametrize(
    ("label", "queue", "cap"),
    [
        (
            "downloads",
            "${aws_sqs_queue.downloads.arn}",
            '${local.downloader_mapping_concurrency["default"]}',
        ),
        (
            "feed_downloads",
            "${aws_sqs_queue.feed_downloads[each.key].arn}",
            "${local.downloader_mapping_concurrency[each.key]}",
        ),
    ],
)
def test_downloader_event_source_reports_item_failures_and_caps_concurrency(
    label: str, queue: str, cap: str
) -> None:
    """Each SQS event source (the main queue's, each feed's) retries only failed messages, reads
    its own queue, and never exceeds its feed's cap (tests/infra/test_deployment_contract.py
    renders the caps and checks them against dlpipe/domain/lanes.py)."""
    mapping = MODULE.resource("aws_lambda_event_source_mapping", label)
    assert mapping["function_response_types"] == ['"ReportBatchItemFailures"']
    assert mapping["scaling_config"][0]["maximum_concurrency"] == cap
    assert mapping["event_source_arn"] == queue
    assert mapping["batch_size"] == "${var.downloader_batch_size}"


def test_queue_visibility_is_six_downloader_timeouts() -> None:
    """A message stays hidden for six downloader timeouts, Lambda's SQS guidance."""
    queue = MODULE.resource("aws_sqs_queue", "downloads")
    assert queue["visibility_timeout_seconds"] == "${local.queue_visibility_timeout_seconds}"
    assert (
        MODULE.locals["queue_visibility_timeout_seconds"] == "${var.downloader_timeout_seconds * 6}"
    )


def test_alarms_watch_the_namespace_the_code_emits_metrics_to() -> None:
    """The pipeline alarms read dlpipe/metrics.py's namespace, each with its entry's
    dimensions (tests/infra/test_dashboard.py checks them against the code)."""
    assert literal(MODULE.locals["metric_namespace"]) == metrics.NAMESPACE
    alarm = MODULE.resource("aws_cloudwatch_metric_alarm", "pipeline")
    assert alarm["namespace"] == "${local.metric_namespace}"
    assert alarm["dimensions"] == "${each.value.dimensions}"


def test_every_queue_is_encrypted_with_the_dlpipe_key() -> None:
    """Every SQS queue of dlpipe's own uses the customer-managed key (the example consumer's
    queue, which EventBridge writes as a service, is encrypted by SQS: events.tf says why)."""
    queues = {
        n: b
        for (t, n), b in MODULE.resources.items()
        if t == "aws_sqs_queue" and n != "handoff_example"
    }
    assert MODULE.resource("aws_sqs_queue", "handoff_example")["sqs_managed_sse_enabled"] is True
    assert {n: b.get("kms_master_key_id") for n, b in queues.items()} == dict.fromkeys(
        queues, "${aws_kms_key.dlpipe.arn}"
    )


# --- defaults that must work on any account -------------------------------------------------

# Variables whose validation must refuse what AWS refuses or advises against: (name, a value
# the validation must reject, a value it must accept).
AWS_LIMITS = [
    # AWS advises a redrive maxReceiveCount of at least 5 for Lambda event sources: throttled
    # batches count as receives, so fewer sends healthy messages to the DLQ.
    pytest.param("max_receive_count", 4, 5, id="max_receive_count"),
    # An SQS event source's maximum_concurrency is 2 to 1,000.
    pytest.param("downloader_max_concurrency", 1, 2, id="downloader_max_concurrency"),
    # An SQS event source reads at most 10 messages per batch without a batching window.
    pytest.param("downloader_batch_size", 11, 10, id="downloader_batch_size"),
]

_HCL_TO_PYTHON = {"&&": " and ", "||": " or ", "!": " not ", "null": "None"}
_HCL_TO_PYTHON |= {"true": "True", "false": "False"}


def _evaluate(expression: Any, values: dict[str, Any]) -> Any:
    """A small HCL expression (var refs, literals, comparisons, && || !, one `c ? a : b`)."""
    if not isinstance(expression, str):
        return expression
    text = expression.removeprefix("${").removesuffix("}")
    text = VAR_REF.sub(lambda m: repr(values[m.group(1)]), text)
    text = re.sub(
        r"&&|\|\||!(?!=)|\bnull\b|\btrue\b|\bfalse\b", lambda m: _HCL_TO_PYTHON[m.group(0)], text
    )
    condition, question, branches = text.partition("?")
    if question:
        when_true, _, when_false = branches.partition(":")
        text = f"({when_true}) if ({condition}) else ({when_false})"
    tree = ast.parse(text, mode="eval")
    allowed = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.IfExp)
    allowed += (ast.Compare, ast.cmpop, ast.Constant, ast.USub)
    assert all(isinstance(node, allowed) for node in ast.walk(tree)), expression
    return eval(compile(tree, "<hcl>", "eval"))  # only literals and operators, checked above


def _defaults(**overrides: Any) -> dict[str, Any]:
    return {name: body.get("default") for name, body in MODULE.variables.items()} | overrides


@pytest.mark.parametrize(("name", "rejected", "accepted"), AWS_LIMITS)
def test_variable_validation_refuses_what_aws_refuses(
    name: str, rejected: Any, accepted: Any
) -> None:
    """Each listed variable's validation rejects the value past the AWS limit and accepts the limit."""
    (validation,) = MODULE.variables[name]["validation"]
    assert _evaluate(validation["condition"], _defaults(**{name: rejected})) is False
    assert _evaluate(validation["condition"], _defaults(**{name: accepted})) is True


# --- formatting ------------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"^(\s*)([A-Za-z_][\w-]*|\"[^\"]*\")(\s*)=(?!=)(.*)$")
_BRACKETS = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _net_brackets(text: str) -> int:
    code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text).split("#")[0]
    return sum(_BRACKETS.get(char, 0) for char in code)


def _misaligned(lines: list[str]) -> list[int]:
    """Line numbers whose '=' is not where `terraform fmt` aligns it.

    fmt aligns the '=' of consecutive single-line attributes one space after the longest
    name; a blank line, a comment line, a block or a multi-line value ends the run.
    """
    bad: list[int] = []
    run: list[tuple[int, int, int]] = []  # (line number, name end column, '=' column)

    def close() -> None:
        if run:
            want = max(end for _, end, _ in run) + 1
            bad.extend(number for number, _, column in run if column != want)
        run.clear()

    for number, line in enumerate(lines, start=1):
        match = _ASSIGNMENT.match(line)
        if not match or _net_brackets(match.group(4)) != 0:
            close()
            continue
        name_end = len(match.group(1)) + len(match.group(2))
        run.append((number, name_end, name_end + len(match.group(3))))
    close()
    return bad


@pytest.mark.parametrize("path", sorted(TERRAFORM_DIR.glob("*.tf")), ids=lambda p: p.name)
def test_files_are_formatted_like_terraform_fmt(path: Any) -> None:
    """Two-space indents, no tabs or trailing blanks, '=' aligned as terraform fmt aligns it."""
    lines = path.read_text().splitlines()
    assert [n for n, line in enumerate(lines, 1) if "\t" in line or line != line.rstrip()] == []
    assert [n for n, line in enumerate(lines, 1) if (len(line) - len(line.lstrip())) % 2] == []
    assert _misaligned(lines) == []


# --- large files (dlpipe/domain/routing.py) ---------------------------------------------------------


def test_large_queue_exists_only_with_the_ecs_worker_and_dead_letters_to_the_shared_dlq() -> None:
    """The large-file queue is counted by the ECS worker switch and redrives to the download DLQ."""
    queue = MODULE.resource("aws_sqs_queue", "downloads_large")
    assert queue["count"] == "${local.ecs_worker_count}"
    assert "aws_sqs_queue.downloads_dlq.arn" in queue["redrive_policy"]
    allow = MODULE.resource("aws_sqs_queue_redrive_allow_policy", "downloads_dlq")
    assert "local.download_dlq_sources" in allow["redrive_allow_policy"]
    assert "aws_sqs_queue.downloads_large[*].arn" in MODULE.locals["download_dlq_sources"]


def test_each_feed_queue_is_the_main_queue_but_for_its_name() -> None:
    """A named feed's queue (for_each over the feeds) has the main queue's visibility,
    retention, long polling, key and redrive to the shared DLQ; its name carries the feed's."""
    main = MODULE.resource("aws_sqs_queue", "downloads")
    feed = MODULE.resource("aws_sqs_queue", "feed_downloads")
    assert feed["for_each"] == "${var.feeds}"
    assert "${each.key}" in literal(feed["name"])
    assert literal(feed["name"]).startswith(literal(main["name"]))
    same = {k: v for k, v in main.items() if k not in ("name", "__comments__")}
    assert {k: feed.get(k) for k in same} == same
    assert "aws_sqs_queue.feed_downloads" in MODULE.locals["download_dlq_sources"]


def test_large_file_threshold_is_the_routing_rule_at_the_downloader_timeout() -> None:
    """Terraform's threshold is dlpipe.domain.routing's formula (timeout x 20 MiB/s x 1/2)."""
    for timeout_s in (60, 600, 900):
        module = TerraformModule.load(downloader_timeout_seconds=timeout_s)
        value = module.value("${local.large_file_threshold_bytes}")
        assert value == routing.large_file_threshold_bytes(timeout_s)


def test_large_file_settings_are_set_only_with_the_ecs_worker() -> None:
    """Without the worker neither setting is set: no large queue, every file on the main one."""
    environment = MODULE.locals["large_file_environment"]
    assert environment.rstrip("}").rstrip().endswith("if var.enable_ecs_worker")
    for label in ("orchestrator", "downloader"):
        body = MODULE.resource("aws_lambda_function", label)
        assert "local.large_file_environment" in body["environment"][0]["variables"]
    assert "local.large_file_environment" in MODULE.locals["ecs_worker_environment"]


def test_large_queue_permissions_follow_who_sends_and_who_consumes() -> None:
    """The orchestrator and the Lambda may only send to the large queue; the ECS task consumes it."""
    on_large = {
        (name, sid): {literal(a) for a in statement["actions"]}
        for name, sid, statement in _statements()
        if "downloads_large" in str(statement.get("resources"))
    }
    consume = {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"}
    assert on_large == {
        ("orchestrator", "QueueLargeDownloads"): {"sqs:SendMessage"},
        # Both downloaders' code (Lambda and ECS task) re-sends a deferred copy there.
        ("downloader_code", "CopyToLargeDownloads"): {"sqs:SendMessage"},
        ("ecs_task", "ConsumeLargeDownloads"): consume,
    }
    policy = MODULE.resource("aws_iam_role_policy", "ecs_task")
    assert policy["policy"] == "${data.aws_iam_policy_document.ecs_task[0].json}"


def test_default_sweep_and_polling_leave_room_for_the_recovery_bound() -> None:
    """Terraform's defaults sweep as the code does, and the polls outlast a crash's recovery."""
    default = {name: body.get("default") for name, body in MODULE.variables.items()}
    assert default["sweep_requeue"] is config.Settings().sweep_requeue is True
    assert_recovery_fits(
        default["max_polls"],
        default["poll_interval_seconds"],
        default["lease_seconds"],
        visibility_margin_seconds(default["lease_seconds"]),
        default["resend_after_seconds"],
    )

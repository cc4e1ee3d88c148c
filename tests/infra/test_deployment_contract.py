"""Deployed as configured: every value terraform/ hands the code, loaded by the code's own loaders.

Rendered by the terraform binary from the sources (tests/infra/terraform_render.py): the
functions' and the ECS task's environments, each feed's SSM parameter and each schedule's
input, each feed's queue and event source mapping, for the default variables and the
fixtures. Each is then read as on AWS: the environment by Settings.from_env, a feed by
ParameterFeeds at the name the code builds from DLPIPE_FEEDS_PARAMETER_PATH, a schedule's
input by the orchestrator's event parser with the feed's run, a mapping's cap against
dlpipe/domain/lanes.py's rule. A value Terraform writes and the code refuses fails here, not
on the first day.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import hcl2
import pytest

from dlpipe.adapters.feed_parameters import ParameterFeeds, feed_from_parameter, parameter_value
from dlpipe.bootstrap.feed_source import feed_source
from dlpipe.bootstrap.orchestrator import check_recovery_fits, day_deadline, feed_runs
from dlpipe.config import ENV_REGION, Settings, check_provider_url
from dlpipe.domain.events import parse_event
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, Feed
from dlpipe.domain.lanes import lane_cap
from dlpipe.feed_settings import settings_for_feed
from dlpipe.services.orchestrator.feed_runs import served_request
from dlpipe.services.orchestrator.sequence import InlineSteps
from tests.infra.hcl import Module
from tests.infra.terraform_render import TERRAFORM, Rendered, Value

pytestmark = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH")

FIXTURES = Path(__file__).parent / "fixtures"
REQUIRED = {"provider_base_url": "https://provider.example.com"}
# What EventBridge Scheduler puts in place of its keyword when it invokes the target.
SCHEDULED_TIME = "2026-11-27T07:00:00Z"
KEYWORD = "<aws.scheduler.scheduled-time>"

CAP = ("scaling_config", "maximum_concurrency")
SOURCE = ("event_source_arn",)
DIMENSIONS = ("dimensions",)
RESERVED = ("reserved_concurrent_executions",)
# The variables' defaults, for a deployment that leaves them unset.
DEFAULTS: dict[str, Any] = {n: body.get("default") for n, body in Module.load().variables.items()}
# An SQS event source mapping runs at least 2 invocations at once.
MAPPING_MIN_CONCURRENCY = 2

VALUES = {
    "orchestrator": Value("aws_lambda_function", "orchestrator", ("environment", "variables")),
    "downloader": Value("aws_lambda_function", "downloader", ("environment", "variables")),
    "containers": Value("aws_ecs_task_definition", "worker", ("container_definitions",)),
    "parameters": Value("aws_ssm_parameter", "feed", ("value",)),
    "parameter_names": Value("aws_ssm_parameter", "feed", ("name",)),
    "daily_input": Value("aws_scheduler_schedule", "daily", ("target", "input")),
    "feed_inputs": Value("aws_scheduler_schedule", "feed", ("target", "input")),
    "jobs": Value("aws_dynamodb_table", "jobs"),
    "batches": Value("aws_dynamodb_table", "batches"),
    "queue": Value("aws_sqs_queue", "downloads"),
    "large_queue": Value("aws_sqs_queue", "downloads_large"),
    "dlq": Value("aws_sqs_queue", "downloads_dlq"),
    "bucket": Value("aws_s3_bucket", "destination"),
    "bus": Value("aws_cloudwatch_event_bus", "handoff"),
    "token": Value("aws_secretsmanager_secret", "provider_token"),
    "key": Value("aws_secretsmanager_secret", "rsa_private_key"),
    "feed_keys": Value("aws_secretsmanager_secret", "feed_private_key"),
    "feed_tokens": Value("aws_secretsmanager_secret", "feed_token"),
    "feed_queues": Value("aws_sqs_queue", "feed_downloads"),
    "redrive": Value("aws_sqs_queue", "downloads", ("redrive_policy",)),
    "feed_redrives": Value("aws_sqs_queue", "feed_downloads", ("redrive_policy",)),
    "redrive_allow": Value(
        "aws_sqs_queue_redrive_allow_policy", "downloads_dlq", ("redrive_allow_policy",)
    ),
    "cap": Value("aws_lambda_event_source_mapping", "downloads", CAP),
    "feed_caps": Value("aws_lambda_event_source_mapping", "feed_downloads", CAP),
    "feed_sources": Value("aws_lambda_event_source_mapping", "feed_downloads", SOURCE),
    "feed_alarms": Value("aws_cloudwatch_metric_alarm", "feed_queue_oldest_message", DIMENSIONS),
    "reserved": Value("aws_lambda_function", "downloader", RESERVED),
    "orchestrator_reserved": Value("aws_lambda_function", "orchestrator", RESERVED),
}


def _tfvars(name: str) -> dict[str, Any]:
    with (FIXTURES / name).open() as handle:
        raw = hcl2.load(handle)
    # python-hcl2 keeps the quotes of strings and map keys.
    return json.loads(json.dumps(raw).replace('\\"', ""))


DEPLOYMENTS = {
    "defaults": REQUIRED,
    "two-feeds": _tfvars("two-feeds.tfvars"),
    "all-features": _tfvars("all-features.tfvars"),
}


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return Rendered(tmp_path_factory.mktemp("deployment"), VALUES)


@pytest.fixture(scope="module")
def rendered(module: Rendered) -> dict[str, dict[str, Any]]:
    return {name: module.outputs(variables) for name, variables in DEPLOYMENTS.items()}


class RenderedParameters:
    """SSM as the deployment leaves it: GetParameter answers the parameters Terraform creates,
    by the names it gives them, and ParameterNotFound for any other name."""

    def __init__(self, outputs: Mapping[str, Any]) -> None:
        names, values = outputs["parameter_names"], outputs["parameters"]
        self.by_name = {names[feed]: values[feed] for feed in names}
        self.asked: list[str] = []

    def get_parameter(self, **request: Any) -> Mapping[str, Any]:
        from botocore.exceptions import ClientError

        self.asked.append(request["Name"])
        if request["Name"] not in self.by_name:
            error = {"Error": {"Code": "ParameterNotFound", "Message": request["Name"]}}
            raise ClientError(error, "GetParameter")  # type: ignore[arg-type]
        return {"Parameter": {"Name": request["Name"], "Value": self.by_name[request["Name"]]}}


def _lambda_settings(environment: Mapping[str, str], region: str) -> Settings:
    """The settings a function builds from its environment (Lambda adds AWS_REGION)."""
    return Settings.from_env({**environment, ENV_REGION: region})


def _region(variables: Mapping[str, Any]) -> str:
    return str(variables.get("aws_region", "eu-west-1"))


def _feeds(outputs: Mapping[str, Any], settings: Settings) -> dict[str, Feed]:
    """Every feed the deployment names, read as the functions read them."""
    if not outputs["parameters"]:
        assert settings.feeds_parameter_path is None
        return {}
    assert settings.feeds_parameter_path is not None
    ssm = RenderedParameters(outputs)
    source = ParameterFeeds(ssm, settings.feeds_parameter_path)
    feeds = {name: source.feed(name) for name in outputs["parameters"]}
    assert sorted(ssm.asked) == sorted(ssm.by_name)  # the code asks exactly the names made
    return feeds


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_the_orchestrator_runs_every_feed_from_what_terraform_renders(
    rendered: dict[str, dict[str, Any]], deployment: str
) -> None:
    """Its environment loads, names the tables, queues, bucket and bus Terraform creates, and
    each feed's parameter and schedule input give that feed's run for the scheduled day."""
    outputs, variables = rendered[deployment], DEPLOYMENTS[deployment]
    settings = _lambda_settings(outputs["orchestrator"], _region(variables))
    check_recovery_fits(settings)
    day_deadline(settings)
    assert check_provider_url(settings.provider_base_url or "", allow_http=False)
    assert settings.jobs_table == outputs["jobs"]["name"]
    assert settings.batches_table == outputs["batches"]["name"]
    assert settings.queue_url == outputs["queue"]["url"]
    assert settings.dlq_url == outputs["dlq"]["url"]
    assert settings.destination_bucket == outputs["bucket"]["bucket"]
    assert settings.provider_token_secret_id == outputs["token"]["arn"]
    buses = [bus["name"] for bus in outputs["bus"]] or ["default"]
    assert settings.event_bus in buses
    assert settings.restatement_window_days == variables.get(
        "restatement_window_days", DEFAULTS["restatement_window_days"]
    )
    feeds = _feeds(outputs, settings)
    # The wiring's own source (bootstrap/feed_source.py) on the rendered parameters; no feeds file.
    clients = SimpleNamespace(ssm=RenderedParameters(outputs))
    source = feed_source(settings, clients, env={})  # type: ignore[arg-type]
    runs = feed_runs(settings, source, lambda own: own)  # type: ignore[arg-type,return-value]
    inputs = {DEFAULT_FEED_NAME: outputs["daily_input"], **outputs["feed_inputs"]}
    assert sorted(inputs) == sorted([DEFAULT_FEED_NAME, *feeds])
    for name, text in inputs.items():
        event = json.loads(text.replace(KEYWORD, SCHEDULED_TIME))
        request, run = served_request(InlineSteps(), event, settings.date_offset_days, runs)
        own: Settings = run.flow()  # type: ignore[assignment]
        assert own.feed == request.feed == name
        zone = feeds[name].time_zone if name in feeds else "UTC"
        assert request == parse_event(event, settings.date_offset_days, zone)
        window = feeds[name].restatement_window_days if name in feeds else None
        assert own.restatement_window_days == (
            settings.restatement_window_days if window is None else window
        )
        if name in feeds:
            assert own.destination_prefix == feeds[name].destination_prefix.rstrip("/")
            assert own.provider_token_secret_id is not None
            check_provider_url(own.provider_base_url or "", allow_http=False)


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_every_downloader_loads_its_environment_and_each_feeds_secrets(
    rendered: dict[str, dict[str, Any]], deployment: str
) -> None:
    """The downloader Lambda's and the ECS worker's environments load, name the queues, table
    and bucket Terraform creates, and each feed's settings carry the secrets made for it."""
    outputs, variables = rendered[deployment], DEPLOYMENTS[deployment]
    environments = [outputs["downloader"]]
    for containers in outputs["containers"]:
        (worker,) = json.loads(containers)
        environments.append({pair["name"]: pair["value"] for pair in worker["environment"]})
    assert len(environments) == (2 if variables.get("enable_ecs_worker") else 1)
    share = variables.get("feed_max_share_percent", DEFAULTS["feed_max_share_percent"])
    for environment in environments:
        settings = _lambda_settings(environment, _region(variables))
        # Set with named feeds only; alone, the default feed's one lane holds every thread.
        assert settings.max_share_percent == share
        assert ("DLPIPE_MAX_SHARE_PERCENT" in environment) == bool(variables.get("feeds"))
        assert settings.jobs_table == outputs["jobs"]["name"]
        assert settings.queue_url == outputs["queue"]["url"]
        assert settings.large_queue_url == next(
            (queue["url"] for queue in outputs["large_queue"]), None
        )
        assert settings.destination_bucket == outputs["bucket"]["bucket"]
        assert settings.private_key_secret_id == outputs["key"]["arn"]
        secrets = {s["arn"] for s in [*outputs["feed_keys"].values(), outputs["key"]]}
        tokens = {s["arn"] for s in outputs["feed_tokens"].values()}
        for name, feed in _feeds(outputs, settings).items():
            own = settings_for_feed(settings, feed)
            assert own.feed == name
            assert own.private_key_secret_id in secrets
            declared = variables["feeds"][name].get("token_secret")
            assert own.provider_token_secret_id in (tokens if declared is None else {declared})


@pytest.mark.parametrize("deployment", ["two-feeds", "all-features"])
def test_the_local_stack_writes_a_feed_in_the_shape_terraform_does(
    rendered: dict[str, dict[str, Any]], deployment: str
) -> None:
    """parameter_value (the local stack's writer) gives the keys feeds.tf's jsonencode gives
    (every Feed field, its queue and share too), and a feed read from Terraform's parameter is
    written back to the same feed."""
    outputs = rendered[deployment]
    assert outputs["parameters"]
    for name, written in outputs["parameters"].items():
        feed = feed_from_parameter(name, f"/dlpipe/feeds/{name}", written)
        ours = parameter_value(feed)
        assert sorted(json.loads(ours)) == sorted(json.loads(written))
        assert feed_from_parameter(name, f"/dlpipe/feeds/{name}", ours) == feed


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_each_feed_sends_to_and_reads_from_its_own_queue(
    rendered: dict[str, dict[str, Any]], deployment: str
) -> None:
    """Each named feed's parameter names the queue Terraform makes for it, which its settings
    (orchestrator and downloaders) take as theirs; no two feeds share a queue, and the
    default feed keeps the main one."""
    outputs, variables = rendered[deployment], DEPLOYMENTS[deployment]
    queues = outputs["feed_queues"]
    assert sorted(queues) == sorted(variables.get("feeds", {}))
    urls = {queue["url"] for queue in queues.values()} | {outputs["queue"]["url"]}
    assert len(urls) == len(queues) + 1
    for component in ("orchestrator", "downloader"):
        settings = _lambda_settings(outputs[component], _region(variables))
        assert settings.queue_url == outputs["queue"]["url"]
        for name, feed in _feeds(outputs, settings).items():
            assert feed.queue_url == queues[name]["url"], (component, name)
            assert settings_for_feed(settings, feed).queue_url == queues[name]["url"]


def _concurrency(variables: Mapping[str, Any]) -> int:
    return int(variables.get("downloader_max_concurrency", DEFAULTS["downloader_max_concurrency"]))


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_each_feeds_event_source_mapping_holds_its_share_of_the_downloaders(
    rendered: dict[str, dict[str, Any]], deployment: str
) -> None:
    """Each feed's mapping reads its own queue and runs at most the lane cap
    (dlpipe/domain/lanes.py) of downloader_max_concurrency for its share, the feed's own or
    DLPIPE_MAX_SHARE_PERCENT as the downloaders load it, and never fewer than the mapping's
    minimum; alone, the default feed's mapping runs them all."""
    outputs, variables = rendered[deployment], DEPLOYMENTS[deployment]
    settings = _lambda_settings(outputs["downloader"], _region(variables))
    share = variables.get("feed_max_share_percent", DEFAULTS["feed_max_share_percent"])
    assert settings.max_share_percent == share
    feeds = _feeds(outputs, settings)
    lanes, concurrency = 1 + len(feeds), _concurrency(variables)

    def cap(feed_share: int) -> int:
        return max(MAPPING_MIN_CONCURRENCY, lane_cap(concurrency, feed_share, lanes))

    assert outputs["cap"] == cap(settings.max_share_percent)
    if not feeds:
        assert outputs["cap"] == concurrency
    assert sorted(outputs["feed_caps"]) == sorted(feeds)
    for name, feed in feeds.items():
        own = settings_for_feed(settings, feed)
        assert outputs["feed_caps"][name] == cap(own.max_share_percent), name
        assert outputs["feed_sources"][name] == outputs["feed_queues"][name]["arn"]
    overrides = {f.max_share_percent for f in feeds.values()} - {None}
    assert deployment == "defaults" or overrides  # the fixtures exercise a feed's own share


@pytest.mark.parametrize("reserve", [False, True])
@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_a_reservation_holds_every_event_source_mappings_cap(
    module: Rendered, deployment: str, reserve: bool
) -> None:
    """With reserve_lambda_concurrency, the downloader reserves at least what its mappings may
    run at once, added up (so that they never throttle each other into the DLQ), and exactly
    that; without it, neither function reserves any (an account with a low quota refuses it)."""
    variables = {**DEPLOYMENTS[deployment], "reserve_lambda_concurrency": reserve}
    outputs = module.outputs(variables)
    caps = [outputs["cap"], *outputs["feed_caps"].values()]
    if not reserve:  # terraform output leaves out a null value
        assert "reserved" not in outputs
        assert "orchestrator_reserved" not in outputs
        return
    assert sum(caps) <= outputs["reserved"]
    assert outputs["reserved"] == sum(caps)
    assert outputs["orchestrator_reserved"] == variables.get(
        "orchestrator_reserved_concurrency", DEFAULTS["orchestrator_reserved_concurrency"]
    )
    assert len(caps) == 1 + len(variables.get("feeds", {}))


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_each_feed_queue_dead_letters_to_the_shared_dlq_which_allows_it(
    rendered: dict[str, dict[str, Any]], deployment: str
) -> None:
    """A feed's queue redrives to the download DLQ after as many receives as the main queue,
    and the DLQ's redrive allow policy names it among its sources; its alarm watches it."""
    outputs = rendered[deployment]
    main = json.loads(outputs["redrive"])
    assert main["deadLetterTargetArn"] == outputs["dlq"]["arn"]
    allow = json.loads(outputs["redrive_allow"])
    assert allow["redrivePermission"] == "byQueue"
    sources = [outputs["queue"]["arn"], *(q["arn"] for q in outputs["large_queue"])]
    sources += [outputs["feed_queues"][name]["arn"] for name in sorted(outputs["feed_queues"])]
    assert allow["sourceQueueArns"] == sources
    for name, queue in outputs["feed_queues"].items():
        assert json.loads(outputs["feed_redrives"][name]) == main, name
        assert outputs["feed_alarms"][name] == {"QueueName": queue["name"]}, name


def test_past_ten_dead_letter_sources_any_queue_of_the_account_may_use_the_dlq(
    module: Rendered,
) -> None:
    """SQS takes at most 10 source ARNs in a byQueue policy: with the large-file queue and
    nine named feeds (eleven sources) the policy allows every queue (same account and region)."""
    feed = dict(_tfvars("two-feeds.tfvars")["feeds"]["vendor-a"])
    variables = {
        **DEPLOYMENTS["all-features"],
        "feeds": {
            f"vendor-{index}": {**feed, "destination_prefix": f"v{index}"} for index in range(8)
        },
    }
    assert len(json.loads(module.outputs(variables)["redrive_allow"])["sourceQueueArns"]) == 10
    variables["feeds"]["vendor-8"] = {**feed, "destination_prefix": "v8"}
    assert json.loads(module.outputs(variables)["redrive_allow"]) == {
        "redrivePermission": "allowAll"
    }


def test_the_restatement_windows_reach_the_orchestrator_and_each_feeds_run(
    module: Rendered,
) -> None:
    """The deployment's restatement_window_days is the orchestrator's
    DLPIPE_RESTATEMENT_WINDOW_DAYS (0: off); a feed's own, from its parameter, is that feed's
    run's (0 and 31 too), and a feed that sets none runs with the deployment's."""
    feed = dict(_tfvars("two-feeds.tfvars")["feeds"]["vendor-a"])
    variables = {
        **REQUIRED,
        "restatement_window_days": 0,
        "feeds": {
            "vendor-a": {**feed, "destination_prefix": "va", "restatement_window_days": 31},
            "vendor-b": {**feed, "destination_prefix": "vb", "restatement_window_days": 0},
            "vendor-c": {**feed, "destination_prefix": "vc"},
        },
    }
    outputs = module.outputs(variables)
    assert outputs["orchestrator"]["DLPIPE_RESTATEMENT_WINDOW_DAYS"] == "0"
    settings = _lambda_settings(outputs["orchestrator"], _region(variables))
    assert settings.restatement_window_days == 0
    windows = {
        name: settings_for_feed(settings, feed).restatement_window_days
        for name, feed in _feeds(outputs, settings).items()
    }
    assert windows == {"vendor-a": 31, "vendor-b": 0, "vendor-c": 0}
    variables["restatement_window_days"] = 5
    settings = _lambda_settings(module.outputs(variables)["orchestrator"], _region(variables))
    assert settings.restatement_window_days == 5
    own = settings_for_feed(settings, _feeds(module.outputs(variables), settings)["vendor-c"])
    assert own.restatement_window_days == 5


def test_a_share_below_two_invocations_still_runs_the_mappings_minimum(module: Rendered) -> None:
    """downloader_max_concurrency 3: a 10 % share and the default 50 % both round down to 1
    invocation (the lane cap), and each mapping runs the 2 SQS takes at least."""
    feed = dict(_tfvars("two-feeds.tfvars")["feeds"]["vendor-a"])
    variables = {
        **REQUIRED,
        "downloader_max_concurrency": 3,
        "feeds": {"vendor-a": {**feed, "max_share_percent": 10}},
    }
    outputs = module.outputs(variables)
    assert lane_cap(3, 10, 2) == lane_cap(3, int(DEFAULTS["feed_max_share_percent"]), 2) == 1
    assert outputs["feed_caps"] == {"vendor-a": MAPPING_MIN_CONCURRENCY}
    assert outputs["cap"] == MAPPING_MIN_CONCURRENCY

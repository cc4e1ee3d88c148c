"""The feeds variable and the secret-resolving locals, evaluated by the terraform binary itself.

`terraform init` cannot fetch the AWS provider here, but a module with no resources needs none:
the `feeds` variable block and feeds.tf's locals are copied verbatim into one, the secrets
Terraform would create replaced by stand-in ARNs, and `terraform apply` prints the locals (or
fails on a validation). Skipped where no terraform binary is installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import hcl2
import pytest

from dlpipe.domain.feeds import DEFAULT_FEED, overlapping_feeds
from tests.infra.hcl import TERRAFORM_DIR

TERRAFORM = shutil.which("terraform")
FIXTURE = Path(__file__).parent / "fixtures" / "two-feeds.tfvars"
TOKEN_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:vendor-b/token-AbCdEf"

pytestmark = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH")

# Stand-ins for the secrets Terraform creates: same for_each filters, a recognisable "ARN".
STAND_INS = """
locals {
  created_token = { for name, feed in var.feeds : name => { arn = "created-token:${name}" } if feed.token_secret == null }
  created_key   = { for name, feed in var.feeds : name => { arn = "created-key:${name}" } if feed.private_key_secret == null }
  created_queue = { for name, feed in var.feeds : name => { url = "created-queue:${name}" } }
}
variable "name_prefix" {
  type    = string
  default = ""
}
output "tokens" { value = local.feed_token_secret_arns }
output "keys" { value = local.feed_private_key_secret_arns }
output "environment" { value = local.feeds_environment }
"""


def _block(text: str, header: str, opening: str = "{", closing: str = "}") -> str:
    """The block that starts with `header`, up to its matching bracket (strings skipped)."""
    start = text.index(header)
    depth, index, in_string = 0, text.index(opening, start), False
    while True:
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
        index += 1


# The deployment's polling and budgets, which a feed's polling overrides are checked against,
# and the downloaders' concurrency and share, which its share override is taken from.
POLLING_VARIABLES = (
    "poll_interval_seconds",
    "max_polls",
    "provider_outage_budget_seconds",
    "aws_outage_budget_seconds",
    "durable_setup_margin_seconds",
    "durable_execution_timeout_seconds",
    "downloader_max_concurrency",
    "feed_max_share_percent",
)


def _orchestrator_feed_precondition() -> str:
    """The orchestrator's precondition on the feeds' polling, on an output of its own."""
    function = _block(
        (TERRAFORM_DIR / "lambda_orchestrator.tf").read_text(),
        'resource "aws_lambda_function" "orchestrator"',
    )
    preconditions = []
    while "precondition {" in function:
        block = _block(function, "precondition {")
        preconditions.append(block)
        function = function.replace(block, "", 1)
    (feeds,) = [p for p in preconditions if "var.feeds" in p or "local.feeds_" in p]
    return f'output "precondition" {{\n  value = true\n  {feeds}\n}}'


def _module(directory: Path) -> Path:
    variables_tf = (TERRAFORM_DIR / "variables.tf").read_text()
    variable = "\n".join(
        _block(variables_tf, f'variable "{name}"') for name in ("feeds", *POLLING_VARIABLES)
    )
    feed_locals = _block((TERRAFORM_DIR / "feeds.tf").read_text(), "locals {")
    feed_locals = re.sub(
        r"aws_secretsmanager_secret\.feed_token\b", "local.created_token", feed_locals
    )
    feed_locals = re.sub(
        r"aws_secretsmanager_secret\.feed_private_key\b", "local.created_key", feed_locals
    )
    parts = [variable, feed_locals, STAND_INS, _per_feed(), _orchestrator_feed_precondition()]
    parts = [re.sub(r"aws_sqs_queue\.feed_downloads\b", "local.created_queue", p) for p in parts]
    (directory / "main.tf").write_text("\n".join(parts))
    subprocess.run(
        [TERRAFORM, "init", "-input=false"], cwd=directory, check=True, capture_output=True
    )
    return directory


def _per_feed() -> str:
    """Outputs holding, per feed, the parameter's value and the schedule's input, as written."""
    feeds_tf = (TERRAFORM_DIR / "feeds.tf").read_text()
    parameter = _block(feeds_tf, 'resource "aws_ssm_parameter" "feed"')
    value = _block(parameter, "value = jsonencode(", "(", ")").removeprefix("value = ")
    scheduler_tf = (TERRAFORM_DIR / "scheduler.tf").read_text()
    schedule = _block(scheduler_tf, 'resource "aws_scheduler_schedule" "feed"')
    heredoc = re.search(r"input = (<<-EOT\n.*?\n\s*EOT\n)", schedule, re.DOTALL)
    assert heredoc is not None
    for_each = "for name, feed in var.feeds : name =>"
    return (
        "\n".join(
            [
                f'output "parameters" {{\n  value = {{ {for_each} {value} }}\n}}',
                f'output "inputs" {{\n  value = {{ {for_each} {heredoc.group(1)} }}\n}}',
            ]
        )
        .replace("each.key", "name")
        .replace("each.value", "feed")
    )


def _apply(directory: Path, feeds: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    (directory / "feeds.tfvars.json").write_text(json.dumps({"feeds": feeds}))
    command = [TERRAFORM, "apply", "-auto-approve", "-input=false", "-no-color"]
    command += ["-var-file=feeds.tfvars.json"]
    return subprocess.run(command, cwd=directory, capture_output=True, text=True, check=False)


def _outputs(directory: Path) -> dict[str, Any]:
    shown = subprocess.run(
        [TERRAFORM, "output", "-json"], cwd=directory, capture_output=True, text=True, check=True
    )
    return {name: value["value"] for name, value in json.loads(shown.stdout).items()}


def _fixture() -> dict[str, Any]:
    with FIXTURE.open() as handle:
        raw = hcl2.load(handle)["feeds"]
    return json.loads(json.dumps(raw).replace('\\"', ""))  # python-hcl2 keeps the quotes


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _module(tmp_path_factory.mktemp("feeds"))


def test_the_fixture_resolves_created_referenced_and_shared_secrets(module: Path) -> None:
    """vendor-a's secrets are created; vendor-b names a token ARN and shares vendor-a's key."""
    applied = _apply(module, _fixture())
    assert applied.returncode == 0, applied.stdout + applied.stderr
    outputs = _outputs(module)
    assert outputs["tokens"] == {"vendor-a": "created-token:vendor-a", "vendor-b": TOKEN_ARN}
    assert outputs["keys"] == {
        "vendor-a": "created-key:vendor-a",
        "vendor-b": "created-key:vendor-a",
    }


def test_a_key_shared_with_a_feed_that_names_an_arn_resolves_to_that_arn(module: Path) -> None:
    """Sharing follows the named feed to its own key, created or referenced."""
    feeds = _fixture()
    feeds["vendor-a"]["private_key_secret"] = TOKEN_ARN.replace("token", "key")
    applied = _apply(module, feeds)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    key = TOKEN_ARN.replace("token", "key")
    assert _outputs(module)["keys"] == {"vendor-a": key, "vendor-b": key}


def _with(name: str, field: str, value: Any) -> dict[str, Any]:
    feeds = _fixture()
    feeds[name][field] = value
    return feeds


BAD = [
    pytest.param({"Vendor_C": _fixture()["vendor-a"]}, "feed name", id="name-case"),
    pytest.param({"default": _fixture()["vendor-a"]}, "feed name", id="name-default"),
    pytest.param({"a" * 32: _fixture()["vendor-a"]}, "feed name", id="name-length"),
    pytest.param(
        _with("vendor-a", "provider_base_url", "http://x.example.com"),
        "provider_base_url",
        id="http",
    ),
    pytest.param(
        _with("vendor-a", "provider_base_url", "https://x.example.com:99999/v1"),
        "provider_base_url",
        id="port-past-65535",
    ),
    pytest.param(
        _with("vendor-b", "provider_base_url", "https://x.example.com:0"),
        "provider_base_url",
        id="port-zero",
    ),
    pytest.param(_with("vendor-a", "schedule", "0 7 * * *"), "schedule", id="schedule"),
    pytest.param(_with("vendor-a", "time_zone", "Europe London"), "time_zone", id="time-zone"),
    pytest.param(
        _with("vendor-a", "destination_prefix", "/vendor-a"), "destination_prefix", id="prefix"
    ),
    pytest.param(
        _with("vendor-a", "destination_prefix", "_dlpipe/manifests"),
        "destination_prefix",
        id="prefix-reserved",
    ),
    pytest.param(_with("vendor-a", "deadline", "24:00"), "deadline", id="deadline"),
    pytest.param(_with("vendor-a", "max_polls", 0), "max_polls", id="max-polls"),
    pytest.param(
        _with("vendor-a", "poll_interval_seconds", 5), "poll_interval_seconds", id="interval"
    ),
    pytest.param(_with("vendor-a", "max_share_percent", 0), "max_share_percent", id="share-zero"),
    pytest.param(
        _with("vendor-a", "restatement_window_days", 32),
        "restatement_window_days",
        id="restatement-window",
    ),
    pytest.param(
        _with("vendor-a", "restatement_window_days", 1.5),
        "restatement_window_days",
        id="restatement-window-fraction",
    ),
    pytest.param(_with("vendor-a", "token_secret", "vendor-b"), "token_secret", id="token-by-name"),
    pytest.param(
        _with("vendor-b", "private_key_secret", "vendor-z"),
        "private_key_secret",
        id="share-unknown",
    ),
    pytest.param(
        _with("vendor-b", "private_key_secret", "vendor-b"), "private_key_secret", id="share-self"
    ),
    pytest.param(
        _with("vendor-a", "private_key_secret", "vendor-b"), "private_key_secret", id="share-chain"
    ),
]


@pytest.mark.parametrize(("feeds", "field"), BAD)
def test_a_bad_feed_fails_the_plan_naming_the_field(
    module: Path, feeds: dict[str, Any], field: str
) -> None:
    """Each planted mistake is refused by a validation whose message names the field."""
    applied = _apply(module, feeds)
    assert applied.returncode != 0
    assert "Invalid value for variable" in applied.stderr
    assert field in " ".join(applied.stderr.split()), applied.stderr


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("vendor-a/", "vendor-a/daily"),
        ("vendor-a", "vendor-a/"),
        ("vendor-a", "vendor-ab"),
        ("x/y", "x/yz/w"),
        ("accounts", "accounts/vendor-b/"),
        ("vendor-a", "Vendor-A/"),  # letter case never tells two prefixes apart
        ("Accounts/x", "accounts"),
        ("Vendor-A", "vendor-ab"),
    ],
)
def test_terraform_and_the_code_refuse_the_same_overlapping_prefixes(
    module: Path, first: str, second: str
) -> None:
    """Two feeds' prefixes, one inside the other or equal: refused by Terraform's validation
    exactly when the code's overlap rule (dlpipe/domain/feeds.py) refuses them."""
    feeds = _fixture()
    feeds["vendor-a"]["destination_prefix"] = first
    feeds["vendor-b"]["destination_prefix"] = second
    applied = _apply(module, feeds)
    loaded = {
        name: replace(DEFAULT_FEED, name=name, destination_prefix=prefix.rstrip("/"))
        for name, prefix in (("vendor-a", first), ("vendor-b", second))
    }
    code_refuses = overlapping_feeds(loaded) is not None
    assert (applied.returncode != 0) == code_refuses, applied.stderr
    if code_refuses:
        assert "destination_prefix" in " ".join(applied.stderr.split())


def test_each_feeds_parameter_is_json_of_its_settings_and_resolved_secrets(module: Path) -> None:
    """terraform renders each parameter as JSON: the feed's fields, unset ones null, ARNs resolved."""
    applied = _apply(module, _fixture())
    assert applied.returncode == 0, applied.stdout + applied.stderr
    parameters = {n: json.loads(v) for n, v in _outputs(module)["parameters"].items()}
    fixture = _fixture()
    for name, values in parameters.items():
        expected = fixture[name] | {"name": name}
        assert {k: v for k, v in values.items() if k in expected and "secret" not in k} == {
            k: v for k, v in expected.items() if "secret" not in k
        }
    assert parameters["vendor-b"]["token_secret"] == TOKEN_ARN
    assert parameters["vendor-b"]["private_key_secret"] == "created-key:vendor-a"
    assert parameters["vendor-b"]["deadline"] is None
    assert parameters["vendor-a"]["url_allowed_hosts"] == ["files.vendor-a.example.com"]
    assert {n: v["queue_url"] for n, v in parameters.items()} == {
        n: f"created-queue:{n}" for n in ("vendor-a", "vendor-b")
    }
    assert parameters["vendor-b"]["url_allowed_hosts"] == []


def test_each_feeds_schedule_input_keeps_the_scheduler_keyword(module: Path) -> None:
    """terraform renders the input with the feed's name and the keyword's < and > intact."""
    applied = _apply(module, _fixture())
    assert applied.returncode == 0, applied.stdout + applied.stderr
    inputs = _outputs(module)["inputs"]
    keyword = "<aws.scheduler.scheduled-time>"
    assert {n: json.loads(text) for n, text in inputs.items()} == {
        n: {"feed": n, "scheduled_time": keyword} for n in ("vendor-a", "vendor-b")
    }


def test_the_functions_get_the_parameter_path_only_when_there_are_feeds(module: Path) -> None:
    """DLPIPE_FEEDS_PARAMETER_PATH is "/<prefix>dlpipe/feeds" with feeds; with none, unset."""
    applied = _apply(module, _fixture())
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert _outputs(module)["environment"] == {"DLPIPE_FEEDS_PARAMETER_PATH": "/dlpipe/feeds"}
    applied = _apply(module, {})
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert _outputs(module)["environment"] == {}


def test_adding_a_feed_leaves_the_functions_environment_as_it_was(module: Path) -> None:
    """The path names no feed: a third feed changes no function's configuration."""
    feeds = _fixture()
    feeds["vendor-c"] = feeds["vendor-a"] | {"destination_prefix": "vendor-c/"}
    applied = _apply(module, feeds)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert _outputs(module)["environment"] == {"DLPIPE_FEEDS_PARAMETER_PATH": "/dlpipe/feeds"}


def test_a_feeds_polling_past_the_execution_timeout_fails_the_plan_naming_it(
    module: Path,
) -> None:
    """vendor-b polling every 600 s 12 times, plus the budgets and margin, overruns 14,400 s."""
    applied = _apply(module, _with("vendor-b", "poll_interval_seconds", 600))
    assert applied.returncode != 0
    message = " ".join(applied.stderr.split())
    assert "precondition failed" in message, message
    assert "feeds vendor-b:" in message, message
    assert "vendor-a" not in message, message


def test_a_feed_polling_longer_but_less_often_fits(module: Path) -> None:
    """Overrides that keep polls x interval within the default budget pass (the fixture)."""
    feeds = _with("vendor-a", "poll_interval_seconds", 60)
    feeds["vendor-a"]["max_polls"] = 60
    applied = _apply(module, feeds)
    assert applied.returncode == 0, applied.stdout + applied.stderr


def test_a_feeds_restatement_window_reaches_its_parameter_as_given(module: Path) -> None:
    """0 (off for that feed) and 31 pass the plan and are written as given; unset, null."""
    feeds = _with("vendor-a", "restatement_window_days", 0)
    feeds["vendor-b"]["restatement_window_days"] = 31
    applied = _apply(module, feeds)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    parameters = {n: json.loads(v) for n, v in _outputs(module)["parameters"].items()}
    assert {n: v["restatement_window_days"] for n, v in parameters.items()} == {
        "vendor-a": 0,
        "vendor-b": 31,
    }
    applied = _apply(module, _fixture())
    assert applied.returncode == 0, applied.stdout + applied.stderr
    parameters = {n: json.loads(v) for n, v in _outputs(module)["parameters"].items()}
    assert {v["restatement_window_days"] for v in parameters.values()} == {None}

"""One rule for a feed: every value terraform/variables.tf's feed validations accept, the code
accepts from the parameter Terraform writes, and every value they refuse, it refuses.

Terraform evaluates its own validation conditions, copied from the `feeds` variable, over a
table of cases (one feed each) in a single apply, and renders each case's SSM parameter
with feeds.tf's own expression; the code loads that parameter as the functions do
(feed_from_parameter, the local-development switch off). Only what Terraform cannot know is
allowed to differ, and is listed in TERRAFORM_CANNOT_KNOW. The default feed's
`provider_base_url` variable is held to a feed's URL rule the same way, in the same apply.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dlpipe.adapters.feed_parameters import feed_from_parameter
from dlpipe.config import check_provider_url
from dlpipe.domain.feeds import FeedError
from dlpipe.domain.url_settings import feed_url_problem
from tests.infra.hcl import TERRAFORM_DIR
from tests.infra.hcl_text import attribute, blocks, items
from tests.infra.terraform_render import TERRAFORM

pytestmark = pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary on PATH")

TOKEN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:vendor/token-AbCdEf"
KEY = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:vendor/key-AbCdEf"
BASE: dict[str, Any] = {
    "provider_base_url": "https://api.vendor.example.com/v1",
    "schedule": "cron(0 7 * * ? *)",
    "time_zone": "Europe/London",
    "destination_prefix": "vendor/",
    "token_secret": TOKEN,
    "private_key_secret": KEY,
}
FIELD_CASES: dict[str, list[Any]] = {
    "provider_base_url": [
        "https://api.example.com",
        "https://api.example.com/",
        "https://api.example.com:8443/v1/",
        "https://10.0.0.1/api",
        "http://api.example.com",
        "HTTPS://api.example.com",
        "https://user:pw@api.example.com",
        "https://api.example.com/?apikey=1",
        "https://api.example.com/#top",
        "https://[oops/",
        "https://",
        "https://api.example.com/a b",
        "ftp://api.example.com",
        "https://api.example.com\n",
        "https://api.example.com:1/",
        "https://api.example.com:65535/v1",
        "https://api.example.com:0",
        "https://api.example.com:65536/",
        "https://api.example.com:99999",
    ],
    "schedule": [
        "cron(0 7 * * ? *)",
        "cron(0/15 7-9 ? * MON-FRI *)",
        "cron(0 7 L * ? 2027)",
        "rate(1 day)",
        "rate(5 minutes)",
        "rate(0 days)",
        "rate(1 week)",
        "cron(0 7 * * ?)",
        "cron(0 7 * * ? * *)",
        "cron( 0 7 * * ? *)",
        "cron(0 7 * * ? \U0001f600)",
        "every day",
    ],
    "time_zone": [
        "UTC",
        "Europe/London",
        "America/Argentina/Buenos_Aires",
        "Etc/GMT+5",
        "EST5EDT",
        "Mars/Olympus",
        "Europe London",
        "../etc/passwd",
        "",
        "A" * 51,
    ],
    "destination_prefix": [
        "vendor-a",
        "vendor-a/",
        "vendor-b/daily/",
        "a_b/c-d/e",
        "a" * 200,
        "a" * 200 + "/",
        "a" * 201,
        "/vendor",
        "vendor//",
        "vendor/../x",
        ".",
        "vendor.b",
        "vendor b",
        "v\u00e9ndor",
        "vendor\n",
        "_dlpipe",
        "_dlpipe/manifests/",
        "_DLPipe/manifests",
        "_dlpipe_x/vendor",
    ],
    "url_allowed_hosts": [
        [],
        ["files.example.com"],
        ["*.s3.amazonaws.com"],
        ["host.example.com:443"],
        ["127.0.0.1:*"],
        ["*"],
        ["Files.example.com"],
        ["https://x.example.com/"],
        ["a*b.example.com"],
        ["-x.example.com"],
    ],
    "deadline": ["09:30", "23:59", "00:00", "24:00", "9:30", "09:60", None],
    "poll_interval_seconds": [10, 86400, 60, 9, 86401, 10.5, None],
    "max_polls": [1, 1000, 0, 1001, 2.5],
    "large_file_threshold_bytes": [0, 1, 10**12, 5497558138880, 5497558138881, -1, 0.5],
    "stall_floor_bytes": [0, 65536, 1099511627776, 1099511627777, -1, 1.5, None],
    "stall_window_seconds": [5, 3600, 30, 4, 3601, 7.5, None],
    "max_share_percent": [1, 100, 50, 0, 101, 2.5, -1, None],
    "restatement_window_days": [0, 31, 3, 32, -1, 1.5, None],
    "token_secret": [
        TOKEN,
        "arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:t-AbCdEf",
        "arn:aws:secretsmanager:eu-west-1:12345:secret:t-AbCdEf",
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:a b",
        "dlpipe/vendor/token",
        "file:/etc/passwd",
    ],
    "private_key_secret": [KEY, "dlpipe/vendor/key", "file:/k.pem"],
}
# terraform/variables.tf's `provider_base_url` (the default feed's; the Lambdas'
# DLPIPE_PROVIDER_URL): what reaches tfvars, the state and the functions' environment.
TOP_LEVEL_URL_CASES = [
    "https://provider.example.com",
    "https://provider.example.com:8443/v1/",
    "https://provider.example.com:65535",
    "https://user:pw@provider.example.com",
    "https://token@provider.example.com/v1",
    "https://provider.example.com/?apikey=1",
    "https://provider.example.com/#top",
    "https://provider.example.com:0",
    "https://provider.example.com:65536",
    "https://provider.example.com:99999/v1",
    "http://provider.example.com",
    "https://provider.example.com/a b",
]
NAME_CASES = ["vendor", "a", "a" * 31, "a" * 32, "Vendor", "vendor_a", "vendor.a", "-x", "default"]
# Terraform has no time zone database: a well-formed unknown zone passes its validation, and
# EventBridge Scheduler refuses the schedule at apply, before any parameter is read.
TERRAFORM_CANNOT_KNOW = {("time_zone", '"Mars/Olympus"')}


def _cases() -> dict[str, tuple[str, str, Any, dict[str, Any]]]:
    """case key -> (field, feed name, value, the feeds map)."""
    cases: dict[str, tuple[str, str, Any, dict[str, Any]]] = {}
    for field, values in FIELD_CASES.items():
        for index, value in enumerate(values):
            feed = {**BASE, field: value}
            cases[f"{field}-{index}"] = (field, "vendor", value, {"vendor": feed})
    for index, name in enumerate(NAME_CASES):
        cases[f"name-{index}"] = ("name", name, name, {name: dict(BASE)})
    return cases


CASES = _cases()


def _variable(name: str) -> str:
    (block,) = [
        item
        for item in items((TERRAFORM_DIR / "variables.tf").read_text(encoding="utf-8"))
        if item.kind == "variable" and item.labels == (name,)
    ]
    return block.text


def _conditions(variable: str, name: str, over: str) -> list[str]:
    """The variable's validation conditions, each on `over` in place of `var.<name>`."""
    conditions = [attribute(v.text, "condition") for v in blocks(variable, "validation")]
    assert conditions
    assert all(conditions)
    return [re.sub(rf"\bvar\.{name}\b", over, str(c)) for c in conditions]


def _module() -> str:
    """Terraform's type and conditions of `feeds` over every case; feeds.tf's parameter; the
    conditions of `provider_base_url` over every top-level URL case."""
    variable = _variable("feeds")
    feed_type = attribute(variable, "type")
    assert feed_type
    over_case = _conditions(variable, "feeds", "feeds")
    over_url = ",\n".join(_conditions(_variable("provider_base_url"), "provider_base_url", "url"))
    (parameter,) = [
        item
        for item in items((TERRAFORM_DIR / "feeds.tf").read_text(encoding="utf-8"))
        if item.labels == ("aws_ssm_parameter", "feed")
    ]
    value = str(attribute(parameter.text, "value"))
    # The table names secrets by ARN only: Terraform's resolution of a shared or created
    # secret (tests/infra/test_deployment_contract.py) leaves an ARN as it is.
    value = value.replace("local.feed_token_secret_arns[each.key]", "each.value.token_secret")
    value = value.replace(
        "local.feed_private_key_secret_arns[each.key]", "each.value.private_key_secret"
    )
    # The feed's own queue (sqs.tf), as AWS names its URL: the feed's name in its last segment.
    queue = '"https://sqs.eu-west-1.amazonaws.com/123456789012/dlpipe-downloads-feed-${each.key}"'
    value = value.replace("aws_sqs_queue.feed_downloads[each.key].url", queue)
    assert "aws_" not in value, value  # every resource the parameter names has its stand-in
    value = value.replace("each.key", "name").replace("each.value", "feed")
    verdicts = ",\n".join(over_case)
    return (
        f'variable "cases" {{\n  type = map({feed_type})\n}}\n'
        f'output "verdicts" {{\n  value = {{ for case_name, feeds in var.cases : case_name => [\n'
        f"{verdicts}\n] }}\n}}\n"
        f'output "parameters" {{\n  value = {{ for case_name, feeds in var.cases : case_name =>'
        f" {{ for name, feed in feeds : name => {value} }} }}\n}}\n"
        f'variable "urls" {{\n  type = map(string)\n}}\n'
        f'output "url_verdicts" {{\n  value = {{ for case_name, url in var.urls : case_name => [\n'
        f"{over_url}\n] }}\n}}\n"
    )


@pytest.fixture(scope="module")
def terraform(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory: Path = tmp_path_factory.mktemp("feed-rule")
    (directory / "main.tf").write_text(_module(), encoding="utf-8")
    cases = {key: feeds for key, (_, _, _, feeds) in CASES.items()}
    urls = {str(index): url for index, url in enumerate(TOP_LEVEL_URL_CASES)}
    variables = json.dumps({"cases": cases, "urls": urls})
    (directory / "cases.tfvars.json").write_text(variables, encoding="utf-8")
    run = [str(TERRAFORM), "-chdir=" + str(directory)]
    subprocess.run([*run, "init", "-input=false"], check=True, capture_output=True)
    applied = subprocess.run(
        [
            *run,
            "apply",
            "-auto-approve",
            "-input=false",
            "-no-color",
            "-var-file=cases.tfvars.json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    shown = subprocess.run(
        [*run, "output", "-json"], capture_output=True, text=True, check=True
    ).stdout
    return {name: value["value"] for name, value in json.loads(shown).items()}


@pytest.fixture(autouse=True)
def no_resolution_nor_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The URLs in the cases (10.0.0.1, example.com) are only judged, as text: loading a feed
    never resolves a name nor connects (a load that tried would fail here, reaching nothing)."""

    def refuse(*args: object, **_: object) -> None:
        raise AssertionError(f"a feed's load reached for the network: {args}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def _code_refusal(name: str, parameter: str) -> str | None:
    """The code's one-line refusal of the parameter, or None when it loads."""
    try:
        feed_from_parameter(name, f"/dlpipe/feeds/{name}", parameter)
    except FeedError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case", CASES)
def test_terraform_and_the_code_accept_the_same_feeds(terraform: dict[str, Any], case: str) -> None:
    """A case Terraform's validations accept loads from its parameter; one they refuse does not."""
    field, name, value, _ = CASES[case]
    terraform_accepts = all(terraform["verdicts"][case])
    refusal = _code_refusal(name, terraform["parameters"][case][name])
    code_accepts = refusal is None
    assert refusal is None or "\n" not in refusal
    if (field, json.dumps(value)) in TERRAFORM_CANNOT_KNOW:
        assert terraform_accepts
        assert not code_accepts
        return
    assert terraform_accepts == code_accepts, (field, value, terraform["verdicts"][case])


def test_the_table_has_both_verdicts_for_every_field(terraform: dict[str, Any]) -> None:
    """Each field's cases include values both sides accept and values both refuse."""
    for field in [*FIELD_CASES, "name"]:
        verdicts = {all(terraform["verdicts"][k]) for k, c in CASES.items() if c[0] == field}
        assert verdicts == {True, False}, field


def test_the_parameter_keeps_a_trailing_slash_the_code_drops(terraform: dict[str, Any]) -> None:
    """Terraform writes "vendor-b/daily/" as given; the feed's prefix is "vendor-b/daily"."""
    (key,) = [k for k, c in CASES.items() if c[:3:2] == ("destination_prefix", "vendor-b/daily/")]
    parameter = terraform["parameters"][key]["vendor"]
    assert json.loads(parameter)["destination_prefix"] == "vendor-b/daily/"
    feed = feed_from_parameter("vendor", "/dlpipe/feeds/vendor", parameter)
    assert feed.destination_prefix == "vendor-b/daily"


@pytest.mark.parametrize("index", range(len(TOP_LEVEL_URL_CASES)))
def test_the_default_feeds_url_variable_holds_to_a_feeds_url_rule(
    terraform: dict[str, Any], index: int
) -> None:
    """`provider_base_url` passes Terraform's validations exactly when the code would take it
    as a feed's URL; whatever passes, the functions' load (check_provider_url) takes too, so
    a credential, a query or a port out of range never reaches the state or a function."""
    url = TOP_LEVEL_URL_CASES[index]
    terraform_accepts = all(terraform["url_verdicts"][str(index)])
    assert terraform_accepts == (feed_url_problem(url, local=False) is None), url
    if terraform_accepts:
        assert check_provider_url(url, allow_http=False) == url


def test_the_top_level_url_cases_have_both_verdicts(terraform: dict[str, Any]) -> None:
    """The top-level cases include URLs Terraform accepts and URLs it refuses."""
    assert {all(v) for v in terraform["url_verdicts"].values()} == {True, False}

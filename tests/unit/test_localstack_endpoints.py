"""DLPIPE_LOCALSTACK=1: every service's endpoint from localstack_client's service map, with
AWS_ENDPOINT_URL_<SERVICE> and AWS_ENDPOINT_URL keeping precedence. No Docker: only URLs."""

from __future__ import annotations

import os

import pytest

from dlpipe.config import ConfigError, Settings
from dlpipe.local.localstack import ENV_LOCALSTACK, use_localstack

SERVICES = ("dynamodb", "sqs", "s3", "secretsmanager")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A process environment without endpoint or LocalStack variables (localstack_client
    reads os.environ itself)."""
    for name in ("AWS_ENDPOINT_URL", "LOCALSTACK_HOST", "USE_SSL", "USE_LEGACY_PORTS"):
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in os.environ if n.startswith("AWS_ENDPOINT_URL_")]:
        monkeypatch.delenv(name)
    return {}


def test_the_switch_resolves_every_service_at_localstack_host(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """LOCALSTACK_HOST names the edge: each service dlpipe calls resolves there."""
    monkeypatch.setenv("LOCALSTACK_HOST", "127.0.0.1:4566")
    env[ENV_LOCALSTACK] = "1"
    use_localstack(env)
    settings = Settings.from_env(env)
    assert {s: settings.endpoint_for(s) for s in SERVICES} == dict.fromkeys(
        SERVICES, "http://127.0.0.1:4566"
    )


def test_a_service_override_keeps_precedence(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """AWS_ENDPOINT_URL_DYNAMODB stays; the other services go to LocalStack."""
    monkeypatch.setenv("LOCALSTACK_HOST", "127.0.0.1:4566")
    env |= {ENV_LOCALSTACK: "true", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}
    use_localstack(env)
    settings = Settings.from_env(env)
    assert settings.endpoint_for("dynamodb") == "http://127.0.0.1:8000"
    assert settings.endpoint_for("sqs") == "http://127.0.0.1:4566"


def test_aws_endpoint_url_keeps_precedence_and_no_switch_changes_nothing(
    env: dict[str, str],
) -> None:
    """AWS_ENDPOINT_URL names every service already; without the switch nothing is added."""
    env |= {ENV_LOCALSTACK: "1", "AWS_ENDPOINT_URL": "http://127.0.0.1:5000"}
    use_localstack(env)
    assert env == {ENV_LOCALSTACK: "1", "AWS_ENDPOINT_URL": "http://127.0.0.1:5000"}
    off = {ENV_LOCALSTACK: "0"}
    use_localstack(off)
    assert off == {ENV_LOCALSTACK: "0"}


def test_the_default_edge_and_bad_values_are_one_line_errors(env: dict[str, str]) -> None:
    """Without LOCALSTACK_HOST: localhost:4566. A bad switch or host is a ConfigError."""
    env[ENV_LOCALSTACK] = "1"
    use_localstack(env)
    assert env["AWS_ENDPOINT_URL_S3"] == "http://localhost:4566"
    with pytest.raises(ConfigError, match="DLPIPE_LOCALSTACK must be"):
        use_localstack({ENV_LOCALSTACK: "maybe"})
    with pytest.raises(ConfigError, match="LOCALSTACK_HOST"):
        use_localstack({ENV_LOCALSTACK: "1", "LOCALSTACK_HOST": "127.0.0.1:edge"})

"""Expected failures of the ops commands: one line on stderr, a non-zero exit, no traceback."""

from __future__ import annotations

import socket
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.config import Config

import dlpipe.adapters.aws
from dlpipe.adapters.aws import AwsClients
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_missing_table_is_one_line_naming_it(world: World, dlpipe_cli: CliRunner) -> None:
    """A jobs table that was never provisioned: one line naming it, exit 1."""
    settings = replace(world.ops.settings, jobs_table="ops-test-no-such-table")
    run = dlpipe_cli("jobs", "show", f"e-{world.day}", obj=world.rewired(settings))
    assert (run.code, _one_line(run.err)) == (1, True)
    assert "table 'ops-test-no-such-table' does not exist" in run.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("dlq", "show"), "cannot reach AWS at"),  # SQS: botocore's error, rendered by main
        (("jobs", "show", "e-2026-01-01"), "DynamoDB unreachable"),  # records' translation
    ],
)
def test_an_emulator_that_is_not_running_is_one_line(
    world: World,
    dlpipe_cli: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    message: str,
) -> None:
    """Nothing listening at AWS_ENDPOINT_URL: one line saying so, exit 1."""
    # One attempt: the retries with backoff that production wants would only slow the test.
    monkeypatch.setattr(
        dlpipe.adapters.aws, "_BOTO_CONFIG", Config(retries={"total_max_attempts": 1})
    )
    closed = f"http://127.0.0.1:{_closed_port()}"
    settings = replace(
        world.ops.settings, endpoint_url=closed, service_endpoint_urls={"dynamodb": closed}
    )
    ops = world.rewired(settings, AwsClients(settings))
    run = dlpipe_cli(*args, obj=ops)
    assert (run.code, _one_line(run.err)) == (1, True)
    assert message in run.err


def test_missing_credentials_are_one_line(
    world: World, dlpipe_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """No AWS credentials anywhere: the environment-built command says so in one line, exit 1."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_CONFIG_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("DLPIPE_DLQ_URL", world.ops.settings.dlq_url or "")
    monkeypatch.setattr("dlpipe.cli.ops.context.configure_logging", lambda *_a, **_k: None)
    run = dlpipe_cli("dlq", "show", from_env=True)
    assert (run.code, _one_line(run.err)) == (1, True)
    assert "no AWS credentials found" in run.err


def test_a_malformed_duration_is_a_usage_error(dlpipe_cli: CliRunner) -> None:
    """--older-than 5minutes is refused with exit 2 and the accepted forms."""
    run = dlpipe_cli("jobs", "stuck", "--older-than", "5minutes")
    assert run.code == 2
    assert "not a duration like 90s, 30m, 2h or 1d" in run.err


def _no_url(err: str) -> bool:
    return "http://" not in err and "https://" not in err and "Signature" not in err


@pytest.mark.parametrize(
    ("args", "operation"),
    [(("status", "--date", "{day}"), "GetQueueAttributes"), (("dlq", "show"), "ReceiveMessage")],
)
def test_a_dlq_that_does_not_exist_is_one_line_naming_the_call(
    world: World, dlpipe_cli: CliRunner, args: tuple[str, ...], operation: str
) -> None:
    """DLPIPE_DLQ_URL naming a queue the emulator does not have: one line naming SQS, the
    operation, the queue and AWS's error code (no URL), exit 1."""
    url = world.ops.settings.dlq_url.rsplit("/", 1)[0] + "/ops-test-no-such-dlq"  # type: ignore[union-attr]
    ops = replace(world.ops, settings=replace(world.ops.settings, dlq_url=url))
    run = dlpipe_cli(*(a.format(day=world.day) for a in args), obj=ops)
    assert (run.code, _one_line(run.err), _no_url(run.err)) == (1, True, True), run.err
    assert f"SQS {operation} on 'ops-test-no-such-dlq'" in run.err
    assert "NonExistentQueue" in run.err or "QueueDoesNotExist" in run.err


def _deny(service: str, code: str) -> Any:
    """A before-call hook answering every call of `service` the way AWS refuses an IAM gap."""

    def answer(model: Any, **_: Any) -> tuple[Any, dict[str, Any]]:
        message = f"User: arn:aws:iam::123456789012:user/ops is not authorized to perform: {service}:{model.name}"
        error = {"Code": code, "Message": message}
        return SimpleNamespace(status_code=400), {"Error": error, "ResponseMetadata": {}}

    return answer


@pytest.mark.parametrize(
    ("args", "service", "code", "expected"),
    [
        (("jobs", "show", "e-{day}"), "dynamodb", "AccessDeniedException", "DynamoDB GetItem"),
        (("status", "--date", "{day}"), "dynamodb", "AccessDeniedException", "DynamoDB Query"),
        (("status", "--date", "{day}"), "sqs", "AccessDenied", "SQS GetQueueAttributes"),
        (("dlq", "show"), "sqs", "AccessDenied", "SQS ReceiveMessage"),
    ],
)
def test_access_denied_is_one_line_naming_the_service_the_call_and_the_code(
    world: World,
    dlpipe_cli: CliRunner,
    args: tuple[str, ...],
    service: str,
    code: str,
    expected: str,
) -> None:
    """AWS refusing a call (an IAM gap): one line naming the service, the operation and
    AWS's error code, exit 1, never a traceback."""
    clients = AwsClients(world.ops.settings)
    client = clients.dynamodb if service == "dynamodb" else clients.sqs
    client.meta.events.register(
        f"before-call.{client.meta.service_model.service_id.hyphenize()}.*", _deny(service, code)
    )
    run = dlpipe_cli(*(a.format(day=world.day) for a in args), obj=world.rewired(clients=clients))
    assert (run.code, _one_line(run.err), _no_url(run.err)) == (1, True, True), run.err
    assert expected in run.err
    assert code in run.err

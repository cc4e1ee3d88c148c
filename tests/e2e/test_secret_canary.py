"""No secret leaves its place: a canary planted in a failing day's secrets appears in no log,
output, table item, hand-off event, manifest, web page or CLI output (dlpipe/domain/redaction.py,
the token's check in adapters/provider_token.py)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import click
import pytest
import requests
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.retries import RetryDecision
from click.testing import CliRunner

from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.cli.ops.commands import COMMANDS
from dlpipe.domain.model import make_file_id
from dlpipe.local.day import DayReport
from dlpipe.local.events import received_events
from dlpipe.local.feed_days import local_feeds, run_feed_days
from dlpipe.local.stack import LocalStack
from dlpipe.local.stack_feeds import read_template
from dlpipe.local.stub.faults import Faults
from dlpipe.log import configure_logging
from dlpipe.services.orchestrator import durable_steps
from dlpipe.ui.app import create_app
from dlpipe.ui.server import BackgroundServer
from tests.e2e.test_local_day import stack
from tests.e2e.test_local_feed_days import FILES, QUICK
from tests.support import unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
__all__ = ["stack"]  # the fixture, shared as is


@pytest.fixture
def quick_step_retries(monkeypatch: pytest.MonkeyPatch) -> list[RetryDecision]:
    """The step retries' own decisions (which errors, how many attempts), each retry 1 s after
    the failed attempt instead of the 30 s to 2 min of jittered backoff (real seconds: the
    local days run on the wall clock). Returns the decisions taken, in order."""
    production: Callable[[Exception, int], RetryDecision] = durable_steps._TRANSIENT_RETRY
    decisions: list[RetryDecision] = []

    def sooner(error: Exception, attempts_made: int) -> RetryDecision:
        decision = production(error, attempts_made)
        if decision.should_retry:
            decision = RetryDecision.retry(Duration.from_seconds(1))
        decisions.append(decision)
        return decision

    monkeypatch.setattr(durable_steps, "_TRANSIENT_RETRY", sooner)
    return decisions


def _items_text(stack: LocalStack, table: str, day: str) -> str:
    """Every item of `table` that names `day`, as text (a test may scan; production never does)."""
    found, start = [], None
    while True:
        page = stack.clients.dynamodb.scan(
            TableName=table, **({"ExclusiveStartKey": start} if start else {})
        )
        # A job's PresignedURL is that URL's place (the worker downloads from it), as the
        # contract's table holds it: everything else of the item is searched.
        found += [
            {name: value for name, value in item.items() if name != "PresignedURL"}
            for item in page["Items"]
            if day in json.dumps(item)
        ]
        start = page.get("LastEvaluatedKey")
        if not start:
            return json.dumps(found)


def _handoff_objects_text(stack: LocalStack, day: str) -> str:
    """Every object dlpipe wrote under _dlpipe/ for `day`: manifests, file lists, pointers."""
    bucket = stack.settings.require("destination_bucket")
    texts = []
    for page in stack.clients.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            if "_dlpipe/" in obj["Key"] and day in obj["Key"]:
                body = stack.clients.s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
                texts.append(body.decode("utf-8", "replace"))
    return "\n".join(texts)


def _pages(stack: LocalStack, day: str, reports: dict[str, DayReport], file_ids: list[str]) -> str:
    """The web view's grid, day pages (each batch's, its error files) and file pages, fetched
    over HTTP from `dlpipe ui`'s application on 127.0.0.1."""
    app = create_app(build_ops_context(stack.settings, stack.clients))
    paths = [f"/?end={day}&days=1", f"/day/{day}"]
    paths += [f"/day/{day}?batch={r.batch_id}&status=error" for r in reports.values() if r.batch_id]
    paths += [f"/file/{file_id}" for file_id in file_ids]
    with BackgroundServer(app) as server:
        answers = [requests.get(server.url.rstrip("/") + path, timeout=30) for path in paths]
    assert [a.status_code for a in answers] == [200] * len(paths), paths
    return "".join(answer.text for answer in answers)


def _cli(stack: LocalStack, day: str, reports: dict[str, DayReport], file_ids: list[str]) -> str:
    """What the operator's commands print of the day: status, each batch, each file."""
    ops = build_ops_context(stack.settings, stack.clients)
    root = click.Group("dlpipe", commands=list(COMMANDS))
    commands = [["status", "--date", day], ["jobs", "list", "--date", day]]
    commands += [["batch", "show", r.batch_id, "--json"] for r in reports.values() if r.batch_id]
    commands += [["batch", "show", r.batch_id] for r in reports.values() if r.batch_id]
    commands += [["jobs", "show", file_id] for file_id in file_ids]
    runner = CliRunner()
    return "".join(
        runner.invoke(root, args, obj=ops, env={"COLUMNS": "250"}).output for args in commands
    )


def test_a_canary_in_every_secret_of_a_failing_day_appears_nowhere(
    stack: LocalStack,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    quick_step_retries: list[RetryDecision],
) -> None:
    """Three feeds' failing day, each secret carrying the canary:
    - vendor-b's token is a pasted two-line token (the HTTP library would quote the whole
      header in its error);
    - vendor-c's token is a good one, and its provider echoes it back as a file's sha256
      (the listing's refusal would quote the value);
    - the default feed's provider lists a file whose URL carries the canary as its presigned
      signature and API key (refused: not an allowed URL);
    - every feed's private key (its PEM's lines).
    None of them is in the day's logs and output, an item of either table, a hand-off event or
    object, a page of the web view, or the operator commands' output."""
    canary = f"CANARY{uuid.uuid4().hex[:16]}"
    day = unique_day()
    tables = {
        **read_template(),
        "vendor-c": {"schedule": "rate(1 day)", "time_zone": "UTC", "destination_prefix": "vc"},
    }
    local = local_feeds(stack, tables, tmp_path / "feeds", FILES)
    vendor_b = replace(local.keys["vendor-b"], token=f"tok-{canary}-one\n{canary}-two")
    vendor_c = replace(local.keys["vendor-c"], token=f"tok-{canary}-c")
    signed = f"https://127.0.0.1:9/x?X-Amz-Signature={canary}&apikey={canary}"
    local = replace(
        local,
        keys={**local.keys, "vendor-b": vendor_b, "vendor-c": vendor_c},
        faults={
            "default": Faults(malformed_fields={"positions": {"url": signed}}),
            "vendor-c": Faults(malformed_fields={"trades": {"sha256": vendor_c.token}}),
        },
    )
    key_lines = [
        line
        for name in ("vendor-b", "vendor-c")
        for line in local.keys[name].private_key_path.read_text().splitlines()[1:-1]
    ]
    secrets = [canary, stack.provider_token, *key_lines]
    events_queue = stack.provisioned.downstream_queue_url
    assert events_queue
    received_events(stack.clients, events_queue, rounds=1)  # earlier tests' events
    log_file = tmp_path / "day.log"  # every log line of the day, debug too (put back after)
    with log_file.open("w", encoding="utf-8") as log_stream:
        configure_logging("DEBUG", stream=log_stream)
        reports = {r.feed: r for r in run_feed_days(stack, local, replace(QUICK, date=day))}
    positions, trades = make_file_id("positions", day), make_file_id("trades", day, "vendor-c")
    places: dict[str, str] = {}
    out, err = capfd.readouterr()
    places["the run's logs and output"] = log_file.read_text() + out + err + caplog.text
    places["the run's reports"] = repr(reports)
    places["jobs table"] = _items_text(stack, stack.settings.jobs_table, day)
    places["batches table"] = _items_text(stack, stack.settings.batches_table, day)
    # The emulator's EventBridge delivered each event to the queue within its put (before the
    # day's run returned): one receive that finds the queue empty has taken them all.
    places["events"] = json.dumps(received_events(stack.clients, events_queue, rounds=1))
    places["hand-off objects"] = _handoff_objects_text(stack, day)
    places["web view"] = _pages(stack, day, reports, [positions, trades])
    places["operator commands"] = _cli(stack, day, reports, [positions, trades])
    out, err = capfd.readouterr()
    places["logs and output after"] = out + err + caplog.text

    leaked = {
        where: sorted({secret[:12] for secret in secrets if secret in text})
        for where, text in places.items()
    }
    assert {where: found for where, found in leaked.items() if found} == {}
    # The failing day is in these places (so the search above had it to look through):
    assert (reports["default"].status, reports["vendor-c"].status) == ("failed", "failed")
    assert (reports["vendor-b"].status, reports["vendor-b"].batch_id) == ("run failed", "")
    assert "not one line of visible ASCII" in reports["vendor-b"].result["outcome"]["cause"]
    # vendor-b's refused token failed its step on every attempt the retries allow (each one
    # logged and checkpointed what it raised): the search above had them all.
    assert [d.should_retry for d in quick_step_retries].count(True) >= 2, quick_step_retries
    for where in ("jobs table", "web view", "operator commands"):
        assert positions in places[where], where
        assert trades in places[where], where
    assert "rejected_listing" in places["web view"]
    assert "sha256: expected 64 hex digits" in places["jobs table"]  # the provider's echo
    assert "Day Failed" in places["events"]
    assert places["hand-off objects"]
    assert places["the run's logs and output"].count('"event": "batch.failed"') == 2


def _echo_windows(secret: str) -> set[str]:
    """Every 12-character run of the ways an echo of `secret` is written, lower-cased: whole,
    in any letter case, base64 (standard and URL-safe, padded or not), hex."""
    raw = secret.encode()
    forms = {secret, raw.hex()}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms |= {encode(raw).decode(), encode(raw).decode().rstrip("=")}
    return {form[i : i + 12].lower() for form in forms for i in range(len(form) - 11)}


def test_a_token_echoed_back_in_any_form_appears_nowhere(
    stack: LocalStack,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Providers that echo our own 29-character token back, each failing its day:
    - vendor-c's listing gives the token as its `date` (the whole listing is refused: the
      durable step fails, its traceback is logged, the outcome's cause quotes the refusal);
    - vendor-b lists files whose fields echo its token: cut to 26 characters after ten digits
      (a sha256), upper-cased (a cipher), lower-cased as a URL's host (refused at download),
      base64-encoded (a cipher), and an entity named as the token.
    No 12-character run of either token, in any case, base64 or hex, is in the day's logs
    (dlpipe's and the durable SDK's), its reports, either table, the events, the hand-off
    objects, the web view or the operator commands' output."""
    token_b = f"CANARY{uuid.uuid4().hex[:23]}"
    token_c = f"CANARY{uuid.uuid4().hex[:23]}"
    assert len(token_b) == len(token_c) == 29
    day = unique_day()
    tables = {
        **read_template(),
        "vendor-c": {"schedule": "rate(1 day)", "time_zone": "UTC", "destination_prefix": "vc"},
    }
    local = local_feeds(stack, tables, tmp_path / "feeds", FILES)
    echoes: dict[str, dict[str, object]] = {
        "positions": {"sha256": f"0123456789{token_b}"},
        "trades": {"cipher": token_b.upper()},
        "accounts": {"url": f"https://{token_b.lower()}.example/f.bin"},
    }
    local = replace(
        local,
        keys={
            **local.keys,
            "vendor-b": replace(local.keys["vendor-b"], token=token_b),
            "vendor-c": replace(local.keys["vendor-c"], token=token_c),
        },
        faults={
            "vendor-b": Faults(
                malformed_fields=echoes,
                extra_listing_entries=(
                    {"entity": token_b},
                    {"entity": "echo-b64", "cipher": base64.b64encode(token_b.encode()).decode()},
                ),
            ),
            "vendor-c": Faults(listing_date=token_c),
        },
    )
    events_queue = stack.provisioned.downstream_queue_url
    assert events_queue
    received_events(stack.clients, events_queue, rounds=1)  # earlier tests' events
    log_file = tmp_path / "day.log"
    with log_file.open("w", encoding="utf-8") as log_stream:
        configure_logging("DEBUG", stream=log_stream)
        reports = {r.feed: r for r in run_feed_days(stack, local, replace(QUICK, date=day))}
    file_ids = [make_file_id(e, day, "vendor-b") for e in ("positions", "trades", "accounts")]
    places: dict[str, str] = {}
    out, err = capfd.readouterr()
    places["the run's logs and output"] = log_file.read_text() + out + err + caplog.text
    places["the run's reports"] = repr(reports) + json.dumps([r.result for r in reports.values()])
    places["jobs table"] = _items_text(stack, stack.settings.jobs_table, day)
    places["batches table"] = _items_text(stack, stack.settings.batches_table, day)
    # The emulator's EventBridge delivered each event to the queue within its put (before the
    # day's run returned): one receive that finds the queue empty has taken them all.
    places["events"] = json.dumps(received_events(stack.clients, events_queue, rounds=1))
    places["hand-off objects"] = _handoff_objects_text(stack, day)
    places["web view"] = _pages(stack, day, reports, file_ids)
    places["operator commands"] = _cli(stack, day, reports, file_ids)
    out, err = capfd.readouterr()
    places["logs and output after"] = out + err + caplog.text

    windows = {name: _echo_windows(token) for name, token in (("b", token_b), ("c", token_c))}
    leaked = {
        where: sorted({f"{name}:{w}" for name, runs in windows.items() for w in runs if w in text})
        for where, text in ((where, text.lower()) for where, text in places.items())
    }
    assert {where: found[:3] for where, found in leaked.items() if found} == {}
    # The failing days are in these places (so the search above had them to look through):
    assert (reports["vendor-b"].status, reports["vendor-c"].status) == ("failed", "failed")
    assert "listing.date: expected" in reports["vendor-c"].result["outcome"]["cause"]
    assert (
        "Execution failed" in places["the run's logs and output"]
        or "Traceback" in (places["the run's logs and output"])
    )
    for where in ("jobs table", "web view", "operator commands"):
        for file_id in file_ids:
            assert file_id in places[where], (where, file_id)
    assert "sha256: expected 64 hex digits, got '0123456789***" in places["jobs table"]
    assert "carries a secret of ours" in places["batches table"]
    assert "Day Failed" in places["events"]

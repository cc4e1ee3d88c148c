"""Every repair the tools suggest closes a named feed's day: from a failed day (files `failed`:
their URL stays expired), an error day (`error`: the worker holds another key) and a timed-out
day (no worker), the cause is fixed, then every command that `dlpipe status`, the day page and
each unfinished file's page print is run as printed (the console script, a `dlpipe worker`
doing the files). Each command that succeeds must leave the day completed, with a new manifest
that latest.json names and `Day Completed` received downstream; one that refuses says so in one
`dlpipe:` line naming the command that repairs the day."""

from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

import dlpipe
from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.config import (
    ENV_ALLOW_HTTP_URLS,
    ENV_BATCHES_TABLE,
    ENV_FEEDS_FILE,
    ENV_MAX_POLLS,
    ENV_POLL_INTERVAL_SECONDS,
    ENV_RESEND_AFTER_SECONDS,
    Settings,
)
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.model import BatchStatus
from dlpipe.local.events import received_events
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.ui.app import answer_only_at, create_app
from tests.e2e.test_worker_kit import WorkerProcess, queues, worker_env
from tests.provider_support import TEST_PROVIDER_TOKEN, StubFactory
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, stub_factory
DLPIPE = Path(sys.executable).with_name("dlpipe")
# The commands run this tree's code, whatever the caller's PYTHONPATH is relative to.
ROOT = str(Path(dlpipe.__file__).resolve().parents[1])
FEED = "vendor-r"
ENTITIES = ("accounts", "positions", "trades")
# A lease of 10 s and a re-send after 5 s make the recovery bound 11 s + one lease: 25 polls of
# 1 s hold it, and a day without a worker times out in 25 s.
POLLS = "25"
COMMAND = re.compile(r"dlpipe (?:run|backfill|jobs|dlq|batch)\b[^\n<]*")


def _dlpipe(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DLPIPE), *args],
        env={**env, "COLUMNS": "400"},  # a suggested command is never wrapped
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _feeds_file(tmp_path: Path, stub: StubProvider, key_file: Path) -> Path:
    token = tmp_path / "token"
    token.write_text(TEST_PROVIDER_TOKEN)
    path = tmp_path / "feeds.toml"
    path.write_text(
        f"""[feeds.{FEED}]
provider_base_url = "{stub.base_url}"
token_secret = "file:{token}"
private_key_secret = "file:{key_file}"
schedule = "cron(0 7 * * ? *)"
time_zone = "UTC"
destination_prefix = "{FEED}"
url_allowed_hosts = ["127.0.0.1:*"]
"""
    )
    return path


def _commands(text: str) -> list[str]:
    return [m.group(0).strip() for m in COMMAND.finditer(html.unescape(text))]


def _client(env: dict[str, str]) -> FlaskClient:
    app = create_app(build_ops_context(Settings.from_env(env)))
    answer_only_at(app, "127.0.0.1", 80)  # as `dlpipe ui` serves it
    return app.test_client()


def _page(client: FlaskClient, path: str) -> str:
    answer = client.get(path, base_url="http://127.0.0.1")
    assert answer.status_code == 200, (path, answer.status_code)
    return answer.get_data(as_text=True)


def _suggested(env: dict[str, str], tmp_path: Path, day: str) -> list[str]:
    """The commands as printed: the unfinished files' pages, the day page, `dlpipe status`."""
    ops = build_ops_context(Settings.from_env(env))
    client = _client(env)
    found: list[str] = []
    page = _page(client, f"/day/{day}?feed={FEED}")
    file_ids = sorted(set(re.findall(rf"/file/({re.escape(FEED)}\.[\w.-]+)", page)))
    assert len(file_ids) == len(ENTITIES), page
    for file_id in file_ids:
        job = ops.jobs().get(file_id)
        if job is not None and job.status != "completed":
            found += _commands(_page(client, f"/file/{file_id}"))
    found += _commands(page)
    status = _dlpipe(env, tmp_path, "status", "--date", day, "--feed", FEED)
    found += _commands(status.stdout)
    return list(dict.fromkeys(found))


def _counts_everywhere(env: dict[str, str], tmp_path: Path, day: str) -> list[str]:
    """Each batch of the day as `status --json`, the day page and the grid count it:
    (completed, failed, error, expected), one line per batch and screen."""
    done = _dlpipe(env, tmp_path, "status", "--date", day, "--feed", FEED, "--json")
    assert done.stdout.startswith("{"), (done.stdout[:500], done.stderr[-500:])
    client = _client(env)
    grid = _page(client, f"/?feed={FEED}&end={day}")
    lines = []
    for row in json.loads(done.stdout)["batches"]:
        batch_id, counts = row["batch_id"], row["job_counts"]
        lines.append(
            f"{batch_id} status {counts['completed']} {counts['failed']} {counts['error']}"
            f" {row['expected_files']}"
        )
        page = _page(client, f"/day/{day}?feed={FEED}&batch={batch_id}")
        shown = dict(re.findall(r'id="count-(\w+)">(\d+)<', page))
        lines.append(
            f"{batch_id} day page {shown['completed']} {shown['failed']} {shown['error']}"
            f" {shown['expected']}"
        )
        cell = re.search(
            rf'data-batch="{re.escape(batch_id)}".*?: (\d+)/(\d+) completed, (\d+) failed,'
            r" (\d+) error",
            grid,
            re.S,
        )
        assert cell is not None, grid
        done_n, expected, failed, error = cell.groups()
        lines.append(f"{batch_id} grid {done_n} {failed} {error} {expected}")
    return lines


def _day_closed(clients: AwsClients, provisioned: Provisioned, day: str) -> list[str]:
    """What is not as a closed day has it: its last batch completed, latest.json naming that
    batch's completed manifest, `Day Completed` for it received downstream."""
    batches = BatchesTable(clients.dynamodb, provisioned.batches_table)
    last = batches.query_by_date(day)[-1]
    wrong = [] if last.status is BatchStatus.COMPLETED else [f"last batch {last.status}"]
    store = S3ManifestStore(clients.s3, str(provisioned.destination_bucket))
    pointer = store.read_pointer(FEED, day)
    if pointer is None or (pointer[0].status, last.batch_id) != ("completed", pointer[0].batch_id):
        wrong.append(f"latest.json: {pointer and pointer[0]}")
    assert provisioned.downstream_queue_url
    events = received_events(clients, provisioned.downstream_queue_url, rounds=1)
    kinds = {(e["detail"]["batch_id"], e["detail-type"]) for e in events}
    if (last.batch_id, "Day Completed") not in kinds:
        wrong.append(f"no Day Completed for {last.batch_id}: {sorted(kinds)}")
    return wrong


@pytest.mark.parametrize("kind", ["failed", "error", "timeout"])
def test_every_suggested_repair_of_a_named_feeds_day_ends_it_completed_and_told(
    kind: str,
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    rsa_keypair: tuple[bytes, bytes],
    tmp_path: Path,
) -> None:
    """The day ends `kind`; after the fix each suggested command, run as printed, either closes
    the day (exit 0) or refuses in one line naming a command that does."""
    day = unique_day()
    faults = Faults(
        always_expired_entities=frozenset(ENTITIES) if kind == "failed" else frozenset()
    )
    stub = stub_factory([StubFileSpec(e, 256, CIPHER_GCM) for e in ENTITIES], faults)
    key_file = tmp_path / "feed.pem"
    key_file.write_bytes(generate_rsa_keypair()[0] if kind == "error" else rsa_keypair[0])
    received_events(clients, str(provisioned.downstream_queue_url), rounds=1)  # earlier tests'
    with queues(clients) as q:
        settings = {
            ENV_BATCHES_TABLE: provisioned.batches_table,
            ENV_ALLOW_HTTP_URLS: "true",
            ENV_POLL_INTERVAL_SECONDS: "1",
            ENV_MAX_POLLS: POLLS,
            ENV_RESEND_AFTER_SECONDS: "5",
            ENV_FEEDS_FILE: str(_feeds_file(tmp_path, stub, key_file)),
        }
        env = worker_env(aws_env, provisioned, q.url, key_file, lease_seconds=10, **settings)
        env["PYTHONPATH"] = ROOT
        worker = None if kind == "timeout" else WorkerProcess(env, tmp_path / "w1.log")
        try:
            first = _dlpipe(env, tmp_path, "run", "--date", day, "--feed", FEED)
        finally:
            if worker is not None:
                worker.stop()
        assert first.returncode == 1, (first.stdout, first.stderr)
        assert '"status": "' + kind.replace("error", "failed") + '"' in first.stdout

        # The cause, fixed: the provider's URLs sign again, the feed's key is ours, a worker runs.
        faults.set(always_expired_entities=frozenset())
        key_file.write_bytes(rsa_keypair[0])
        worker = WorkerProcess(env, tmp_path / "w2.log")
        try:
            commands = _suggested(env, tmp_path, day)
            assert commands, "no repair suggested"
            ran: list[dict[str, Any]] = []
            summaries: list[tuple[dict[str, Any], str]] = []
            for command in commands:
                args = shlex.split(command)[1:]
                done = _dlpipe(env, tmp_path, *args)
                ran.append({"command": command, "code": done.returncode})
                if done.returncode == 0:
                    assert _day_closed(clients, provisioned, day) == [], (ran, done.stderr)
                    if args[0] == "run" and not summaries:
                        summaries.append((json.loads(done.stdout), done.stderr))
                    continue
                lines = done.stderr.strip().splitlines()
                assert len(lines) == 1, (command, done.stderr)
                assert lines[0].startswith("dlpipe: "), lines
                pointed = _commands(lines[0])
                assert pointed, (command, lines)
                commands += [c for c in pointed if c not in commands]
        finally:
            worker.stop()
        assert any(r["code"] == 0 for r in ran), ran
        # The repairing run's summary says what its batch stores: a rerun that adopted the ended
        # batch's files and queued them (every file, none had completed).
        # (A timed-out day's files may complete in its own batch first: the fixed worker takes their
        # first messages; then the rerun adopts none and queues none.)
        (summary, progress), first_batch = summaries[0], json.loads(first.stdout)["batch_id"]
        assert summary["rerun"] is True, summary
        assert summary["adopted_from"] in ([first_batch], [] if kind == "timeout" else None), (
            summary
        )
        queued = len(ENTITIES) if summary["adopted_from"] else summary["queued"]
        assert (summary["expected"], summary["queued"]) == (len(ENTITIES), queued), summary
        assert f"{len(ENTITIES)} file(s) listed, {queued} queued" in progress
        # The ended batch and the rerun that adopted its files: one set of counts on every screen.
        lines = _counts_everywhere(env, tmp_path, day)
        seen: dict[str, set[tuple[str, ...]]] = {}
        for line in lines:
            words = line.split()
            seen.setdefault(words[0], set()).add(tuple(words[-4:]))
        assert len(seen) == 2, lines
        assert all(len(counts) == 1 for counts in seen.values()), lines

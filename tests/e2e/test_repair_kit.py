"""The kit of the e2e repair and counts tests (it holds no tests): the `dlpipe` console script,
a named feed's feeds file and run settings, the web view's pages and the counts they show, the
closed-day check, and the setup those tests share. Its name starts with `test_`, as
tests/e2e/test_worker_kit.py's does, so that pytest rewrites its asserts (their messages stay
rich); load its `stack` fixture with `pytest_plugins = ["tests.e2e.test_repair_kit"]`."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask.testing import FlaskClient

import dlpipe
from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.adapters.queue import JobQueue
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
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.model import BatchStatus
from dlpipe.local.events import received_events
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.flow import BatchFlowService
from dlpipe.ui.app import answer_only_at, create_app
from tests.e2e.test_worker_kit import worker_env
from tests.provider_support import TEST_PROVIDER_TOKEN, StubFactory, fast_client

pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair, stub_factory

DLPIPE = Path(sys.executable).with_name("dlpipe")
# The commands run this tree's code, whatever the caller's PYTHONPATH is relative to.
ROOT = str(Path(dlpipe.__file__).resolve().parents[1])
FEED = "vendor-r"
# A lease of 10 s and a re-send after 5 s make the recovery bound 11 s + one lease: 25 polls of
# 1 s hold it, and a day without a worker times out in 25 s.
POLLS = "25"
COUNTS = ("completed", "failed", "error", "expected")


@dataclass(frozen=True)
class Stack:
    """The session's emulator (clients, tables, env) and the provider fixtures, as one."""

    clients: AwsClients
    provisioned: Provisioned
    aws_env: dict[str, str]
    stub_factory: StubFactory
    rsa_keypair: tuple[bytes, bytes]

    def stub(self, entities: Iterable[str], faults: Faults | None = None) -> StubProvider:
        """A stub provider listing a 256-byte AES-GCM file per entity."""
        return self.stub_factory([StubFileSpec(e, 256, CIPHER_GCM) for e in entities], faults)


@pytest.fixture
def stack(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    stub_factory: StubFactory,
    rsa_keypair: tuple[bytes, bytes],
) -> Stack:
    return Stack(clients, provisioned, aws_env, stub_factory, rsa_keypair)


def run_dlpipe(
    env: dict[str, str], cwd: Path | None, *args: str, columns: str | None = "400"
) -> subprocess.CompletedProcess[str]:
    """The `dlpipe` console script, `columns` wide (400: a suggested command is never wrapped;
    None: the width `env` says)."""
    return subprocess.run(
        [str(DLPIPE), *args],
        env=env if columns is None else {**env, "COLUMNS": columns},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def write_key(tmp_path: Path, name: str, pem: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(pem)
    return path


def feeds_file(tmp_path: Path, stub: StubProvider, key_file: Path) -> Path:
    """A feeds file naming FEED alone: the stub's URL, the test token, `key_file`."""
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


def run_settings(provisioned: Provisioned, max_polls: str, **more: str) -> dict[str, str]:
    """What `dlpipe run` reads beyond a worker's env: the batches table, the stub's http URLs
    allowed, a poll a second and at most `max_polls` of them."""
    return {
        ENV_BATCHES_TABLE: provisioned.batches_table,
        ENV_ALLOW_HTTP_URLS: "true",
        ENV_POLL_INTERVAL_SECONDS: "1",
        ENV_MAX_POLLS: max_polls,
        **more,
    }


def feed_env(
    stack: Stack, queue_url: str, tmp_path: Path, stub: StubProvider, key_file: Path
) -> dict[str, str]:
    """The env of `dlpipe run --feed FEED` and its workers: FEED's feeds file, a lease of 10 s,
    a re-send after 5 s, POLLS polls, this tree's code."""
    feeds = str(feeds_file(tmp_path, stub, key_file))
    settings = run_settings(
        stack.provisioned, POLLS, **{ENV_RESEND_AFTER_SECONDS: "5", ENV_FEEDS_FILE: feeds}
    )
    env = worker_env(
        stack.aws_env, stack.provisioned, queue_url, key_file, lease_seconds=10, **settings
    )
    env["PYTHONPATH"] = ROOT
    return env


def queued_day(
    stack: Stack, jobs: JobsTable, stub: StubProvider, queue_url: str, day: str
) -> tuple[BatchFlowService, str]:
    """The orchestrator's flow against the stub and the queue, with the day's batch created and
    its files queued: (the flow, the batch's id)."""
    flow = BatchFlowService(
        jobs=jobs,
        batches=BatchesTable(
            stack.clients.dynamodb, stack.provisioned.batches_table, SystemClock()
        ),
        provider=fast_client(stub),
        queue=JobQueue(stack.clients.sqs, queue_url),
        clock=SystemClock(),
        new_uuid=lambda: str(uuid.uuid4()),
    )
    batch_id = flow.create_batch(day)
    flow.fetch_and_queue(batch_id, day)
    return flow, batch_id


def ui_client(env: dict[str, str]) -> FlaskClient:
    """The web view over `env`'s tables and queues, answering as `dlpipe ui` serves it."""
    app = create_app(build_ops_context(Settings.from_env(env)))
    answer_only_at(app, "127.0.0.1", 80)
    return app.test_client()


def get_page(client: FlaskClient, path: str) -> str:
    answer = client.get(path, base_url="http://127.0.0.1")
    assert answer.status_code == 200, (path, answer.status_code)
    return answer.get_data(as_text=True)


def page_counts(
    env: dict[str, str], day: str, feed: str, batch_ids: Iterable[str]
) -> dict[tuple[str, str], tuple[int, ...]]:
    """(BatchID, "day page" or "grid") -> (completed, failed, error, expected) as each batch's
    day page and its cell of the grid show them."""
    client = ui_client(env)
    grid = get_page(client, f"/?feed={feed}&end={day}")
    seen: dict[tuple[str, str], tuple[int, ...]] = {}
    for batch_id in batch_ids:
        page = get_page(client, f"/day/{day}?feed={feed}&batch={batch_id}")
        shown = dict(re.findall(r'id="count-(\w+)">(\d+)<', page))
        seen[batch_id, "day page"] = tuple(int(shown[k]) for k in COUNTS)
        cell = re.search(
            rf'data-batch="{re.escape(batch_id)}".*?: (\d+)/(\d+) completed, (\d+) failed,'
            r" (\d+) error",
            grid,
            re.S,
        )
        assert cell is not None, grid
        done_n, expected, failed, error = map(int, cell.groups())
        seen[batch_id, "grid"] = (done_n, failed, error, expected)
    return seen


def day_closed(stack: Stack, day: str) -> list[str]:
    """What is not as a closed day has it: its last batch completed, latest.json naming that
    batch's completed manifest, `Day Completed` for it received downstream."""
    clients, provisioned = stack.clients, stack.provisioned
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


def drain_events(stack: Stack) -> None:
    """Take earlier tests' events off the downstream queue."""
    received_events(stack.clients, str(stack.provisioned.downstream_queue_url), rounds=1)

"""A dead worker costs seconds: the open long polls of a `dlpipe worker` that is killed (or
frozen) with its lanes on three feeds' queues each take the one message sent to that queue;
another worker receives every one of them again and completes their jobs, well before lease +
margin (here 300 + 30 s), because an unclaimed message is hidden for the receive window only
(dlpipe.entrypoints.receive_window). The killed worker and the frozen one run side by side, each
on feeds and queues of its own with a successor of its own: both wait out the one 30 s window.

The heal is bounded from records, not the test's clock: each successor's `job.claimed` line is
stamped at most HEAL_S (60 s) after the dead worker's last log line, which it wrote before the
kill. HEAL_S is RELIABILITY.md's bound V + W (receive window 30 s + one 20 s long poll that SQS
may still answer for the dead process) and 10 s for the successor's own 1 s polls, its claim and
the dead worker's last line to its kill."""

from __future__ import annotations

import os
import signal
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from dlpipe.config import ENV_FEEDS_FILE
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import JobStatus, make_batch_id
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.jobs_from_listing import job_from_descriptor
from tests.e2e.test_repair_kit import Stack
from tests.e2e.test_worker_kit import Queues, WorkerProcess, queues, wait_until, worker_env
from tests.integration.test_downloader_kit import DAY, wall_clock_jobs
from tests.provider_support import TEST_PROVIDER_TOKEN, fast_client

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack
LEASE_S = 300  # lease + margin, 330 s, is when an unclaimed message came back before
# Stops a hung test; also far below lease + margin, so a worker that still hid its received
# messages that long fails here rather than passing slowly.
DEADLINE_S = 150
# The heal bound, from the kill to each claim by another worker: RELIABILITY.md's V + W, the
# receive window (RECEIVE_WINDOW_S, 30 s) plus one long poll (20 s), and a 10 s margin.
HEAL_S = 60


@dataclass
class _Dead:
    """One dead worker's scenario: its feeds (the default first), their queues, its env."""

    how: signal.Signals
    feeds: list[str]
    stub: StubProvider
    lanes: list[Queues]
    env: dict[str, str]
    logs: Path
    doomed: WorkerProcess | None = None
    successor: WorkerProcess | None = None
    sent: dict[str, str] = field(default_factory=dict)  # FileID -> MessageId

    def stop(self) -> None:
        for worker in (self.doomed, self.successor):
            if worker is not None:
                worker.stop()  # SIGKILL ends a stopped process too


def _dead_worker(stack: Stack, each: ExitStack, how: signal.Signals, logs: Path) -> _Dead:
    """The scenario's three feeds on a stub of their own, a queue each (kept by `each`), the
    feeds file naming the two named ones, and the env of its workers."""
    logs.mkdir()
    run = uuid.uuid4().hex[:6]
    feeds = [DEFAULT_FEED_NAME, f"wa-{run}", f"wb-{run}"]
    specs = [StubFileSpec(f"w{n}{uuid.uuid4().hex[:8]}", 512, CIPHER_GCM) for n in feeds]
    stub = stack.stub_factory(specs)
    key, token = logs / "key.pem", logs / "token"
    key.write_bytes(stack.rsa_keypair[0])
    token.write_text(TEST_PROVIDER_TOKEN)
    lanes = [each.enter_context(queues(stack.clients, visibility_s=600)) for _ in feeds]
    feeds_file = logs / "feeds.toml"
    feeds_file.write_text(
        "".join(
            f'[feeds.{name}]\nschedule = "rate(1 day)"\ntime_zone = "UTC"\n'
            f'destination_prefix = "{name}"\nprovider_base_url = "{stub.base_url}"\n'
            f'token_secret = "file:{token}"\nprivate_key_secret = "file:{key}"\n'
            f'url_allowed_hosts = ["127.0.0.1:*"]\nqueue_url = "{q.url}"\n'
            for name, q in zip(feeds[1:], lanes[1:], strict=True)
        )
    )
    env = worker_env(
        stack.aws_env,
        stack.provisioned,
        lanes[0].url,
        key,
        stub=stub,
        lease_seconds=LEASE_S,
        **{ENV_FEEDS_FILE: str(feeds_file)},
    )
    return _Dead(how, feeds, stub, lanes, env, logs)


def _not_visible(stack: Stack, queue_url: str) -> int:
    names: list[str] = ["ApproximateNumberOfMessagesNotVisible"]
    answer = stack.clients.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)  # type: ignore[arg-type]
    return int(answer["Attributes"]["ApproximateNumberOfMessagesNotVisible"])


def test_the_messages_a_dead_worker_s_lanes_received_are_claimed_by_another_worker(
    stack: Stack, tmp_path: Path
) -> None:
    """Killed (SIGKILL) and frozen (SIGSTOP), each with its own feeds, queues and successor."""
    table = wall_clock_jobs(stack.clients, stack.provisioned)
    with ExitStack() as each:
        dead = [
            _dead_worker(stack, each, how, tmp_path / how.name)
            for how in (signal.SIGKILL, signal.SIGSTOP)
        ]
        try:
            for d in dead:
                # Long polls of 20 s, one per lane: open when the worker stops answering.
                d.doomed = WorkerProcess(
                    d.env, d.logs / "doomed.log", "--concurrency", "3", "--wait-seconds", "20"
                )
            for d in dead:
                doomed = d.doomed
                assert doomed is not None
                wait_until(lambda w=doomed: "worker.started" in w.event_names(), 30, "the start")
                (started,) = [e for e in doomed.events() if e["event"] == "worker.lanes"]
                assert len(started["caps"]) == len(d.feeds), started
            time.sleep(1.0)  # settle: each lane's first long poll is open
            for d in dead:
                assert d.doomed is not None
                os.kill(d.doomed.pid, d.how)
            for d in dead:
                d.sent = _queue_one_job_per_feed(stack, d.stub, d.feeds, d.lanes)
            # Each queue's one message is in flight: its dead worker's open poll took it.
            taken = [q.url for d in dead for q in d.lanes]
            wait_until(
                lambda: all(_not_visible(stack, url) == 1 for url in taken), 25, "each one taken"
            )
            for d in dead:
                d.successor = WorkerProcess(d.env, d.logs / "successor.log", "--concurrency", "3")
            sent = [file_id for d in dead for file_id in d.sent]
            wait_until(
                lambda: all(table.require(f).status is JobStatus.COMPLETED for f in sent),
                DEADLINE_S,
                "every job completed by the second workers",
            )
        finally:
            for d in dead:
                d.stop()
    for d in dead:
        assert d.successor is not None
        claimed = {e["message_id"]: e for e in d.successor.events() if e["event"] == "job.claimed"}
        assert set(claimed) == set(d.sent.values()), (d.how, claimed, d.sent)
        # The second receive of each: the dead worker's was the first.
        assert {e["receive_count"] for e in claimed.values()} == {2}, (d.how, claimed)
        assert {e["file_id"] for e in claimed.values()} == set(d.sent), d.how
        # Healed within HEAL_S of the kill: the dead worker's last line was written before it.
        assert d.doomed is not None
        last_line = max(_stamp(e) for e in d.doomed.events())
        healed_s = {e["file_id"]: (_stamp(e) - last_line).total_seconds() for e in claimed.values()}
        assert max(healed_s.values()) <= HEAL_S, (d.how, "s from the dead worker's end", healed_s)


def _stamp(event: dict[str, object]) -> datetime:
    """When a worker wrote a log line (its `timestamp`, ISO 8601 UTC)."""
    return datetime.fromisoformat(str(event["timestamp"]))


def _queue_one_job_per_feed(
    stack: Stack, stub: StubProvider, feeds: list[str], lanes: list[Queues]
) -> dict[str, str]:
    """A job per feed, each feed one of the stub's files, its message on the feed's queue:
    FileID -> MessageId."""
    jobs_table = wall_clock_jobs(stack.clients, stack.provisioned)
    listing = fast_client(stub).list_files(DAY)
    now_ms = SystemClock().now_ms()
    sent: dict[str, str] = {}
    for descriptor, feed, q in zip(listing.files, feeds, lanes, strict=True):
        batch_id = make_batch_id(DAY, str(uuid.uuid4()), feed)
        job = job_from_descriptor(descriptor, batch_id, now_ms, feed=feed)
        jobs_table.create(job)
        body = encode_message(JobMessage(job.file_id, job.batch_id))
        answer = stack.clients.sqs.send_message(QueueUrl=q.url, MessageBody=body)
        sent[job.file_id] = answer["MessageId"]
    return sent

"""A feed added while `dlpipe worker` runs: the worker read its feeds file before the feed was
in it; the file is rewritten with the feed and the feed's jobs queued, and every job completes
with the feed's own key and destination prefix (none `unknown_feed`)."""

from __future__ import annotations

import hashlib
import signal
import uuid
from pathlib import Path

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.config import ENV_FEEDS_FILE
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import FileJob, JobStatus, make_batch_id
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.services.orchestrator.jobs_from_listing import job_from_descriptor
from tests.e2e.test_repair_kit import Stack
from tests.e2e.test_worker_kit import WorkerProcess, queues, wait_until, worker_env
from tests.integration.test_downloader_kit import DAY, wall_clock_jobs
from tests.provider_support import TEST_PROVIDER_TOKEN, fast_client

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack

FILES = 8
DEFAULT_ONLY = '[feeds.default]\nschedule = "cron(30 6 * * ? *)"\ntime_zone = "UTC"\n'


def test_a_feed_added_while_a_worker_runs_completes_every_job(stack: Stack, tmp_path: Path) -> None:
    clients, provisioned, aws_env = stack.clients, stack.provisioned, stack.aws_env
    feed = f"late-{uuid.uuid4().hex[:8]}"
    specs = [
        StubFileSpec(f"e{uuid.uuid4().hex[:10]}", 2048 + n, (CIPHER_GCM, CIPHER_CBC)[n % 2])
        for n in range(FILES)
    ]
    # The stub encrypts for rsa_keypair: the feed's key, not the worker's own.
    stub = stack.stub_factory(specs)
    feed_key, token = tmp_path / "feed.pem", tmp_path / "feed.token"
    feed_key.write_bytes(stack.rsa_keypair[0])
    token.write_text(TEST_PROVIDER_TOKEN)
    own_key = tmp_path / "default.pem"
    own_key.write_bytes(generate_rsa_keypair()[0])
    feeds_file = tmp_path / "feeds.toml"
    feeds_file.write_text(DEFAULT_ONLY)
    table = wall_clock_jobs(clients, provisioned)
    with queues(clients) as q:
        env = worker_env(aws_env, provisioned, q.url, own_key, **{ENV_FEEDS_FILE: str(feeds_file)})
        worker = WorkerProcess(env, tmp_path / "w.log", "--concurrency", "2")
        try:
            wait_until(lambda: "worker.started" in worker.event_names(), 60, "startup")
            feeds_file.write_text(
                DEFAULT_ONLY + f'\n[feeds.{feed}]\nschedule = "rate(1 day)"\ntime_zone = "UTC"\n'
                f'destination_prefix = "{feed}"\nprovider_base_url = "{stub.base_url}"\n'
                f'token_secret = "file:{token}"\nprivate_key_secret = "file:{feed_key}"\n'
                'url_allowed_hosts = ["127.0.0.1:*"]\n'
            )
            jobs = _queue_jobs(clients, q.url, table, stub, feed)
            wait_until(lambda: all(table.require(j.file_id).is_terminal for j in jobs), 60, "jobs")
            worker.process.send_signal(signal.SIGTERM)
            assert worker.wait(30) == 0
        finally:
            worker.stop()
    expected = stub.expected(DAY)
    for job in jobs:
        stored = table.require(job.file_id)
        want = expected[f"{job.entity}-{DAY}"].sha256
        assert (stored.status, stored.error_message, stored.sha256) == (
            JobStatus.COMPLETED,
            None,
            want,
        )
        assert stored.destination_key == f"{feed}/{job.entity}/{DAY}/{job.file_id}"
        body = clients.s3.get_object(
            Bucket=str(provisioned.destination_bucket), Key=stored.destination_key
        )
        assert hashlib.sha256(body["Body"].read()).hexdigest() == want
    names = worker.event_names()
    assert names.count("job.completed") == FILES
    assert not {"job.feed_unknown", "job.error", "message.failed"} & set(names)


def _queue_jobs(
    clients: AwsClients, queue_url: str, table: JobsTable, stub: StubProvider, feed: str
) -> list[FileJob]:
    """The feed's day as its orchestrator would queue it: a job per listed file, then its
    message."""
    batch_id = make_batch_id(DAY, str(uuid.uuid4()), feed)
    now_ms = SystemClock().now_ms()
    listing = fast_client(stub).list_files(DAY)
    jobs = [job_from_descriptor(d, batch_id, now_ms, feed=feed) for d in listing.files]
    for job in jobs:
        table.create(job)
        body = encode_message(JobMessage(job.file_id, job.batch_id))
        clients.sqs.send_message(QueueUrl=queue_url, MessageBody=body)
    return jobs

"""`dlpipe status` shows who holds the download capacity: each feed's own queue (its URL in
the feed's SSM parameter, as Terraform writes it) with its waiting and in-flight messages,
its oldest wait and its slow files, and names the feed whose queue holds the threads
(emulator tables, queues and parameters, over HTTP on 127.0.0.1)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import FileJob, JobStatus, make_batch_id, make_file_id
from dlpipe.domain.rules import job_ttl_epoch_s
from dlpipe.local.provision import provision_feed_queue
from tests.integration.test_feed_parameters import AS_TERRAFORM_WRITES, path, put
from tests.integration.test_ops_feeds_ssm import on_aws
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world
from tests.support import BASE_MS, make_job

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "path", "world"]  # fixtures used by the tests below
THRESHOLD_S = 60
SLOW = "provider_slow: 3 bytes in 30 s, below the floor of 65536 bytes per 30 s"
# DynamoDB Local deletes items whose TTL has passed in real time; the world's clock is far past.
_TTL = job_ttl_epoch_s(BASE_MS // 1000)


@pytest.fixture
def feed_queue(clients: AwsClients) -> Iterator[tuple[str, str]]:
    """A named feed of this test's own (the StatusIndex is shared by the session) and its
    own download queue, deleted afterwards."""
    feed = f"vq-{uuid.uuid4().hex[:10]}"
    url = provision_feed_queue(clients, feed)  # named as Terraform names it
    yield feed, url
    clients.sqs.delete_queue(QueueUrl=url)


def _available(
    world: World, entity: str, feed: str | None, waited_s: int, **changes: object
) -> FileJob:
    """An available job of `feed` (None: the default feed) made `waited_s` before now."""
    named = {}
    if feed is not None:
        batch_id = make_batch_id(world.day, str(uuid.uuid4()), feed)
        named = {
            "file_id": make_file_id(entity, world.day, feed),
            "batch_id": batch_id,
            "feed": feed,
        }
    made = make_job(entity, world.day, now_ms=world.clock.now - waited_s * 1000, **named, **changes)
    job = world.jobs.create(replace(made, ttl_epoch_s=_TTL))
    world.created_jobs.append(job.file_id)
    return job


def _send(world: World, url: str, job: FileJob) -> None:
    body = encode_message(JobMessage(job.file_id, job.batch_id))
    world.clients.sqs.send_message(QueueUrl=url, MessageBody=body)


def test_status_shows_each_feeds_queue_and_names_the_feed_holding_the_threads(
    world: World,
    dlpipe_cli: CliRunner,
    clients: AwsClients,
    path: str,
    feed_queue: tuple[str, str],
    entity: str,
) -> None:
    """default's message waits 10 min with none in flight; the named feed's queue holds one
    message in flight and one waiting (a file given back as slow): each queue is counted by
    itself, the total is both, and the warning names the named feed."""
    feed, url = feed_queue
    put(clients, f"{path}/{feed}", {**AS_TERRAFORM_WRITES, "name": feed, "queue_url": url})
    on_aws(world, path, allow_http_urls=True, idle_warning_seconds=THRESHOLD_S)
    default_queue = world.ops.settings.queue_url or ""
    _send(world, default_queue, _available(world, entity, None, waited_s=600))
    _send(world, url, _available(world, entity, feed, waited_s=30, error_message=SLOW))
    _send(world, url, _available(world, f"{entity}b", feed, waited_s=20))
    clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)  # a worker holds one

    payload = dlpipe_cli("status", "--date", world.day, "--json").json()
    assert (payload["queue"]["visible"], payload["queue"]["in_flight"]) == (2, 1)
    rows = {r["feed"]: r for r in payload["queues_by_feed"]["feeds"]}
    assert next(iter(rows)) == "default", rows
    assert feed in rows, rows
    default, named = rows["default"], rows[feed]
    assert (default["queue_url"], default["visible"], default["in_flight"]) == (default_queue, 1, 0)
    assert (named["queue_url"], named["visible"], named["in_flight"]) == (url, 1, 1)
    assert default["oldest_available_age_s"] >= 600  # the index is shared: older ones only add
    assert 30 <= named["oldest_available_age_s"] < 600
    assert named["slow"] == 1
    assert payload["idle_warning"] is None  # a worker holds a message
    assert payload["starving_warning"].startswith(
        f"{feed} holds 1 of 1 in flight; 1 waiting on default for "
    ), payload["starving_warning"]

    text = dlpipe_cli("status", "--date", world.day)
    assert "queues by feed" in text.out, text.out
    (line,) = [x for x in text.out.splitlines() if x.lstrip().startswith(feed)]
    assert url.rsplit("/", 1)[-1] in line, line
    assert f"WARNING: {feed} holds 1 of 1 in flight; 1 waiting on default for " in text.out


def test_a_feed_without_its_own_queue_shares_the_deployments_shown_once(
    world: World, dlpipe_cli: CliRunner, clients: AwsClients, path: str, feed_queue: tuple[str, str]
) -> None:
    """No queue_url in the parameter: the feed is on DLPIPE_QUEUE_URL, whose depth default's
    row carries; the feed's row names the queue it shares."""
    feed, _ = feed_queue
    put(clients, f"{path}/{feed}", {**AS_TERRAFORM_WRITES, "name": feed})
    on_aws(world, path)
    rows = {
        r["feed"]: r
        for r in dlpipe_cli("status", "--date", world.day, "--json").json()["queues_by_feed"][
            "feeds"
        ]
    }
    shared = world.ops.settings.queue_url
    assert (rows["default"]["queue_url"], rows["default"]["shared_with"]) == (shared, [feed])
    assert (rows[feed]["queue_url"], rows[feed]["visible"], rows[feed]["in_flight"]) == (
        shared,
        None,
        None,
    )
    assert rows[feed]["shared_with"] == ["default"]


def test_requeue_sends_a_named_feeds_file_to_that_feeds_own_queue(
    world: World,
    dlpipe_cli: CliRunner,
    clients: AwsClients,
    path: str,
    feed_queue: tuple[str, str],
    entity: str,
) -> None:
    """A failed file of a feed with its own queue goes back to that queue, not the main one
    (where no lane of that feed would look for it first)."""
    feed, url = feed_queue
    put(clients, f"{path}/{feed}", {**AS_TERRAFORM_WRITES, "name": feed, "queue_url": url})
    on_aws(world, path, allow_http_urls=True)
    job = _available(world, entity, feed, waited_s=30)
    world.jobs.claim(job.file_id, "w", 60)
    world.jobs.finish_unsuccessfully(job.file_id, "w", JobStatus.FAILED, "timeouts")
    run = dlpipe_cli("jobs", "requeue", job.file_id, "--json")
    assert run.code == 0, run.err
    got = clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    bodies = [m["Body"] for m in got.get("Messages", [])]
    assert [job.file_id in b for b in bodies] == [True], bodies

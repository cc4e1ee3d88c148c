"""Every path that (re)sends a job routes it by size: requeue, DLQ redrive, replay, sweeper."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.messages import JobMessage, decode_message, encode_message
from dlpipe.domain.model import JobStatus, make_file_id
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.services.ops.dlq import redrive
from dlpipe.services.ops.recovery import requeue_files
from dlpipe.services.orchestrator.flow import BatchFlowService
from tests.integration.test_ops_fixtures import World, no_scan, world
from tests.integration.test_orchestrator_flow import queue_that_is_gone
from tests.provider_support import StubFactory, fast_client

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # stub_factory
__all__ = ["no_scan", "world"]  # fixtures used by the tests below

THRESHOLD_BYTES = 1_000


@pytest.fixture
def routed(world: World, clients: AwsClients) -> Iterator[World]:
    """The world with a large-file queue of its own and a 1,000-byte threshold."""
    url = clients.sqs.create_queue(QueueName=f"ops-large-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    settings = replace(
        world.ops.settings, large_queue_url=url, large_file_threshold_bytes=THRESHOLD_BYTES
    )
    world.ops = replace(world.ops, settings=settings)
    yield world
    clients.sqs.delete_queue(QueueUrl=url)


def queued(world: World) -> tuple[list[str], list[str]]:
    """FileIDs now on (main, large), consumed."""
    main = [decode_message(b).file_id for b in world.drain(world.ops.settings.queue_url or "")]
    large = world.drain(world.ops.settings.large_queue_url or "")
    return sorted(main), sorted(decode_message(b).file_id for b in large)


def failed_pair(world: World, entity: str) -> tuple[str, str]:
    """A failed small job and a failed large job of one batch: (small, large) FileIDs."""
    batch = world.batch()
    ids = []
    for suffix, size in (("s", 10), ("l", THRESHOLD_BYTES + 1)):
        job = world.job(f"{entity}{suffix}", batch_id=batch.batch_id, expected_size=size)
        world.jobs.claim(job.file_id, "w", 60)
        world.jobs.finish_unsuccessfully(job.file_id, "w", JobStatus.FAILED, "timeouts")
        ids.append(job.file_id)
    return ids[0], ids[1]


def test_requeue_sends_a_large_job_to_the_large_queue(routed: World, entity: str) -> None:
    """`dlpipe jobs requeue` puts the small job on the main queue, the large one on the large."""
    small, large = failed_pair(routed, entity)
    results = requeue_files(routed.ops, [small, large])
    assert [r.outcome for r in results] == ["requeued", "requeued"]
    assert queued(routed) == ([small], [large])


def test_dlq_redrive_sends_a_large_job_back_to_the_large_queue(routed: World, entity: str) -> None:
    """Both queues share the DLQ; redrive sends each job to the queue its size routes it to."""
    small, large = failed_pair(routed, entity)
    batch_id = routed.jobs.require(small).batch_id
    for file_id in (small, large):
        body = encode_message(JobMessage(file_id, batch_id))
        routed.clients.sqs.send_message(
            QueueUrl=routed.ops.settings.dlq_url or "", MessageBody=body
        )
    entries = redrive(routed.ops, 10, dry_run=False)
    assert sorted(e.outcome or "" for e in entries) == ["redriven", "redriven"]
    assert queued(routed) == ([small], [large])


def test_replay_and_sweeper_resends_are_routed_like_the_first_send(
    routed: World, entity: str, stub_factory: StubFactory, clients: AwsClients
) -> None:
    """fetch-and-queue's replay after a crash before its sends, and the sweeper's re-send, put
    the large file on the large queue."""
    stub = stub_factory(
        [StubFileSpec(f"{entity}s", 100, CIPHER_CBC), StubFileSpec(f"{entity}l", 5_000, CIPHER_GCM)]
    )
    flow = BatchFlowService(
        jobs=routed.jobs,
        batches=routed.batches,
        provider=fast_client(stub),
        queue=routed.ops.queue(),
        clock=routed.clock,
        new_uuid=lambda: str(uuid.uuid4()),
        sweep_requeue=True,
        resend_after_seconds=60,
    )
    batch_id = flow.create_batch(routed.day)
    routed.created_batches.append(batch_id)
    small, large = make_file_id(f"{entity}s", routed.day), make_file_id(f"{entity}l", routed.day)
    routed.created_jobs.extend([small, large])
    crashed = replace(flow, queue=queue_that_is_gone(clients, routed.ops.queue()))
    with pytest.raises(RuntimeError, match="queueing failed for 2 file"):
        crashed.fetch_and_queue(batch_id, routed.day)  # both jobs written, neither sent
    assert queued(routed) == ([], [])
    flow.fetch_and_queue(batch_id, routed.day)  # the replay: both still available, sent now
    assert queued(routed) == ([small], [large])
    routed.clock.advance(120)
    flow.check_completion(batch_id, 1, is_last_poll=False)  # both idle past 60 s: re-sent
    assert queued(routed) == ([small], [large])

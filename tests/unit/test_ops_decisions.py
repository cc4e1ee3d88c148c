"""The pure decisions of recovery: when a requeue is refused, what redrive does with a message."""

from __future__ import annotations

import pytest

from dlpipe.domain.messages import JobMessage
from dlpipe.domain.model import JobStatus
from dlpipe.domain.queued import QueuedMessage
from dlpipe.services.ops.dlq import Action, plan
from dlpipe.services.ops.recovery import refusal
from tests.support import BASE_MS, make_job


def _message(job: JobMessage | None) -> QueuedMessage:
    return QueuedMessage("m-1", "rh", 1, BASE_MS, job, None if job else "not JSON")


def test_a_live_claim_is_refused_naming_its_worker_and_expiry() -> None:
    """refused: held by worker X until T, unless forced."""
    job = make_job(
        "acct",
        status=JobStatus.DOWNLOADING,
        lease_owner="w-3",
        lease_expires_at_ms=BASE_MS + 60_000,
    )
    assert (
        refusal(job, BASE_MS, force=False)
        == "refused: held by worker w-3 until 2126-02-28T00:01:00Z"
    )
    assert refusal(job, BASE_MS, force=True) is None


def test_an_expired_claim_and_finished_failures_may_be_requeued_but_not_completed() -> None:
    """Expired lease, failed and error go back; completed never does."""
    expired = make_job(
        "acct", status=JobStatus.DOWNLOADING, lease_owner="w", lease_expires_at_ms=BASE_MS - 1
    )
    assert refusal(expired, BASE_MS, force=False) is None
    for status in (JobStatus.FAILED, JobStatus.ERROR, JobStatus.AVAILABLE):
        assert refusal(make_job("acct", status=status), BASE_MS, force=False) is None
    assert (
        refusal(make_job("acct", status=JobStatus.COMPLETED), BASE_MS, force=True)
        == "refused: completed"
    )


@pytest.mark.parametrize(
    ("status", "action"),
    [
        (JobStatus.COMPLETED, Action.DELETE),
        (JobStatus.FAILED, Action.REQUEUE_AND_SEND),
        (JobStatus.ERROR, Action.REQUEUE_AND_SEND),
        (JobStatus.AVAILABLE, Action.SEND),
        (JobStatus.DOWNLOADING, Action.SEND),
    ],
)
def test_redrive_plans_each_message_from_its_job_status(status: JobStatus, action: Action) -> None:
    """Completed: delete; failed/error: requeue then send; available/downloading: send."""
    job = make_job("acct", status=status)
    assert plan(_message(JobMessage(job.file_id, job.batch_id)), job, BASE_MS)[0] is action


def test_redrive_leaves_malformed_messages_and_unknown_jobs() -> None:
    """A body that is no job message, or a job that does not exist, stays in the DLQ."""
    assert plan(_message(None), None, BASE_MS) == (Action.LEAVE, "malformed: not JSON")
    assert plan(_message(JobMessage("acct-2026-02-27", "b")), None, BASE_MS) == (
        Action.LEAVE,
        "no such job",
    )


def test_redrive_leaves_the_message_of_a_job_under_a_live_claim() -> None:
    """A worker holds the job and its own message: a copy would only bounce back to the DLQ."""
    job = make_job(
        "acct", status=JobStatus.DOWNLOADING, lease_owner="w", lease_expires_at_ms=BASE_MS + 1
    )
    action, reason = plan(_message(JobMessage(job.file_id, job.batch_id)), job, BASE_MS)
    assert (action, reason) == (Action.LEAVE, "held by worker w: redrive once it is done")

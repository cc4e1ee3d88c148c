"""The invariant checker itself: a clean day passes, and each kind of loss it exists to catch
is caught (days built directly in the emulator, so a broken checker cannot pass silently)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import BatchStatus, FileJob, JobStatus
from dlpipe.local.stub.publish import ExpectedFile
from tests.reliability.invariant import (
    DayFacts,
    InvariantViolation,
    destination_key,
)
from tests.reliability.rig import Rig, unique_day, unique_entity
from tests.support import make_batch, make_job

pytest_plugins = ["tests.provider_fixtures"]  # the rig loads the test key pair
pytestmark = pytest.mark.integration
BODY = b"the provider's plaintext"


@dataclass(frozen=True)
class BuiltDay:
    """A finished day: one completed file, one errored file."""

    day: str
    batch_id: str
    good: FileJob
    bad: FileJob
    expected: dict[str, ExpectedFile]


def build_day(rig: Rig, final: BatchStatus = BatchStatus.FAILED) -> BuiltDay:
    """Write the day's batch, jobs and object as a correct run would have."""
    day, entity, now_ms = unique_day(), unique_entity(), SystemClock().now_ms()
    jobs, batches = rig.jobs(), rig.batches()
    batch = batches.create(make_batch(day, now_ms=now_ms))
    sha = hashlib.sha256(BODY).hexdigest()
    good, bad = (
        jobs.create(
            make_job(
                f"{entity}{n}", day, batch_id=batch.batch_id, now_ms=now_ms,
                expected_sha256=sha, expected_size=len(BODY),
            )
        )
        for n in ("g", "b")
    )  # fmt: skip
    batches.mark_queued(batch.batch_id, {good.file_id, bad.file_id})
    for job in (good, bad):
        jobs.claim(job.file_id, "owner", 30)
    rig.clients.s3.put_object(Bucket=rig.bucket, Key=destination_key(good), Body=BODY)
    good = jobs.complete(
        good.file_id,
        "owner",
        byte_count=len(BODY),
        sha256=sha,
        destination_key=destination_key(good),
    )
    bad = jobs.finish_unsuccessfully(bad.file_id, "owner", JobStatus.ERROR, "tag_mismatch: x")
    batches.record_counts(
        batch.batch_id,
        completed=1,
        failed=0,
        error=1,
        completed_files={good.file_id},
        failed_files={bad.file_id},
    )
    batches.finish(batch.batch_id, final)
    expected = {j.file_id: ExpectedFile(sha, len(BODY), CIPHER_GCM) for j in (good, bad)}
    return BuiltDay(day, batch.batch_id, good, bad, expected)


def check(rig: Rig, built: BuiltDay, expected: dict[str, ExpectedFile] | None = None) -> DayFacts:
    """The invariant for a built day."""
    return rig.check_day(
        built.day,
        built.batch_id,
        built.expected if expected is None else expected,
    )


def test_a_correct_day_passes_the_invariant(rig: Rig) -> None:
    """One verified object and one error with a message, batch failed: no violation."""
    facts = check(rig, build_day(rig))
    assert facts.counts() == {"completed": 1, "error": 1, "dead_letters": 0}


def _tamper_object(rig: Rig, built: BuiltDay) -> None:
    rig.clients.s3.put_object(Bucket=rig.bucket, Key=destination_key(built.good), Body=b"other")


def _publish_a_second_version(rig: Rig, built: BuiltDay) -> None:
    # Identical bytes: only the version count can tell (the stale-worker publish: RELIABILITY.md,
    # production bug 5).
    rig.clients.s3.put_object(Bucket=rig.bucket, Key=destination_key(built.good), Body=BODY)


def _leave_downloading(rig: Rig, built: BuiltDay) -> None:
    rig.jobs().requeue(built.bad.file_id)
    rig.jobs().claim(built.bad.file_id, "ghost", 30)


def _publish_the_error(rig: Rig, built: BuiltDay) -> None:
    rig.clients.s3.put_object(Bucket=rig.bucket, Key=destination_key(built.bad), Body=BODY)


def _leave_an_upload(rig: Rig, built: BuiltDay) -> None:
    rig.clients.s3.create_multipart_upload(Bucket=rig.bucket, Key=destination_key(built.bad))


def _dead_letter_a_live_job(rig: Rig, built: BuiltDay) -> None:
    _leave_downloading(rig, built)
    body = encode_message(JobMessage(built.bad.file_id, built.batch_id))
    rig.clients.sqs.send_message(QueueUrl=rig.queues.dlq_url, MessageBody=body)


BREAKAGES: dict[str, tuple[Callable[[Rig, BuiltDay], None], str]] = {
    "object-bytes-differ": (_tamper_object, "object bytes hash to"),
    "second-version-published": (_publish_a_second_version, "2 object versions at"),
    "job-left-downloading": (_leave_downloading, "was left downloading"),
    "failed-file-published": (_publish_the_error, "but objects exist"),
    "upload-left-in-progress": (_leave_an_upload, "multipart uploads left in progress"),
    "dlq-holds-a-live-job": (_dead_letter_a_live_job, "DLQ holds"),
}


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_each_kind_of_loss_is_a_violation(rig: Rig, breakage: str) -> None:
    """Break one thing in a correct day: the checker names it."""
    built = build_day(rig)
    damage, named = BREAKAGES[breakage]
    damage(rig, built)
    try:
        with pytest.raises(InvariantViolation, match=named):
            check(rig, built)
    finally:
        for upload in rig.clients.s3.list_multipart_uploads(
            Bucket=rig.bucket, Prefix=destination_key(built.bad)
        ).get("Uploads", []):
            rig.clients.s3.abort_multipart_upload(
                Bucket=rig.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
            )


def test_a_listed_file_without_a_job_is_a_violation(rig: Rig) -> None:
    """The provider listed a file the batch has no job for: lost."""
    built = build_day(rig)
    lost = f"{unique_entity()}-{built.day}"
    with pytest.raises(InvariantViolation, match=f"listed file {lost} has no job"):
        check(rig, built, {**built.expected, lost: built.expected[built.good.file_id]})


def test_a_batch_that_disagrees_with_its_jobs_is_a_violation(rig: Rig) -> None:
    """A batch marked completed while one of its files errored contradicts its jobs."""
    built = build_day(rig, final=BatchStatus.COMPLETED)
    with pytest.raises(InvariantViolation, match="disagrees with its jobs"):
        check(rig, built)

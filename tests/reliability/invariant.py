"""The nothing-lost invariant, checked after every reliability scenario.

For the day's batch:
- every FileID the provider listed has exactly one job, in this batch; any other job of the
  batch is an `error` job for a listing entry that was refused;
- every job is `completed` (exactly one destination object, stored as exactly one version in
  the versioned bucket, whose bytes, read back, hash to the provider's plaintext SHA-256) or
  `failed` / `error` with an ErrorMessage and no object;
- no job is left `available` or `downloading`;
- the batch agrees with its jobs: completed iff every job completed and the batch recorded no
  error; failed if every job is terminal and some failed (or the batch has an ErrorMessage);
  timeout only while some job is not terminal; its file sets match the jobs;
- no multipart upload of the day's keys is left in progress in the destination bucket;
- the DLQ holds messages only for jobs that are terminal.

A large day (tens of thousands of files) is checked the same way, with its objects listed once
(`objects_prefix`: paged ListObjectsV2 / ListObjectVersions under the entities' common prefix,
then a binary search per job) and read back on a few threads, instead of three S3 calls per
job: moto answers each listing by walking the whole bucket, which made that O(n^2).
"""

from __future__ import annotations

import bisect
import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.messages import MalformedMessageError, decode_message
from dlpipe.domain.model import Batch, BatchStatus, FileJob, JobStatus
from dlpipe.domain.statuses import UNSUCCESSFUL_JOB_STATUSES
from dlpipe.local.stub.publish import ExpectedFile

_CHUNK = 1 << 20
_READ_THREADS = 4  # read-back of a large day's objects
_UNSUCCESSFUL = frozenset(UNSUCCESSFUL_JOB_STATUSES)
REJECTED_PREFIX = "rejected_listing:"


@dataclass(frozen=True)
class DayFacts:
    """What the checker found, for the scenario's own assertions and the figures."""

    batch: Batch
    jobs: dict[str, FileJob]
    dead_letters: list[str] = field(default_factory=list)  # FileIDs of DLQ messages

    def by_status(self, status: JobStatus) -> set[str]:
        """FileIDs of the batch's jobs in `status`."""
        return {f for f, j in self.jobs.items() if j.status is status}

    def counts(self) -> dict[str, int]:
        """Jobs per status, plus dead letters."""
        counts = {str(s): len(self.by_status(s)) for s in JobStatus if self.by_status(s)}
        return {**counts, "dead_letters": len(self.dead_letters)}


class InvariantViolation(AssertionError):
    """The day broke the nothing-lost invariant; the message lists every violation."""


def destination_key(job: FileJob) -> str:
    """Where a job's file is (or would be) published: `{entity}/{date}/{FileID}`."""
    return f"{job.entity}/{job.download_date}/{job.file_id}"


class _Checker:
    def __init__(self, clients: AwsClients, bucket: str, date: str) -> None:
        self.clients, self.bucket, self.date = clients, bucket, date
        self.problems: list[str] = []
        self._preloaded: str | None = None  # objects under this prefix are listed already
        self._keys: list[str] = []  # sorted
        self._versions: Counter[str] = Counter()
        self._hashes: dict[str, str | None] = {}

    def fail(self, message: str) -> None:
        self.problems.append(message)

    def preload(self, prefix: str, read_keys: Iterable[str]) -> None:
        """List every object and version under `prefix` once, and read `read_keys` back on a
        few threads; later per-job questions under `prefix` are answered from memory."""
        self._keys = sorted(self._list_keys(prefix))
        self._versions = Counter(self._list_versions(prefix))
        keys = sorted(set(read_keys))
        with ThreadPoolExecutor(_READ_THREADS) as pool:
            self._hashes = dict(zip(keys, pool.map(self._read_sha256, keys), strict=True))
        self._preloaded = prefix

    def _covered(self, prefix: str) -> bool:
        return self._preloaded is not None and prefix.startswith(self._preloaded)

    def _list_keys(self, prefix: str) -> Iterable[str]:
        paginator = self.clients.s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            yield from (o["Key"] for o in page.get("Contents", []))

    def _list_versions(self, prefix: str) -> Iterable[str]:
        paginator = self.clients.s3.get_paginator("list_object_versions")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            entries = page.get("Versions", []) + page.get("DeleteMarkers", [])
            yield from (str(v.get("Key")) for v in entries)

    def object_keys(self, prefix: str) -> list[str]:
        if self._covered(prefix):
            start = bisect.bisect_left(self._keys, prefix)
            found = []
            for key in self._keys[start:]:
                if not key.startswith(prefix):
                    break
                found.append(key)
            return found
        listing = self.clients.s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return [o["Key"] for o in listing.get("Contents", [])]

    def version_count(self, key: str) -> int:
        """Versions and delete markers stored at exactly `key`."""
        if self._covered(key):
            return self._versions[key]
        count, request = 0, {"Bucket": self.bucket, "Prefix": key}
        while True:
            page: Any = self.clients.s3.list_object_versions(**request)  # type: ignore[arg-type]
            entries = page.get("Versions", []) + page.get("DeleteMarkers", [])
            count += sum(1 for v in entries if v.get("Key") == key)
            if not page.get("IsTruncated"):
                return count
            request["KeyMarker"] = page["NextKeyMarker"]
            request["VersionIdMarker"] = page["NextVersionIdMarker"]

    def object_sha256(self, key: str) -> str | None:
        if self._covered(key) and key in self._hashes:
            return self._hashes[key]
        return self._read_sha256(key)

    def _read_sha256(self, key: str) -> str | None:
        try:
            body = self.clients.s3.get_object(Bucket=self.bucket, Key=key)["Body"]
        except ClientError:
            return None
        digest = hashlib.sha256()
        for chunk in iter(lambda: body.read(_CHUNK), b""):
            digest.update(chunk)
        return digest.hexdigest()

    def uploads_in_progress(self) -> list[str]:
        keys: list[str] = []
        request: dict[str, Any] = {"Bucket": self.bucket}
        while True:
            page = self.clients.s3.list_multipart_uploads(**request)
            keys += [u["Key"] for u in page.get("Uploads", []) if f"/{self.date}/" in u["Key"]]
            if not page.get("IsTruncated"):
                return keys
            request["KeyMarker"] = page["NextKeyMarker"]
            request["UploadIdMarker"] = page["NextUploadIdMarker"]

    def dead_letters(self, dlq_url: str) -> list[str]:
        file_ids: list[str] = []
        while True:
            got = self.clients.sqs.receive_message(
                QueueUrl=dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=60, WaitTimeSeconds=0
            )
            messages = got.get("Messages", [])
            if not messages:
                return file_ids
            for message in messages:
                try:
                    file_ids.append(decode_message(message["Body"]).file_id)
                except MalformedMessageError:
                    self.fail(f"DLQ holds a message that is not a job message: {message['Body']!r}")

    def check_job(self, job: FileJob, expected: ExpectedFile | None) -> None:
        key = destination_key(job)
        present = self.object_keys(f"{job.entity}/{job.download_date}/")
        if job.status is JobStatus.COMPLETED:
            self.check_completed(job, expected, key, present)
        elif job.status in _UNSUCCESSFUL:
            if not job.error_message:
                self.fail(f"{job.file_id} is {job.status} without an ErrorMessage")
            if present:
                self.fail(f"{job.file_id} is {job.status} but objects exist: {present}")
        else:
            self.fail(f"{job.file_id} was left {job.status}")

    def check_completed(
        self, job: FileJob, expected: ExpectedFile | None, key: str, present: list[str]
    ) -> None:
        if expected is None:
            self.fail(f"{job.file_id} completed but the provider never listed it")
            return
        if job.destination_key != key or present != [key]:
            self.fail(f"{job.file_id}: destination {job.destination_key!r}, objects {present}")
            return
        if (versions := self.version_count(key)) != 1:
            self.fail(f"{job.file_id}: {versions} object versions at {key}, expected exactly 1")
        actual = self.object_sha256(key)
        if actual != expected.sha256:
            self.fail(
                f"{job.file_id}: object bytes hash to {actual}, provider said {expected.sha256}"
            )
        if (job.sha256, job.byte_count) != (expected.sha256, expected.size):
            self.fail(f"{job.file_id}: job records {job.sha256}/{job.byte_count} bytes")


def _batch_problems(batch: Batch, jobs: Mapping[str, FileJob]) -> list[str]:
    problems: list[str] = []
    statuses = [j.status for j in jobs.values()]
    terminal = all(j.is_terminal for j in jobs.values())
    if not batch.is_terminal:
        problems.append(f"batch {batch.batch_id} is still {batch.status}")
    if terminal and all(s is JobStatus.COMPLETED for s in statuses) and not batch.error_message:
        agrees = batch.status is BatchStatus.COMPLETED
    elif terminal:
        agrees = batch.status is BatchStatus.FAILED and bool(
            batch.error_message or _UNSUCCESSFUL & set(statuses)
        )
    else:
        agrees = batch.status is BatchStatus.TIMEOUT
    if not agrees:
        problems.append(
            f"batch status {batch.status} (error {batch.error_message!r}) disagrees with its"
            f" jobs: {sorted(str(s) for s in statuses)}"
        )
    done = {f for f, j in jobs.items() if j.status is JobStatus.COMPLETED}
    failed = {f for f, j in jobs.items() if j.status in _UNSUCCESSFUL}
    # The batch item's counts hold at any size; the jobs here come from BatchIndex.
    if batch.expected != len(jobs):
        problems.append(f"ExpectedCount {batch.expected} differs from {len(jobs)} jobs")
    if batch.is_terminal and (batch.completed, batch.unsuccessful) != (len(done), len(failed)):
        problems.append(
            f"counts completed={batch.completed} unsuccessful={batch.unsuccessful} differ from"
            f" the jobs' statuses ({len(done)} completed, {len(failed)} failed or error)"
        )
    if not batch.has_sets:
        return problems  # a large day names its files only through BatchIndex
    if batch.expected_files != set(jobs):
        problems.append(
            f"ExpectedFiles {sorted(batch.expected_files ^ set(jobs))} differ from jobs"
        )
    if batch.is_terminal and (batch.completed_files, batch.failed_files) != (done, failed):
        problems.append("CompletedFiles / FailedFiles differ from the jobs' statuses")
    return problems


def check_day(
    clients: AwsClients,
    *,
    jobs_table: str,
    batches_table: str,
    bucket: str,
    dlq_url: str,
    date: str,
    batch_id: str,
    expected: Mapping[str, ExpectedFile],
    objects_prefix: str | None = None,
) -> DayFacts:
    """Check the invariant for the day's batch; InvariantViolation lists everything wrong.

    `objects_prefix`: a prefix of every entity of the day (a large day): its objects are
    listed once and read back in parallel (module docstring)."""
    jobs_repo = JobsTable(clients.dynamodb, jobs_table, SystemClock())
    batches_repo = BatchesTable(clients.dynamodb, batches_table, SystemClock())
    checker = _Checker(clients, bucket, date)
    day_batches = [b.batch_id for b in batches_repo.query_by_date(date)]
    if day_batches != [batch_id]:
        checker.fail(f"the day has batches {day_batches}, expected only {batch_id}")
    batch = batches_repo.require(batch_id)
    listed = list(jobs_repo.query_by_batch(batch_id))
    jobs = {j.file_id: j for j in listed}
    if len(jobs) != len(listed):
        checker.fail("the BatchIndex returned one FileID twice")
    if objects_prefix is not None:
        done = (j for j in jobs.values() if j.status is JobStatus.COMPLETED)
        checker.preload(objects_prefix, (destination_key(j) for j in done))
    for file_id in expected:
        if file_id not in jobs:
            stored = jobs_repo.get(file_id)
            where = f"in batch {stored.batch_id}" if stored else "nowhere"
            checker.fail(f"listed file {file_id} has no job in the batch (it is {where})")
    for file_id, job in sorted(jobs.items()):
        extra = file_id not in expected
        if extra and not (
            job.status is JobStatus.ERROR and (job.error_message or "").startswith(REJECTED_PREFIX)
        ):
            checker.fail(f"{file_id} is in the batch but the provider did not list it")
        checker.check_job(job, expected.get(file_id))
    checker.problems += _batch_problems(batch, jobs)
    if stale := checker.uploads_in_progress():
        checker.fail(f"multipart uploads left in progress: {stale}")
    dead = checker.dead_letters(dlq_url)
    for file_id in dead:
        job = jobs.get(file_id) or jobs_repo.get(file_id)
        if job is None or not job.is_terminal:
            checker.fail(f"DLQ holds {file_id}, whose job is {job.status if job else 'missing'}")
    if checker.problems:
        raise InvariantViolation(
            "nothing-lost invariant violated:\n- " + "\n- ".join(checker.problems)
        )
    return DayFacts(batch, jobs, dead)

"""data-download-jobs: every conditional write of a file's job, each next to the race it
prevents. Each ConditionExpression mirrors one rule of dlpipe/domain/transitions.py, named
next to it; tests/property/test_conditions.py checks each pair on generated states. Their
status lists come from the status table (dlpipe/domain/statuses.py), never written out. A
refused write returns the stored job (ALL_OLD), so the loser learns why without a second read.
The reads are jobs_reads.py's; JobsTable (jobs_table.py) is both on one client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dlpipe.adapters import dynamo
from dlpipe.adapters.items import job_from_item, job_key, job_to_item, serialize, stored_error
from dlpipe.adapters.jobs_conditions import CLAIMABLE, EXPIRED, FORCE_REQUEUABLE, HELD, REQUEUABLE
from dlpipe.adapters.jobs_reads import JOB_NAMES, job_names
from dlpipe.adapters.status_conditions import StatusClause
from dlpipe.domain.clock import Clock, iso_from_ms, normalized_iso
from dlpipe.domain.errors import (
    ClaimRefusedError,
    JobExistsError,
    LeaseLostError,
    ListedTwiceError,
    RequeueRefusedError,
)
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.rules import lease_expiry_ms
from dlpipe.domain.shards import status_shard
from dlpipe.domain.statuses import UNSUCCESSFUL_JOB_STATUSES
from dlpipe.domain.transitions import is_own_job_write

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# What every write that gives a job back to the queue sets (:sshard: its available shard).
BACK_TO_AVAILABLE = (
    "#status = :available, #updated = :now, #sshard = :sshard"
    " REMOVE #owner, #lease, #error, #completed"
)


def _shard_value(status: JobStatus, file_id: str) -> str:
    """The StatusShard a write moving `file_id` into pending `status` sets."""
    shard = status_shard(status, file_id)
    if shard is None:
        raise ValueError(f"{status} is not a pending status: it has no StatusShard")
    return shard


class JobWrites:
    """The conditional writes of data-download-jobs (JobsTable gives them a client and clock)."""

    _client: DynamoDBClient
    table_name: str
    _clock: Clock

    def _update(
        self,
        file_id: str,
        *,
        update: str,
        condition: str,
        values: dict[str, Any],
        error: type[ClaimRefusedError | LeaseLostError | ListedTwiceError | RequeueRefusedError],
        rule: str,
        own: Callable[[FileJob], bool] | None = None,
    ) -> FileJob:
        """The conditional write; a refusal whose stored job is this very write, applied by
        an earlier send of it (`own`: a domain rule), is its success, not an error."""
        return dynamo.conditional_update(
            self._client,
            self.table_name,
            job_key(file_id),
            update=update,
            condition=condition,
            names=job_names(update + condition),
            values={k: serialize(v) for k, v in values.items()},
            parse=job_from_item,
            refused=lambda state, current: error(
                f"{rule} refused for {file_id}: {state}", condition=rule, current=current
            ),
            own=own,
            rule=rule,
        )

    def create(self, job: FileJob) -> FileJob:
        """Write a new job; JobExistsError (with the stored job) if the FileID exists."""
        # Race: a replayed or concurrent poller writing the same day's file. The first
        # write wins; the loser learns what is stored without a second read.
        # Rule: may_create.
        dynamo.conditional_put(
            self._client,
            self.table_name,
            job_key(job.file_id),
            job_to_item(job),
            condition="attribute_not_exists(#id)",
            names=job_names("#id"),
            parse=job_from_item,
            refused=lambda _, current: JobExistsError(
                f"job {job.file_id} exists already",
                condition=f"attribute_not_exists({JOB_NAMES['#id']})",
                current=current,
            ),
        )
        return job

    def claim(self, file_id: str, owner: str, lease_seconds: int) -> FileJob:
        """available -> downloading (or take over an expired lease), owned by `owner`."""
        now_ms = self._clock.now_ms()
        # Race: two workers got the same message, or a stale one arrives after completion.
        # Only an available job, or one whose holder's lease ran out, can be claimed.
        # Rule: may_claim.
        condition = f"attribute_exists(#id) AND ({CLAIMABLE.expression})"
        update = (
            "SET #status = :downloading, #owner = :owner, #lease = :expiry, #updated = :now,"
            " #sshard = :sshard, #attempts = if_not_exists(#attempts, :zero) + :one"
            " REMOVE #finishedby"
        )
        values = {
            **CLAIMABLE.values,
            ":downloading": str(JobStatus.DOWNLOADING),
            ":sshard": _shard_value(JobStatus.DOWNLOADING, file_id),
            ":owner": owner,
            ":expiry": lease_expiry_ms(now_ms, lease_seconds),
            ":now": now_ms,
            ":zero": 0,
            ":one": 1,
        }
        return self._update(
            file_id,
            update=update,
            condition=condition,
            values=values,
            error=ClaimRefusedError,
            rule="claim",
            # A retried claim is refused by its own first send (the lease is live now).
            # Rule: is_own_job_write.
            own=lambda current: is_own_job_write(current, owner, JobStatus.DOWNLOADING),
        )

    # Race for every owner-conditioned write: a worker whose lease expired and was taken
    # over must not overwrite the result of the worker that holds the claim now.
    # Rule: holds_claim.
    _OWNED = f"{HELD.expression} AND #owner = :owner"
    # What completing a job sets; shared by the owner's completion and the sweeper's repair.
    # An ended job drops StatusShard, so it leaves StatusIndex.
    _COMPLETED_SET = (
        "SET #status = :completed, #updated = :now, #completed = :at, #bytes = :bytes,"
        " #sha = :sha, #dest = :dest"
    )
    _COMPLETED_REMOVE = " REMOVE #owner, #lease, #error, #sshard"
    _COMPLETE = _COMPLETED_SET + _COMPLETED_REMOVE
    # A restated file's revision also records the version it replaced.
    _COMPLETE_REPLACING = _COMPLETED_SET + ", #prevver = :prevver" + _COMPLETED_REMOVE

    # What a write that ends the claim adds: whose it was (a retry of it finds it there).
    _FINISHED_BY = "#finishedby = :owner"

    def _owned_update(
        self,
        file_id: str,
        owner: str,
        update: str,
        values: dict[str, Any],
        rule: str,
        *,
        ends_in: JobStatus | None = None,
    ) -> FileJob:
        """An owner-conditioned write; one that ends the claim in `ends_in` marks FinishedBy,
        and its retry, refused because the first send ended the claim, is its success."""
        values = {**HELD.values, ":owner": owner, **values}
        own = None
        if ends_in is not None:
            set_part, _, remove_part = update.partition(" REMOVE ")
            update = f"{set_part}, {self._FINISHED_BY} REMOVE {remove_part}"

            def own(current: FileJob | None) -> bool:  # Rule: is_own_job_write.
                return is_own_job_write(current, owner, ends_in)

        return self._update(
            file_id,
            update=update,
            condition=self._OWNED,
            values=values,
            error=LeaseLostError,
            rule=rule,
            own=own,
        )

    def extend_lease(self, file_id: str, owner: str, lease_seconds: int) -> FileJob:
        """Push the lease of a claim we still own further out. LeaseExpiresAt is no index
        key and projected by none, so this write touches the table only."""
        now_ms = self._clock.now_ms()
        values = {":expiry": lease_expiry_ms(now_ms, lease_seconds)}
        return self._owned_update(file_id, owner, "SET #lease = :expiry", values, "extend lease")

    def update_url(self, file_id: str, owner: str, url: str, url_expires_at: str | None) -> FileJob:
        """Store a freshly signed URL for a claim we own."""
        update = "SET #url = :url" + (", #urlexp = :urlexp" if url_expires_at else "")
        values: dict[str, Any] = {":url": url}
        if url_expires_at:
            values[":urlexp"] = normalized_iso(url_expires_at)
        return self._owned_update(file_id, owner, update, values, "update url")

    def complete(
        self,
        file_id: str,
        owner: str,
        *,
        byte_count: int,
        sha256: str,
        destination_key: str,
        previous_version_id: str | None = None,
    ) -> FileJob:
        """downloading -> completed with the verified object's facts, if we still own it; a
        restated file's revision also records the version it replaced (PreviousVersionID)."""
        values = self._completion_values(byte_count, sha256, destination_key)
        update = self._COMPLETE
        if previous_version_id is not None:
            update = self._COMPLETE_REPLACING
            values[":prevver"] = previous_version_id
        return self._owned_update(
            file_id, owner, update, values, "complete", ends_in=JobStatus.COMPLETED
        )

    def _completion_values(
        self, byte_count: int, sha256: str, destination_key: str
    ) -> dict[str, Any]:
        now_ms = self._clock.now_ms()
        return {
            ":completed": str(JobStatus.COMPLETED),
            ":now": now_ms,
            ":at": iso_from_ms(now_ms),
            ":bytes": byte_count,
            ":sha": sha256,
            ":dest": destination_key,
        }

    def finish_unsuccessfully(
        self, file_id: str, owner: str, status: JobStatus, error_message: str
    ) -> FileJob:
        """downloading -> failed (transient, retries used up) or error (permanent), if owned."""
        if status not in UNSUCCESSFUL_JOB_STATUSES:
            takes = " or ".join(UNSUCCESSFUL_JOB_STATUSES)
            raise ValueError(f"finish_unsuccessfully takes {takes}, not {status}")
        update = (
            "SET #status = :final, #updated = :now, #error = :message"
            " REMOVE #owner, #lease, #sshard"
        )
        values = {
            ":final": str(status),
            ":now": self._clock.now_ms(),
            ":message": stored_error(error_message),
        }
        return self._owned_update(file_id, owner, update, values, str(status), ends_in=status)

    def release(self, file_id: str, owner: str, *, error_message: str | None = None) -> FileJob:
        """downloading -> available: give a claim back, if owned; with `error_message`, the
        reason it was given back (a slow source's `provider_slow: ...`), kept as the job's
        last error until it completes or is requeued."""
        update = (
            "SET #status = :available, #updated = :now, #sshard = :sshard REMOVE #owner, #lease"
        )
        values: dict[str, Any] = {
            ":available": str(JobStatus.AVAILABLE),
            ":sshard": _shard_value(JobStatus.AVAILABLE, file_id),
            ":now": self._clock.now_ms(),
        }
        if error_message is not None:
            update = update.replace(" REMOVE ", ", #error = :message REMOVE ", 1)
            values[":message"] = stored_error(error_message)
        return self._owned_update(
            file_id, owner, update, values, "release", ends_in=JobStatus.AVAILABLE
        )

    def requeue(self, file_id: str, *, force: bool = False) -> FileJob:
        """Operator recovery: failed, error, available or an expired claim -> available.

        A live claim is refused unless `force`; a completed job never goes back.
        """
        # Race: a worker may finish or renew the claim between the operator's look and
        # this write; the condition re-checks at write time.
        clause = FORCE_REQUEUABLE if force else REQUEUABLE
        update = f"SET {BACK_TO_AVAILABLE}"
        return self._update(
            file_id,
            update=update,
            condition=clause.expression,
            values=self._requeue_values(clause, file_id),
            error=RequeueRefusedError,
            rule="requeue",
        )

    def _requeue_values(self, clause: StatusClause, file_id: str) -> dict[str, Any]:
        return {
            **clause.values,
            ":available": str(JobStatus.AVAILABLE),
            ":sshard": _shard_value(JobStatus.AVAILABLE, file_id),
            ":now": self._clock.now_ms(),
        }

    def complete_abandoned(
        self,
        file_id: str,
        owner: str,
        *,
        byte_count: int,
        sha256: str,
        destination_key: str,
        previous_version_id: str | None = None,
    ) -> FileJob:
        """downloading -> completed for a claim `owner` abandoned after publishing its file.

        The sweeper's repair: the verified object is in place, only the completion is missing;
        a restated file's revision also records the version it replaced, as `complete` does.
        """
        # Race: the owner may come back (frozen, not dead) and renew or complete, or another
        # worker may take the claim over meanwhile; only the same owner's claim, still
        # expired at write time, is completed here, so no live claim's result is overwritten.
        # Rule: may_complete_abandoned.
        condition = f"{HELD.expression} AND #owner = :owner AND {EXPIRED}"
        update = self._COMPLETE
        values = {
            **HELD.values,
            ":owner": owner,
            **self._completion_values(byte_count, sha256, destination_key),
        }
        if previous_version_id is not None:
            update = self._COMPLETE_REPLACING
            values[":prevver"] = previous_version_id
        return self._update(
            file_id,
            update=update,
            condition=condition,
            values=values,
            error=LeaseLostError,
            rule="complete abandoned",
        )

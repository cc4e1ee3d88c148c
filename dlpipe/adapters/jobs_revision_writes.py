"""data-download-jobs: the writes a revision batch makes to a restated day's completed jobs
(dlpipe/domain/restatement.py), each next to the race it prevents (jobs_writes.py's
conventions: conditional, the stored job back on a refusal, a replay of the same write its
own success)."""

from __future__ import annotations

from typing import Any

from dlpipe.adapters.jobs_rerun_writes import RerunWrites
from dlpipe.domain.clock import normalized_iso
from dlpipe.domain.errors import RequeueRefusedError
from dlpipe.domain.model import FileJob, JobStatus
from dlpipe.domain.shards import batch_shard, status_shard


class RevisionWrites(RerunWrites):
    """RerunWrites with a revision's two: give a restated file back as a new revision, and
    mark a file the vendor withdrew."""

    def revise(
        self, current: FileJob, listed: FileJob, *, revision: int, revised_as: str
    ) -> FileJob:
        """Move `current`, a completed job of an earlier batch (or one withdrawn before), into
        `listed.batch_id` as available, to be downloaded again from what the listing says now
        (`listed`: its URL, key, IV, cipher, size, SHA-256, entry). What it published is kept as
        PreviousSHA256 / PreviousSize (the worker replaces exactly that object: one new version
        a revision), its outcome removed.

        Refused (RequeueRefusedError, with the stored job) unless it is still the completed job
        of `current.batch_id` with `current.sha256`: two runs of the same restated day make
        one revision, and a replay of this write is its own success.
        """
        # Race: two runs of the restated day at once, or a replay of this chunk. Only the job
        # as it was read moves; the other run finds it in this batch at this revision.
        file_id, batch_id = listed.file_id, listed.batch_id
        shard = status_shard(JobStatus.AVAILABLE, file_id)
        values: dict[str, Any] = {
            ":completed": str(JobStatus.COMPLETED),
            ":from": current.batch_id,
            ":oldsha": current.sha256 or "",
            ":batch": batch_id,
            ":bshard": batch_shard(batch_id, file_id),
            ":available": str(JobStatus.AVAILABLE),
            ":sshard": shard,
            ":now": self._clock.now_ms(),
            ":url": listed.presigned_url,
            ":aeskey": listed.encrypted_aes_key,
            ":aesiv": listed.encoded_aes_iv,
            ":cipher": str(listed.cipher),
            ":ttl": listed.ttl_epoch_s,
            ":zero": 0,
            ":revision": revision,
            ":revisedas": revised_as,
        }
        sets = [
            "#batch = :batch",
            "#bshard = :bshard",
            "#status = :available",
            "#updated = :now",
            "#sshard = :sshard",
            "#url = :url",
            "#aeskey = :aeskey",
            "#aesiv = :aesiv",
            "#cipher = :cipher",
            "#ttl = :ttl",
            "#attempts = :zero",
            "#revision = :revision",
            "#revisedas = :revisedas",
        ]
        removes = ["#owner", "#lease", "#error", "#completed", "#bytes", "#sha", "#prevver"]
        removes += ["#withdrawnby", "#finishedby", "#listedby"]
        optional = {
            "#urlexp": normalized_iso(listed.url_expires_at) if listed.url_expires_at else None,
            "#expsize": listed.expected_size,
            "#expsha": listed.expected_sha256,
            "#listidx": listed.listing_index,
            "#prevsha": current.sha256,
            "#prevsize": current.byte_count,
        }
        for name, value in optional.items():
            if value is None:
                removes.append(name)
            else:
                sets.append(f"{name} = :{name[1:]}")
                values[f":{name[1:]}"] = value
        return self._update(
            file_id,
            update=f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
            condition="#status = :completed AND #batch = :from AND #sha = :oldsha",
            values=values,
            error=RequeueRefusedError,
            rule="revise",
            own=lambda stored: stored.batch_id == batch_id and stored.revision == revision,
        )

    def withdraw(self, file_id: str, batch_id: str, by_batch: str) -> FileJob:
        """Mark `file_id`, a completed job of `batch_id` the vendor's complete listing no longer
        names, as withdrawn by revision batch `by_batch` (WithdrawnBy). It stays completed in its batch
        and its object stays where it is: a consumer's data is never deleted.

        Refused (RequeueRefusedError) when it is no longer that completed job, or another
        revision withdrew it; a replay of this write is its own success.
        """
        # Race: a concurrent revision of the same day; the first mark stands.
        return self._update(
            file_id,
            update="SET #withdrawnby = :by",
            condition=(
                "#status = :completed AND #batch = :from AND attribute_not_exists(#withdrawnby)"
            ),
            values={
                ":completed": str(JobStatus.COMPLETED),
                ":from": batch_id,
                ":by": by_batch,
            },
            error=RequeueRefusedError,
            rule="withdraw",
            own=lambda stored: stored.withdrawn_by == by_batch,
        )

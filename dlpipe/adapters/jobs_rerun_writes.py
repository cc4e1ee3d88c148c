"""data-download-jobs: the writes a rerun makes to another batch's jobs, each next to the race
it prevents (the rest are jobs_writes.py's, whose conventions these follow)."""

from __future__ import annotations

from typing import Any

from dlpipe.adapters.jobs_conditions import REQUEUABLE
from dlpipe.adapters.jobs_writes import BACK_TO_AVAILABLE, JobWrites
from dlpipe.domain.errors import ListedTwiceError, RequeueRefusedError
from dlpipe.domain.model import FileJob, listed_by
from dlpipe.domain.shards import batch_shard


class RerunWrites(JobWrites):
    """JobWrites with a rerun's two: adopt an unfinished job, mark one it could not adopt."""

    def adopt(self, file_id: str, batch_id: str, listing_index: int | None = None) -> FileJob:
        """Move an unfinished job of an earlier batch into `batch_id`, as available (and at
        `listing_index` of the new batch's listing, when given).

        Refused (RequeueRefusedError) when the job completed or is held under a live lease.
        """
        # Race: the old batch's worker may still finish it, or a concurrent rerun may adopt
        # it first; only a job that nobody holds and that is not done moves.
        # Rule: may_adopt.
        condition = f"#batch <> :batch AND ({REQUEUABLE.expression})"
        values: dict[str, Any] = {
            ":batch": batch_id,
            ":bshard": batch_shard(batch_id, file_id),
            **self._requeue_values(REQUEUABLE, file_id),
        }
        at_index = ""
        if listing_index is not None:
            at_index = "#listidx = :listidx, "
            values[":listidx"] = listing_index
        update = f"SET #batch = :batch, #bshard = :bshard, {at_index}{BACK_TO_AVAILABLE}"
        return self._update(
            file_id,
            update=update,
            condition=condition,
            values=values,
            error=RequeueRefusedError,
            rule="adopt",
        )

    def mark_listed(self, file_id: str, batch_id: str, listing_index: int) -> FileJob:
        """Mark another batch's job, which a rerun could not adopt, as named by entry
        `listing_index` of `batch_id`'s listing (ListedBy); nothing else of it changes.

        Refused (ListedTwiceError, with the job) when another entry of that listing marked it.
        """
        # Race: a later copy of an entity in the rerun's listing; no put or adopt of it can
        # tell, since the job is another batch's. A replay of the entry writes the same value.
        # Rule: may_mark_listed.
        condition = (
            "attribute_exists(#id) AND (attribute_not_exists(#listedby)"
            " OR NOT begins_with(#listedby, :thislisting) OR #listedby = :listedby)"
        )
        return self._update(
            file_id,
            update="SET #listedby = :listedby",
            condition=condition,
            values={
                ":thislisting": listed_by(batch_id, 0)[:-1],
                ":listedby": listed_by(batch_id, listing_index),
            },
            error=ListedTwiceError,
            rule="mark listed",
        )

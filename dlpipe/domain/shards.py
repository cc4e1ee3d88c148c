"""The write shards of the jobs table's indexes (dlpipe/domain/schema.py names the attributes
and counts): a job's shard is a stable hash of its FileID, so every write of one job lands in
the same shard, and a reader queries every shard and merges."""

from __future__ import annotations

import hashlib

from dlpipe.domain.schema import BATCH_SHARDS, STATUS_SHARDS
from dlpipe.domain.statuses import PENDING_JOB_STATUSES, JobStatus

_SEPARATOR = "#"


def shard_number(file_id: str, count: int) -> int:
    """The shard of `file_id` among `count`: the same on every host and run (no hash seed)."""
    digest = hashlib.sha256(file_id.encode()).digest()
    return int.from_bytes(digest[:4], "big") % count


def _shard(prefix: str, number: int) -> str:
    return f"{prefix}{_SEPARATOR}{number:02d}"


def status_shard(status: JobStatus, file_id: str) -> str | None:
    """The StatusShard of a job in `status`: "<Status>#<nn>" while it is pending, None (the
    attribute absent, the job out of StatusIndex) once it has ended."""
    if status not in PENDING_JOB_STATUSES:
        return None
    return _shard(str(status), shard_number(file_id, STATUS_SHARDS))


def batch_shard(batch_id: str, file_id: str) -> str:
    """The BatchShard of `file_id`'s job in `batch_id`: "<BatchID>#<nn>"."""
    return _shard(batch_id, shard_number(file_id, BATCH_SHARDS))


def status_shards(status: JobStatus) -> list[str]:
    """Every StatusShard value of `status`, in shard order."""
    return [_shard(str(status), n) for n in range(STATUS_SHARDS)]


def batch_shards(batch_id: str) -> list[str]:
    """Every BatchShard value of `batch_id`, in shard order."""
    return [_shard(batch_id, n) for n in range(BATCH_SHARDS)]


def batch_shard_number(value: str, batch_id: str) -> int | None:
    """Which of `batch_id`'s shards `value` names; None if it names none of them."""
    prefix, separator, number = value.rpartition(_SEPARATOR)
    if prefix != batch_id or not separator or len(number) != 2 or not number.isdigit():
        return None
    return int(number) if int(number) < BATCH_SHARDS else None

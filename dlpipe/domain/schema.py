"""What the code expects of the two tables; the Terraform in terraform/dynamodb.tf must agree.

The attributes the tables and their indexes are keyed by are named here, where every layer may
read them (the web view's page cursor is a BatchIndex key); dlpipe/adapters/items.py names the
rest and maps records to items.
"""

from __future__ import annotations

from typing import Final

# Terraform resource labels (aws_dynamodb_table.<label>) of the two tables.
JOBS_RESOURCE: Final = "jobs"
BATCHES_RESOURCE: Final = "batches"

FILE_ID_ATTRIBUTE: Final = "FileID"
BATCH_ID_ATTRIBUTE: Final = "BatchID"
STATUS_ATTRIBUTE: Final = "Status"
STATUS_UPDATED_AT_ATTRIBUTE: Final = "StatusUpdatedAt"
POLLING_DATE_ATTRIBUTE: Final = "PollingDate"
TTL_ATTRIBUTE: Final = "TTL"
# The write-sharded index keys (dlpipe/domain/shards.py): "<Status>#<nn>", held only while
# the job is pending, and "<BatchID>#<nn>", on every job.
STATUS_SHARD_ATTRIBUTE: Final = "StatusShard"
BATCH_SHARD_ATTRIBUTE: Final = "BatchShard"

JOBS_HASH_KEY: Final = FILE_ID_ATTRIBUTE
BATCHES_HASH_KEY: Final = BATCH_ID_ATTRIBUTE

STATUS_INDEX: Final = "StatusIndex"
BATCH_INDEX: Final = "BatchIndex"
POLLING_DATE_INDEX: Final = "PollingDateIndex"

# index name -> (hash key, range key).
JOBS_INDEXES: Final = {
    STATUS_INDEX: (STATUS_SHARD_ATTRIBUTE, STATUS_UPDATED_AT_ATTRIBUTE),
    BATCH_INDEX: (BATCH_SHARD_ATTRIBUTE, STATUS_ATTRIBUTE),
}
BATCHES_INDEXES: Final = {
    POLLING_DATE_INDEX: (POLLING_DATE_ATTRIBUTE, STATUS_ATTRIBUTE),
}
# index name -> (projection type, non-key attributes). The jobs' indexes carry their keys, TTL
# (set once, at the put, so an index read still filters out items past it) and only what is
# written with a status change, so no write but a status change touches them; readers fetch
# the jobs by key (BatchGetItem). StatusIndex also carries BatchID, so the sweeper filters a
# batch's stale jobs before any fetch: BatchID is set by the put and changed only by an
# adoption, which also moves StatusUpdatedAt (the index's range key). BatchIndex also carries
# what a day's manifest names (dlpipe/domain/job_row.py): Entity (set by the put), the
# published object's key, size and SHA-256 (set by the completion) and ErrorMessage (set by
# the writes that end or release a claim), so write-manifest reads index items alone.
MANIFEST_ATTRIBUTES: Final = (
    "Entity",
    "DestinationKey",
    "ByteCount",
    "SHA256",
    "ErrorMessage",
    # A restated file's marks: written by a revision batch only (dlpipe/domain/restatement.py).
    "Revision",
    "RevisedAs",
    "PreviousVersionID",
    "PreviousSHA256",
    "WithdrawnBy",
)
JOBS_PROJECTIONS: Final = {
    STATUS_INDEX: ("INCLUDE", (TTL_ATTRIBUTE, BATCH_ID_ATTRIBUTE)),
    BATCH_INDEX: ("INCLUDE", (TTL_ATTRIBUTE, *MANIFEST_ATTRIBUTES)),
}
BATCHES_PROJECTIONS: Final = {POLLING_DATE_INDEX: ("ALL", ())}

# Shards of each index's partition key, from the hottest key's writes per file and the 1,000
# WCU/s a partition key takes (docs/ARCHITECTURE.md, "Tables"): a StatusIndex key takes 2 WCU
# per file (in, then out), a BatchIndex key 5; 8 and 16 shards keep either <= 0.5 WCU per file
# (0.25 and 0.31), over 2,000 files/s per deployment and per batch.
STATUS_SHARDS: Final = 8
BATCH_SHARDS: Final = 16

JOBS_KEY_ATTRIBUTE_TYPES: Final = {
    FILE_ID_ATTRIBUTE: "S",
    STATUS_ATTRIBUTE: "S",
    STATUS_UPDATED_AT_ATTRIBUTE: "N",
    STATUS_SHARD_ATTRIBUTE: "S",
    BATCH_SHARD_ATTRIBUTE: "S",
}
BATCHES_KEY_ATTRIBUTE_TYPES: Final = {
    BATCH_ID_ATTRIBUTE: "S",
    POLLING_DATE_ATTRIBUTE: "S",
    STATUS_ATTRIBUTE: "S",
}

JOB_TTL_DAYS: Final = 30
BATCH_TTL_DAYS: Final = 90

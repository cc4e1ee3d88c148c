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

JOBS_HASH_KEY: Final = FILE_ID_ATTRIBUTE
BATCHES_HASH_KEY: Final = BATCH_ID_ATTRIBUTE

STATUS_INDEX: Final = "StatusIndex"
BATCH_INDEX: Final = "BatchIndex"
POLLING_DATE_INDEX: Final = "PollingDateIndex"

# index name -> (hash key, range key); every index projects ALL.
JOBS_INDEXES: Final = {
    STATUS_INDEX: (STATUS_ATTRIBUTE, STATUS_UPDATED_AT_ATTRIBUTE),
    BATCH_INDEX: (BATCH_ID_ATTRIBUTE, STATUS_ATTRIBUTE),
}
BATCHES_INDEXES: Final = {
    POLLING_DATE_INDEX: (POLLING_DATE_ATTRIBUTE, STATUS_ATTRIBUTE),
}

JOBS_KEY_ATTRIBUTE_TYPES: Final = {
    FILE_ID_ATTRIBUTE: "S",
    STATUS_ATTRIBUTE: "S",
    STATUS_UPDATED_AT_ATTRIBUTE: "N",
    BATCH_ID_ATTRIBUTE: "S",
}
BATCHES_KEY_ATTRIBUTE_TYPES: Final = {
    BATCH_ID_ATTRIBUTE: "S",
    POLLING_DATE_ATTRIBUTE: "S",
    STATUS_ATTRIBUTE: "S",
}

JOB_TTL_DAYS: Final = 30
BATCH_TTL_DAYS: Final = 90

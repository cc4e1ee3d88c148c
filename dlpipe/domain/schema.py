"""What the code expects of the two tables; the Terraform in terraform/dynamodb.tf must agree."""

from __future__ import annotations

from typing import Final

# Terraform resource labels (aws_dynamodb_table.<label>) of the two tables.
JOBS_RESOURCE: Final = "jobs"
BATCHES_RESOURCE: Final = "batches"

JOBS_HASH_KEY: Final = "FileID"
BATCHES_HASH_KEY: Final = "BatchID"

STATUS_INDEX: Final = "StatusIndex"
BATCH_INDEX: Final = "BatchIndex"
POLLING_DATE_INDEX: Final = "PollingDateIndex"

# index name -> (hash key, range key); every index projects ALL.
JOBS_INDEXES: Final = {
    STATUS_INDEX: ("Status", "StatusUpdatedAt"),
    BATCH_INDEX: ("BatchID", "Status"),
}
BATCHES_INDEXES: Final = {
    POLLING_DATE_INDEX: ("PollingDate", "Status"),
}

JOBS_KEY_ATTRIBUTE_TYPES: Final = {
    "FileID": "S",
    "Status": "S",
    "StatusUpdatedAt": "N",
    "BatchID": "S",
}
BATCHES_KEY_ATTRIBUTE_TYPES: Final = {"BatchID": "S", "PollingDate": "S", "Status": "S"}

TTL_ATTRIBUTE: Final = "TTL"
JOB_TTL_DAYS: Final = 30
BATCH_TTL_DAYS: Final = 90

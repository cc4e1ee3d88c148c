"""Map records to DynamoDB items and back; the tables' attribute names live here (the key
attributes, which Terraform declares too, come from dlpipe/domain/schema.py): the table modules
name an attribute by its record field, through `expression_names`, `job_key` and `batch_key`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from dlpipe.domain.cipher_format import read_cipher
from dlpipe.domain.errors import CorruptRecordError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, is_feed_name
from dlpipe.domain.job_row import JobRow
from dlpipe.domain.model import (
    Batch,
    BatchStatus,
    FileJob,
    JobStatus,
    batch_feed,
    file_feed,
)
from dlpipe.domain.outcome import OutcomeSummary
from dlpipe.domain.redaction import redact
from dlpipe.domain.schema import (
    BATCH_ID_ATTRIBUTE,
    BATCH_SHARD_ATTRIBUTE,
    FILE_ID_ATTRIBUTE,
    POLLING_DATE_ATTRIBUTE,
    STATUS_ATTRIBUTE,
    STATUS_SHARD_ATTRIBUTE,
    STATUS_UPDATED_AT_ATTRIBUTE,
    TTL_ATTRIBUTE,
)
from dlpipe.domain.shards import batch_shard, status_shard

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

# Attributes both tables carry, under one name.
_CREATED_AT = "CreatedAt"
_ERROR_MESSAGE = "ErrorMessage"
_FEED = "Feed"

JOB_ATTRIBUTES: dict[str, str] = {
    "file_id": FILE_ID_ATTRIBUTE,
    "batch_id": BATCH_ID_ATTRIBUTE,
    "status": STATUS_ATTRIBUTE,
    "entity": "Entity",
    "download_date": "DownloadDate",
    "presigned_url": "PresignedURL",
    "encrypted_aes_key": "EncryptedAESKey",
    "encoded_aes_iv": "EncodedAESIV",
    "cipher": "Cipher",
    "created_at": _CREATED_AT,
    "status_updated_at_ms": STATUS_UPDATED_AT_ATTRIBUTE,
    "ttl_epoch_s": TTL_ATTRIBUTE,
    "expected_size": "ExpectedSize",
    "expected_sha256": "ExpectedSHA256",
    "url_expires_at": "URLExpiresAt",
    "completed_at": "CompletedAt",
    "error_message": _ERROR_MESSAGE,
    "lease_owner": "LeaseOwner",
    "lease_expires_at_ms": "LeaseExpiresAt",
    "attempts": "Attempts",
    "byte_count": "ByteCount",
    "sha256": "SHA256",
    "destination_key": "DestinationKey",
    "listing_index": "ListingIndex",
    "listed_by": "ListedBy",
    "finished_by": "FinishedBy",
    "feed": _FEED,
    "revision": "Revision",
    "previous_version_id": "PreviousVersionID",
    "previous_sha256": "PreviousSHA256",
    "previous_size": "PreviousSize",
    "withdrawn_by": "WithdrawnBy",
    "revised_as": "RevisedAs",
}

BATCH_ATTRIBUTES: dict[str, str] = {
    "batch_id": BATCH_ID_ATTRIBUTE,
    "polling_date": POLLING_DATE_ATTRIBUTE,
    "status": STATUS_ATTRIBUTE,
    "start_time": "StartTime",
    "created_at": _CREATED_AT,
    "updated_at": "UpdatedAt",
    "ttl_epoch_s": TTL_ATTRIBUTE,
    "expected_files": "ExpectedFiles",
    "completed_files": "CompletedFiles",
    "failed_files": "FailedFiles",
    "timeout_at": "TimeoutAt",
    "error_message": _ERROR_MESSAGE,
    "expected_count": "ExpectedCount",
    "queued_count": "QueuedCount",
    "completed_count": "CompletedCount",
    "failed_count": "FailedCount",
    "error_count": "ErrorCount",
    "sets_truncated": "SetsTruncated",
    "outcome": "OutcomeSummary",
    "adopted_by": "AdoptedBy",
    "feed": _FEED,
    "handoff_event": "HandoffEvent",
    "handoff_type": "HandoffType",
    "handoff_problem": "HandoffProblem",
    "late_event_id": "DayLateEventID",
    "revision": "Revision",
    "revises": "Revises",
}

_INT_FIELDS = frozenset(
    {
        "status_updated_at_ms",
        "ttl_epoch_s",
        "expected_size",
        "lease_expires_at_ms",
        "attempts",
        "byte_count",
        "expected_count",
        "queued_count",
        "completed_count",
        "failed_count",
        "error_count",
        "listing_index",
        "revision",
        "previous_size",
    }
)
_SET_FIELDS = frozenset({"expected_files", "completed_files", "failed_files"})
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def expression_names(attributes: Mapping[str, str], **fields: str) -> dict[str, str]:
    """ExpressionAttributeNames: `#{name}` for each `name=field`, standing for the attribute
    that record field is stored as in `attributes` (JOB_ATTRIBUTES or BATCH_ATTRIBUTES)."""
    return {f"#{name}": attributes[field] for name, field in fields.items()}


def job_key(file_id: str) -> dict[str, AttributeValueTypeDef]:
    """The jobs table's key of `file_id`."""
    return {JOB_ATTRIBUTES["file_id"]: {"S": file_id}}


def batch_key(batch_id: str) -> dict[str, AttributeValueTypeDef]:
    """The batches table's key of `batch_id`."""
    return {BATCH_ATTRIBUTES["batch_id"]: {"S": batch_id}}


def serialize(value: Any) -> AttributeValueTypeDef:
    """One Python value as a DynamoDB AttributeValue (sets become String Sets)."""
    if isinstance(value, frozenset):
        value = set(value)
    return _serializer.serialize(value)


def _to_item(record: FileJob | Batch, names: dict[str, str]) -> dict[str, AttributeValueTypeDef]:
    item: dict[str, AttributeValueTypeDef] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        # DynamoDB has no empty sets and we store no nulls: absent means "not yet".
        # SetsTruncated is written only when true: an item without it names its files.
        if value is None or value is False or (f.name in _SET_FIELDS and not value):
            continue
        # Feed is written for a named feed only: an item without Feed is the default feed's,
        # so the default feed's items hold the contract's attributes and nothing more.
        if f.name == "feed" and value == DEFAULT_FEED_NAME:
            continue
        if isinstance(value, OutcomeSummary):
            value = value.to_json()  # a JSON string: its size is bounded and easy to measure
        if f.name == "error_message":
            # A new item's message too (a refused listing entry quotes the provider's value,
            # which may be our own token echoed back), as every update writes it.
            value = stored_error(value)
        # An enum (or an UnknownCipher) is stored as its string, byte for byte.
        as_string = f.name in ("status", "cipher")
        item[names[f.name]] = serialize(str(value) if as_string else value)
    return item


def _from_item(item: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for field_name, attribute in names.items():
        if attribute not in item:
            continue
        value = _deserializer.deserialize(item[attribute])
        if field_name in _INT_FIELDS:
            value = int(value)
        elif field_name in _SET_FIELDS:
            value = frozenset(value)
        elif field_name == "outcome":
            value = _outcome(value)
        elif field_name == "feed" and not is_feed_name(value):
            raise ValueError(f"Feed {value!r} is not a feed name")
        values[field_name] = value
    return values


def _check_feed(named: str, feed: str) -> None:
    """The key's feed and the Feed attribute must agree: keys never cross feeds."""
    if named != feed:
        raise ValueError(f"its key names feed {named!r}, its Feed attribute {feed!r}")


def _outcome(value: object) -> OutcomeSummary:
    # A damaged summary must not make the batch itself unreadable: it says so instead.
    try:
        return OutcomeSummary.from_json(str(value))
    except ValueError:
        return OutcomeSummary(cause="unreadable_summary: the stored OutcomeSummary is not valid")


ERROR_MESSAGE_MAX_CHARS = 1000  # an ErrorMessage is a line for an operator, not a dump


def stored_error(message: str) -> str:
    """`message` as an ErrorMessage is stored, on a new item or by an update: redacted
    (domain/redaction.py), then cut to ERROR_MESSAGE_MAX_CHARS."""
    return redact(message)[:ERROR_MESSAGE_MAX_CHARS]


def job_to_item(job: FileJob) -> dict[str, AttributeValueTypeDef]:
    """A FileJob as a DynamoDB item, with its index shards (read back by no record field)."""
    item = _to_item(job, JOB_ATTRIBUTES)
    item[BATCH_SHARD_ATTRIBUTE] = serialize(batch_shard(job.batch_id, job.file_id))
    shard = status_shard(job.status, job.file_id)
    if shard is not None:
        item[STATUS_SHARD_ATTRIBUTE] = serialize(shard)
    return item


def _key(item: dict[str, Any], attribute: str) -> str:
    return str(item.get(attribute, {}).get("S", "?"))


def job_from_item(item: dict[str, Any]) -> FileJob:
    """A DynamoDB item as a FileJob; CorruptRecordError if it is not one."""
    try:
        values = _from_item(item, JOB_ATTRIBUTES)
        values["status"] = JobStatus(values["status"])
        # Parsed here, never defaulted: a value naming no cipher stays as stored, marked
        # unknown, and the decrypt side ends the job `error` (unknown_cipher) before a byte.
        values["cipher"] = read_cipher(values["cipher"])
        job = FileJob(**values)
        # A key that does not parse is left to the code that reads it: nothing to compare.
        _check_feed(file_feed(job.file_id, default=job.feed), job.feed)
    except (KeyError, TypeError, ValueError) as exc:
        key = _key(item, JOB_ATTRIBUTES["file_id"])
        raise CorruptRecordError(f"job item {key!r} is not a valid job: {exc}", key=key) from exc
    return job


def batch_to_item(batch: Batch) -> dict[str, AttributeValueTypeDef]:
    """A Batch as a DynamoDB item."""
    return _to_item(batch, BATCH_ATTRIBUTES)


def batch_from_item(item: dict[str, Any]) -> Batch:
    """A DynamoDB item as a Batch; CorruptRecordError if it is not one."""
    try:
        values = _from_item(item, BATCH_ATTRIBUTES)
        values["status"] = BatchStatus(values["status"])
        batch = Batch(**values)
        _check_feed(batch_feed(batch.batch_id, default=batch.feed), batch.feed)
    except (KeyError, TypeError, ValueError) as exc:
        key = _key(item, BATCH_ATTRIBUTES["batch_id"])
        raise CorruptRecordError(
            f"batch item {key!r} is not a valid batch: {exc}", key=key
        ) from exc
    return batch


def job_row_from_index_item(item: dict[str, Any], status: JobStatus) -> JobRow:
    """A BatchIndex item of a job in `status` as a JobRow (what its projection holds)."""

    def text(field: str) -> str | None:
        value = item.get(JOB_ATTRIBUTES[field], {})
        return str(value["S"]) if "S" in value else None

    def number(field: str) -> int | None:
        value = item.get(JOB_ATTRIBUTES[field], {}).get("N")
        return int(value) if value is not None else None

    return JobRow(
        str(item[FILE_ID_ATTRIBUTE]["S"]),
        text("entity"),
        status,
        destination_key=text("destination_key"),
        byte_count=number("byte_count"),
        sha256=text("sha256"),
        error_message=text("error_message"),
        revision=number("revision"),
        revised_as=text("revised_as"),
        previous_version_id=text("previous_version_id"),
        previous_sha256=text("previous_sha256"),
        withdrawn_by=text("withdrawn_by"),
    )

"""The local stack refuses what AWS refuses, for every limit dlpipe relies on (AWS_LIMITS.md).

Each test asks the emulator to do one thing AWS would refuse. If an emulator upgrade ever
loosens one of these, this file fails, and the table in AWS_LIMITS.md is wrong until fixed.
"""

from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from dlpipe.adapters.aws import AwsClients
from dlpipe.local.provision import Provisioned

pytestmark = pytest.mark.integration

MIB = 1024 * 1024


def _code(refused: pytest.ExceptionInfo[ClientError]) -> str:
    return str(refused.value.response["Error"]["Code"])


def test_batch_get_item_refuses_more_than_100_keys(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """BatchGetItem with 101 keys is a ValidationException (dlpipe/adapters/jobs_reads.py asks 100)."""
    keys = [{"FileID": {"S": f"limit{n}-2099-01-01"}} for n in range(101)]
    with pytest.raises(ClientError) as refused:
        clients.dynamodb.batch_get_item(RequestItems={provisioned.jobs_table: {"Keys": keys}})
    assert _code(refused) == "ValidationException"


def test_an_update_expression_naming_a_reserved_word_bare_is_refused(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """`SET Status = :s` is refused as DynamoDB refuses it (Status is a reserved word)."""
    with pytest.raises(ClientError) as refused:
        clients.dynamodb.update_item(
            TableName=provisioned.jobs_table,
            Key={"FileID": {"S": "limit-reserved-2099-01-01"}},
            UpdateExpression="SET Status = :s",
            ExpressionAttributeValues={":s": {"S": "available"}},
        )
    assert _code(refused) == "ValidationException"
    assert "reserved keyword" in str(refused.value)


def test_send_message_batch_refuses_more_than_10_entries(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """SendMessageBatch with 11 entries is refused (dlpipe/adapters/queue.py sends at most 10)."""
    entries = [{"Id": str(n), "MessageBody": "{}"} for n in range(11)]
    with pytest.raises(ClientError) as refused:
        clients.sqs.send_message_batch(QueueUrl=str(provisioned.queue_url), Entries=entries)
    assert "TooManyEntriesInBatchRequest" in _code(refused)


def test_a_visibility_timeout_over_12_hours_is_refused(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """ChangeMessageVisibility beyond 43,200 s is refused, as SQS refuses it."""
    queue = clients.sqs.create_queue(QueueName=f"limit-vis-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    try:
        clients.sqs.send_message(QueueUrl=queue, MessageBody="{}")
        received = clients.sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1)["Messages"][0]
        with pytest.raises(ClientError) as refused:
            clients.sqs.change_message_visibility(
                QueueUrl=queue,
                ReceiptHandle=received["ReceiptHandle"],
                VisibilityTimeout=43_201,
            )
        assert _code(refused) in {"InvalidParameterValue", "InvalidParameterValueException"}
    finally:
        clients.sqs.delete_queue(QueueUrl=queue)


def test_a_message_over_the_queues_maximum_size_is_refused(clients: AwsClients) -> None:
    """A body one byte over a queue's MaximumMessageSize (256 KiB here) is refused."""
    queue = clients.sqs.create_queue(
        QueueName=f"limit-size-{uuid.uuid4().hex[:8]}",
        Attributes={"MaximumMessageSize": str(256 * 1024)},
    )["QueueUrl"]
    try:
        clients.sqs.send_message(QueueUrl=queue, MessageBody="x" * (256 * 1024))
        with pytest.raises(ClientError) as refused:
            clients.sqs.send_message(QueueUrl=queue, MessageBody="x" * (256 * 1024 + 1))
        assert _code(refused) in {"InvalidParameterValue", "InvalidParameterValueException"}
    finally:
        clients.sqs.delete_queue(QueueUrl=queue)


def test_a_multipart_part_under_5_mib_that_is_not_the_last_is_refused(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """Completing an upload whose first of two parts is 1 MiB fails with EntityTooSmall."""
    bucket, key = str(provisioned.destination_bucket), f"limits/{uuid.uuid4().hex}"
    upload = clients.s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    try:
        parts = []
        for number, size in ((1, MIB), (2, MIB)):
            etag = clients.s3.upload_part(
                Bucket=bucket, Key=key, UploadId=upload, PartNumber=number, Body=b"p" * size
            )["ETag"]
            parts.append({"PartNumber": number, "ETag": etag})
        with pytest.raises(ClientError) as refused:
            clients.s3.complete_multipart_upload(
                Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts}
            )
        assert _code(refused) == "EntityTooSmall"
    finally:
        clients.s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload)

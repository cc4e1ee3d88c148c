"""Which IAM actions authorize each boto operation (AWS Service Authorization Reference).

A call the code makes whose operation is missing here fails the checker: add the operation,
with the action(s) AWS checks for it, rather than guessing.
"""

from __future__ import annotations

# (boto service name, operation) -> IAM actions, all evaluated against the call's resources.
ACTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    # DynamoDB: the action carries the operation's own name.
    ("dynamodb", "GetItem"): ("dynamodb:GetItem",),
    ("dynamodb", "BatchGetItem"): ("dynamodb:BatchGetItem",),
    ("dynamodb", "PutItem"): ("dynamodb:PutItem",),
    ("dynamodb", "UpdateItem"): ("dynamodb:UpdateItem",),
    ("dynamodb", "DeleteItem"): ("dynamodb:DeleteItem",),
    ("dynamodb", "BatchWriteItem"): ("dynamodb:BatchWriteItem",),
    ("dynamodb", "Query"): ("dynamodb:Query",),
    ("dynamodb", "Scan"): ("dynamodb:Scan",),
    ("dynamodb", "DescribeTable"): ("dynamodb:DescribeTable",),
    # SQS: a batch call is authorized by its single-message action.
    ("sqs", "SendMessage"): ("sqs:SendMessage",),
    ("sqs", "SendMessageBatch"): ("sqs:SendMessage",),
    ("sqs", "ReceiveMessage"): ("sqs:ReceiveMessage",),
    ("sqs", "DeleteMessage"): ("sqs:DeleteMessage",),
    ("sqs", "DeleteMessageBatch"): ("sqs:DeleteMessage",),
    ("sqs", "ChangeMessageVisibility"): ("sqs:ChangeMessageVisibility",),
    ("sqs", "ChangeMessageVisibilityBatch"): ("sqs:ChangeMessageVisibility",),
    ("sqs", "GetQueueAttributes"): ("sqs:GetQueueAttributes",),
    ("sqs", "GetQueueUrl"): ("sqs:GetQueueUrl",),
    ("sqs", "PurgeQueue"): ("sqs:PurgeQueue",),
    # S3: multipart parts and HEAD are authorized as the whole-object actions.
    ("s3", "GetObject"): ("s3:GetObject",),
    ("s3", "HeadObject"): ("s3:GetObject",),
    # One version of an object (VersionId given): s3:GetObjectVersion (recorder.versioned).
    ("s3", "GetObject(VersionId)"): ("s3:GetObjectVersion",),
    ("s3", "HeadObject(VersionId)"): ("s3:GetObjectVersion",),
    ("s3", "PutObject"): ("s3:PutObject",),
    ("s3", "CreateMultipartUpload"): ("s3:PutObject",),
    ("s3", "UploadPart"): ("s3:PutObject",),
    ("s3", "CompleteMultipartUpload"): ("s3:PutObject",),
    ("s3", "AbortMultipartUpload"): ("s3:AbortMultipartUpload",),
    ("s3", "ListParts"): ("s3:ListMultipartUploadParts",),
    ("s3", "ListMultipartUploads"): ("s3:ListBucketMultipartUploads",),
    ("s3", "ListObjects"): ("s3:ListBucket",),
    ("s3", "ListObjectsV2"): ("s3:ListBucket",),
    ("s3", "HeadBucket"): ("s3:ListBucket",),
    ("s3", "ListObjectVersions"): ("s3:ListBucketVersions",),
    ("s3", "DeleteObject"): ("s3:DeleteObject",),
    # Secrets Manager.
    ("secretsmanager", "GetSecretValue"): ("secretsmanager:GetSecretValue",),
    ("secretsmanager", "DescribeSecret"): ("secretsmanager:DescribeSecret",),
    # SSM: the operator's listing of the feeds' parameters, authorized against the path, and
    # the functions' read of one feed's parameter.
    ("ssm", "GetParametersByPath"): ("ssm:GetParametersByPath",),
    ("ssm", "GetParameter"): ("ssm:GetParameter",),
    # Lambda: the Invoke API is the InvokeFunction action.
    ("lambda", "Invoke"): ("lambda:InvokeFunction",),
    ("lambda", "CheckpointDurableExecution"): ("lambda:CheckpointDurableExecution",),
    ("lambda", "GetDurableExecutionState"): ("lambda:GetDurableExecutionState",),
    # EventBridge: the hand-off events, authorized against the bus the entry names.
    ("events", "PutEvents"): ("events:PutEvents",),
    # STS: GetCallerIdentity needs no permission.
    ("sts", "GetCallerIdentity"): (),
}

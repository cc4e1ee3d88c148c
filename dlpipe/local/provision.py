"""Create dlpipe's tables, queues and buckets on an emulator from the definitions in terraform/."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from dlpipe.domain import schema
from dlpipe.local.events import provision_downstream
from dlpipe.local.terraform import TerraformModule, TerraformReadError

if TYPE_CHECKING:
    from dlpipe.adapters.aws import AwsClients

QUEUE_RESOURCE = "downloads"
DLQ_RESOURCE = "downloads_dlq"
# Created in AWS only with the ECS worker (count); locally always, so that local runs and
# tests exercise the routing of large files to the long-poll worker.
LARGE_QUEUE_RESOURCE = "downloads_large"
# One per named feed (for_each over var.feeds): the feed's own download queue.
FEED_QUEUE_RESOURCE = "feed_downloads"
DESTINATION_BUCKET_RESOURCE = "destination"
DEFAULT_MAX_RECEIVE_COUNT = 5
PRIVATE_KEY_SECRET_RESOURCE = "rsa_private_key"  # noqa: S105 - a Terraform label
PROVIDER_TOKEN_SECRET_RESOURCE = "provider_token"  # noqa: S105 - a Terraform label


@dataclass(frozen=True)
class TableDefinition:
    """A CreateTable request and the TTL attribute, as terraform/ defines the table."""

    name: str
    create_request: dict[str, Any]
    ttl_attribute: str | None


@dataclass(frozen=True)
class Provisioned:
    """Names and URLs of what `provision` created (or found already there)."""

    jobs_table: str
    batches_table: str
    queue_url: str | None = None
    dlq_url: str | None = None
    destination_bucket: str | None = None
    private_key_secret: str | None = None
    provider_token_secret: str | None = None
    large_queue_url: str | None = None
    # The hand-off events' stand-in consumer (dlpipe/local/events.py).
    downstream_queue_url: str | None = None
    # Where named feeds' SSM parameters live (terraform/feeds.tf's local of that name).
    feeds_parameter_path: str | None = None


def _index_keys(module: TerraformModule, index: dict[str, Any]) -> list[dict[str, str]]:
    # terraform/ writes hash_key/range_key (every 6.x provider takes them; dynamodb.tf says
    # why); key_schema blocks, the form providers >= 6.29 prefer, read the same.
    if "key_schema" in index:
        return [
            {
                "AttributeName": module.value(k["attribute_name"]),
                "KeyType": module.value(k["key_type"]),
            }
            for k in index["key_schema"]
        ]
    keys = [{"AttributeName": module.value(index["hash_key"]), "KeyType": "HASH"}]
    if "range_key" in index:
        keys.append({"AttributeName": module.value(index["range_key"]), "KeyType": "RANGE"})
    return keys


def _projection(module: TerraformModule, index: dict[str, Any]) -> dict[str, Any]:
    projection: dict[str, Any] = {"ProjectionType": module.value(index["projection_type"])}
    if "non_key_attributes" in index:
        projection["NonKeyAttributes"] = list(module.value(index["non_key_attributes"]))
    return projection


def table_definition(module: TerraformModule, label: str) -> TableDefinition:
    """Translate `aws_dynamodb_table.<label>` into a CreateTable request."""
    body = module.resource("aws_dynamodb_table", label)
    request: dict[str, Any] = {
        "TableName": module.value(body["name"]),
        "BillingMode": module.value(body.get("billing_mode", '"PROVISIONED"')),
        "AttributeDefinitions": [
            {"AttributeName": module.value(a["name"]), "AttributeType": module.value(a["type"])}
            for a in body.get("attribute", [])
        ],
        "KeySchema": _index_keys(module, body),
    }
    if request["BillingMode"] != "PAY_PER_REQUEST":
        raise TerraformReadError(f"table {label} must be PAY_PER_REQUEST")
    indexes = [
        {
            "IndexName": module.value(index["name"]),
            "KeySchema": _index_keys(module, index),
            "Projection": _projection(module, index),
        }
        for index in body.get("global_secondary_index", [])
    ]
    if indexes:
        request["GlobalSecondaryIndexes"] = indexes
    ttl_blocks = [module.value(t) for t in body.get("ttl", [])]
    ttl = next((t["attribute_name"] for t in ttl_blocks if t.get("enabled")), None)
    return TableDefinition(request["TableName"], request, ttl)


def table_definitions(module: TerraformModule) -> list[TableDefinition]:
    """Both tracking tables, jobs first."""
    return [
        table_definition(module, label) for label in (schema.JOBS_RESOURCE, schema.BATCHES_RESOURCE)
    ]


def _create_table(clients: AwsClients, table: TableDefinition) -> None:
    try:
        clients.dynamodb.create_table(**table.create_request)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceInUseException":
            raise
    clients.dynamodb.get_waiter("table_exists").wait(
        TableName=table.name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    described = clients.dynamodb.describe_time_to_live(TableName=table.name)
    ttl_on = described["TimeToLiveDescription"].get("TimeToLiveStatus") in {"ENABLED", "ENABLING"}
    # DynamoDB refuses to enable TTL twice ("TimeToLive is already enabled"): provisioning
    # again must be harmless.
    if table.ttl_attribute and not ttl_on:
        clients.dynamodb.update_time_to_live(
            TableName=table.name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
        )


def _queue_attributes(module: TerraformModule, body: dict[str, Any]) -> dict[Any, str]:
    attributes: dict[Any, str] = {}
    for hcl_name, sqs_name in (
        ("visibility_timeout_seconds", "VisibilityTimeout"),
        ("message_retention_seconds", "MessageRetentionPeriod"),
        ("receive_wait_time_seconds", "ReceiveMessageWaitTimeSeconds"),
    ):
        if hcl_name in body:
            attributes[sqs_name] = str(module.value(body[hcl_name]))
    return attributes


def _provision_queues(
    clients: AwsClients, module: TerraformModule
) -> tuple[str, str, str | None] | None:
    queues = module.resources.get("aws_sqs_queue", {})
    if QUEUE_RESOURCE not in queues or DLQ_RESOURCE not in queues:
        return None
    dlq_body = queues[DLQ_RESOURCE]
    dlq_url = clients.sqs.create_queue(
        QueueName=module.value(dlq_body["name"]), Attributes=_queue_attributes(module, dlq_body)
    )["QueueUrl"]
    redrive = _redrive_policy(clients, module, dlq_url)
    urls: dict[str, str] = {}
    for label in (QUEUE_RESOURCE, LARGE_QUEUE_RESOURCE):
        if label not in queues:
            continue
        attributes = _queue_attributes(module, queues[label]) | {"RedrivePolicy": redrive}
        urls[label] = clients.sqs.create_queue(
            QueueName=module.value(queues[label]["name"]), Attributes=attributes
        )["QueueUrl"]
    return urls[QUEUE_RESOURCE], dlq_url, urls.get(LARGE_QUEUE_RESOURCE)


def provision_feed_queue(
    clients: AwsClients, feed: str, module: TerraformModule | None = None
) -> str:
    """Create (idempotently) feed `feed`'s download queue as terraform/ defines it, dead-lettering
    to the deployment's DLQ; its URL. TerraformReadError if terraform/ defines no such queue."""
    module = module or TerraformModule.load()
    queues = module.resources.get("aws_sqs_queue", {})
    if FEED_QUEUE_RESOURCE not in queues or DLQ_RESOURCE not in queues:
        raise TerraformReadError(f"terraform/ defines no aws_sqs_queue.{FEED_QUEUE_RESOURCE}")
    body = queues[FEED_QUEUE_RESOURCE]
    dlq_url = clients.sqs.get_queue_url(QueueName=module.value(queues[DLQ_RESOURCE]["name"]))
    attributes = _queue_attributes(module, body) | {
        "RedrivePolicy": _redrive_policy(clients, module, dlq_url["QueueUrl"])
    }
    return clients.sqs.create_queue(
        QueueName=str(module.value_for(body["name"], feed)), Attributes=attributes
    )["QueueUrl"]


def _redrive_policy(clients: AwsClients, module: TerraformModule, dlq_url: str) -> str:
    dlq_arn = clients.sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    max_receive = module.variables.get("max_receive_count", DEFAULT_MAX_RECEIVE_COUNT)
    return json.dumps(
        {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": int(module.value(max_receive))}
    )


def _provision_bucket(clients: AwsClients, module: TerraformModule) -> str | None:
    buckets = module.resources.get("aws_s3_bucket", {})
    if DESTINATION_BUCKET_RESOURCE not in buckets:
        return None
    name = str(module.value(buckets[DESTINATION_BUCKET_RESOURCE]["bucket"]))
    ensure_bucket(clients, name)
    versioning = module.resources.get("aws_s3_bucket_versioning", {})
    if DESTINATION_BUCKET_RESOURCE in versioning:
        # Versioned as on AWS: a second publish of one key would be a second version, which
        # the invariant checker counts, instead of silently replacing the first.
        configuration = versioning[DESTINATION_BUCKET_RESOURCE]["versioning_configuration"]
        blocks = configuration if isinstance(configuration, list) else [configuration]
        status = str(module.value(blocks[0]["status"]))
        clients.s3.put_bucket_versioning(
            Bucket=name,
            VersioningConfiguration={"Status": status},  # type: ignore[typeddict-item]
        )
    return name


def ensure_bucket(clients: AwsClients, name: str) -> None:
    """Create bucket `name` unless it exists already."""
    try:
        clients.s3.create_bucket(Bucket=name)
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
            raise


def _provision_secret(clients: AwsClients, module: TerraformModule, label: str) -> str | None:
    secrets = module.resources.get("aws_secretsmanager_secret", {})
    if label not in secrets:
        return None
    name = str(module.value(secrets[label]["name"]))
    # Like Terraform, create the secret without a value: values never live in definitions.
    try:
        clients.secretsmanager.create_secret(Name=name)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceExistsException":
            raise
    return name


def provision(clients: AwsClients, module: TerraformModule | None = None) -> Provisioned:
    """Create (idempotently) everything dlpipe needs that terraform/ defines."""
    module = module or TerraformModule.load()
    jobs, batches = table_definitions(module)
    for table in (jobs, batches):
        _create_table(clients, table)
    queues = _provision_queues(clients, module)
    return Provisioned(
        jobs_table=jobs.name,
        batches_table=batches.name,
        queue_url=queues[0] if queues else None,
        dlq_url=queues[1] if queues else None,
        destination_bucket=_provision_bucket(clients, module),
        private_key_secret=_provision_secret(clients, module, PRIVATE_KEY_SECRET_RESOURCE),
        provider_token_secret=_provision_secret(clients, module, PROVIDER_TOKEN_SECRET_RESOURCE),
        large_queue_url=queues[2] if queues else None,
        downstream_queue_url=provision_downstream(clients),
        feeds_parameter_path=str(module.value("${local.feeds_parameter_path}")),
    )

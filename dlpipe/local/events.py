"""The local stand-in for a downstream consumer of the hand-off events: on moto's EventBridge, a
rule on the default bus matching source `dlpipe` that delivers to an SQS queue, as the example
in terraform/events.tf does on AWS (dlpipe/domain/handoff_events.py: the events)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dlpipe.config import DEFAULT_EVENT_BUS
from dlpipe.domain.handoff_events import SOURCE

if TYPE_CHECKING:
    from dlpipe.adapters.aws import AwsClients

DOWNSTREAM_QUEUE_NAME = "dlpipe-downstream-example"
HANDOFF_RULE_NAME = "dlpipe-handoff-example"
# Every dlpipe event: a consumer that wants only completed days adds "detail-type".
HANDOFF_PATTERN = {"source": [SOURCE]}


def provision_downstream(clients: AwsClients, bus: str = DEFAULT_EVENT_BUS) -> str:
    """Create (idempotently) the downstream queue and the rule delivering dlpipe's events to it;
    the queue's URL."""
    url = clients.sqs.create_queue(QueueName=DOWNSTREAM_QUEUE_NAME)["QueueUrl"]
    arn = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    clients.events.put_rule(
        Name=HANDOFF_RULE_NAME, EventBusName=bus, EventPattern=json.dumps(HANDOFF_PATTERN)
    )
    clients.events.put_targets(
        Rule=HANDOFF_RULE_NAME,
        EventBusName=bus,
        Targets=[{"Id": "downstream-queue", "Arn": arn}],
    )
    return url


def received_events(
    clients: AwsClients, queue_url: str, *, wait_seconds: int = 1, rounds: int = 3
) -> list[dict[str, Any]]:
    """The events waiting on the downstream queue (each an EventBridge envelope with its
    `detail`), received and deleted; empty once `rounds` receives in a row found none."""
    events: list[dict[str, Any]] = []
    empty = 0
    while empty < rounds:
        answer = clients.sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds
        )
        messages = answer.get("Messages", [])
        empty = 0 if messages else empty + 1
        for message in messages:
            events.append(json.loads(message["Body"]))
            clients.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return events

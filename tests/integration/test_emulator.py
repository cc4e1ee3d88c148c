"""The embedded emulator: tables from the HCL, DynamoDB strictness, expired presigned URLs."""

from __future__ import annotations

import threading
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import requests
from botocore.exceptions import ClientError

from dlpipe.aws import AwsClients
from dlpipe.local.emulator import Emulator
from dlpipe.local.provision import Provisioned, table_definitions
from dlpipe.local.terraform import TerraformModule
from records import schema

pytestmark = pytest.mark.integration


def _describe(clients: AwsClients, name: str) -> dict:
    return clients.dynamodb.describe_table(TableName=name)["Table"]


@pytest.mark.parametrize(
    ("label", "hash_key", "indexes", "types"),
    [
        (
            schema.JOBS_RESOURCE,
            schema.JOBS_HASH_KEY,
            schema.JOBS_INDEXES,
            schema.JOBS_KEY_ATTRIBUTE_TYPES,
        ),
        (
            schema.BATCHES_RESOURCE,
            schema.BATCHES_HASH_KEY,
            schema.BATCHES_INDEXES,
            schema.BATCHES_KEY_ATTRIBUTE_TYPES,
        ),
    ],
)
def test_table_on_emulator_matches_the_hcl_and_the_code(
    clients: AwsClients,
    provisioned: Provisioned,
    label: str,
    hash_key: str,
    indexes: dict,
    types: dict,
) -> None:
    """DescribeTable shows the HCL's keys, attribute types, GSIs (projection ALL) and TTL."""
    module = TerraformModule.load()
    definition = {d.create_request["TableName"]: d for d in table_definitions(module)}
    name = module.value(module.resource("aws_dynamodb_table", label)["name"])
    table = _describe(clients, name)
    assert table["KeySchema"] == [{"AttributeName": hash_key, "KeyType": "HASH"}]
    assert {a["AttributeName"]: a["AttributeType"] for a in table["AttributeDefinitions"]} == types
    described = {
        g["IndexName"]: (
            tuple(k["AttributeName"] for k in g["KeySchema"]),
            g["Projection"]["ProjectionType"],
        )
        for g in table["GlobalSecondaryIndexes"]
    }
    assert described == {name: (keys, "ALL") for name, keys in indexes.items()}
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    ttl = clients.dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == (
        "ENABLED",
        definition[name].ttl_attribute,
    )


def test_provisioning_twice_is_harmless(clients: AwsClients, provisioned: Provisioned) -> None:
    """provision is idempotent: a second run finds everything and changes nothing."""
    from dlpipe.local.provision import provision

    assert provision(clients) == provisioned


def test_raw_conditional_update_race_has_one_winner_over_many_rounds(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """8 threads racing one raw conditional UpdateItem, 150 rounds: never two winners."""
    table = provisioned.jobs_table
    for round_no in range(150):
        key = {"FileID": {"S": f"race{round_no}-{threading.get_ident()}-2099-01-01"}}
        clients.dynamodb.put_item(
            TableName=table,
            Item={**key, "Status": {"S": "available"}, "StatusUpdatedAt": {"N": "1"}},
        )
        wins: list[int] = []
        barrier = threading.Barrier(8)

        def contend(
            i: int, key: dict = key, barrier: threading.Barrier = barrier, wins: list[int] = wins
        ) -> None:
            barrier.wait()
            try:
                clients.dynamodb.update_item(
                    TableName=table,
                    Key=key,
                    UpdateExpression="SET #s = :d, #o = :o",
                    ConditionExpression="#s = :a",
                    ExpressionAttributeNames={"#s": "Status", "#o": "LeaseOwner"},
                    ExpressionAttributeValues={
                        ":a": {"S": "available"},
                        ":d": {"S": "downloading"},
                        ":o": {"S": str(i)},
                    },
                )
                wins.append(i)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise

        threads = [threading.Thread(target=contend, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Raw items are not valid jobs: leave none behind in the shared table.
        clients.dynamodb.delete_item(TableName=table, Key=key)
        assert len(wins) == 1, f"round {round_no}: {len(wins)} winners"


def _with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update(changes)
    return urlunsplit(parts._replace(query=urlencode(query)))


def test_expired_presigned_url_is_refused_like_s3_and_a_live_one_works(
    clients: AwsClients, aws_env: dict
) -> None:
    """A presigned GET past its expiry gets 403 AccessDenied "Request has expired"."""
    clients.s3.create_bucket(Bucket="dlpipe-test-presign")
    clients.s3.put_object(Bucket="dlpipe-test-presign", Key="k", Body=b"payload")
    live = clients.s3.generate_presigned_url(
        "get_object", Params={"Bucket": "dlpipe-test-presign", "Key": "k"}, ExpiresIn=600
    )
    assert requests.get(live, timeout=10).content == b"payload"
    if "X-Amz-Date" in live:
        expired = _with_query(live, **{"X-Amz-Date": "20200101T000000Z", "X-Amz-Expires": "60"})
    else:
        expired = _with_query(live, Expires="1577836800")
    refused = requests.get(expired, timeout=10)
    assert refused.status_code == 403
    assert "Request has expired" in refused.text


def test_emulator_on_a_taken_port_fails_with_a_clear_error(emulator: Emulator) -> None:
    """Asking for a port already in use raises EmulatorError, not a hang."""
    from dlpipe.local.emulator import EmulatorError

    second = Emulator(port=emulator.port or 0)
    with pytest.raises(EmulatorError, match="failed to start"):
        second.start()
    assert second.pid is None

"""The local AWS: tables from the HCL on DynamoDB Local, its strictness, loopback only, expired URLs."""

from __future__ import annotations

import threading
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import requests
from botocore.exceptions import ClientError

from dlpipe.adapters.aws import AwsClients
from dlpipe.domain import schema
from dlpipe.local.dynamodb_local import DynamoDBLocal, DynamoDBLocalError
from dlpipe.local.emulator import Emulator, EmulatorError, LocalAws
from dlpipe.local.provision import Provisioned, table_definitions
from dlpipe.local.terraform import TerraformModule

pytestmark = pytest.mark.integration


def _describe(clients: AwsClients, name: str) -> dict:
    return clients.dynamodb.describe_table(TableName=name)["Table"]


@pytest.mark.parametrize(
    ("label", "hash_key", "indexes", "types", "projections"),
    [
        (
            schema.JOBS_RESOURCE,
            schema.JOBS_HASH_KEY,
            schema.JOBS_INDEXES,
            schema.JOBS_KEY_ATTRIBUTE_TYPES,
            schema.JOBS_PROJECTIONS,
        ),
        (
            schema.BATCHES_RESOURCE,
            schema.BATCHES_HASH_KEY,
            schema.BATCHES_INDEXES,
            schema.BATCHES_KEY_ATTRIBUTE_TYPES,
            schema.BATCHES_PROJECTIONS,
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
    projections: dict,
) -> None:
    """DescribeTable shows the HCL's keys, attribute types, GSIs (keys, projection) and TTL."""
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
            tuple(g["Projection"].get("NonKeyAttributes", [])),
        )
        for g in table["GlobalSecondaryIndexes"]
    }
    assert described == {name: (keys, *projections[name]) for name, keys in indexes.items()}
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


def test_emulator_on_a_taken_port_fails_with_a_clear_error(emulator: LocalAws) -> None:
    """Asking moto for a port already in use raises EmulatorError, not a hang."""
    second = Emulator(port=emulator.moto.port or 0)
    with pytest.raises(EmulatorError, match="failed to start"):
        second.start()
    assert second.pid is None


def test_dynamodb_local_on_a_taken_port_fails_with_a_clear_error(emulator: LocalAws) -> None:
    """Asking DynamoDB Local for a port already in use raises DynamoDBLocalError, not a hang."""
    second = DynamoDBLocal(port=emulator.dynamodb.port or 0)
    with pytest.raises(DynamoDBLocalError, match="failed to start"):
        second.start()
    assert second.pid is None


def test_both_children_listen_on_loopback_only(emulator: LocalAws) -> None:
    """moto and DynamoDB Local (whose own launcher binds every interface) listen on 127.0.0.1
    and nowhere else."""
    import psutil

    for name, pid in emulator.pids.items():
        assert pid is not None, name
        listening = [
            c.laddr
            for c in psutil.Process(pid).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        ]
        assert listening, f"{name} listens nowhere"
        assert {addr.ip.removeprefix("::ffff:") for addr in listening} == {"127.0.0.1"}, (
            name,
            listening,
        )


def test_dynamodb_is_served_by_dynamodb_local_not_moto(
    clients: AwsClients, emulator: LocalAws
) -> None:
    """The tables live on DynamoDB Local; a DynamoDB call that reaches moto is refused."""
    assert clients.dynamodb.meta.endpoint_url == emulator.dynamodb_endpoint_url
    misrouted = requests.post(
        emulator.endpoint_url,
        data="{}",
        headers={
            "X-Amz-Target": "DynamoDB_20120810.ListTables",
            "Content-Type": "application/x-amz-json-1.0",
        },
        timeout=10,
    )
    assert misrouted.status_code == 400
    assert "AWS_ENDPOINT_URL_DYNAMODB" in misrouted.text


def test_a_batch_item_over_400_kb_is_refused_as_dynamodb_refuses_it(
    clients: AwsClients, provisioned: Provisioned
) -> None:
    """An UpdateItem that would grow a batch item past DynamoDB's 400 KB limit is refused with
    DynamoDB's ValidationException, and the item keeps its previous size (moto accepted 683 KiB)."""
    key = {"BatchID": {"S": "batch-2099-12-31-oversize"}}
    clients.dynamodb.put_item(
        TableName=provisioned.batches_table,
        Item={**key, "PollingDate": {"S": "2099-12-31"}, "Status": {"S": "queued"}},
    )
    # 15,000 FileIDs of ~28 bytes: ~420 KB in one String Set, as a large day's ExpectedFiles.
    file_ids = [f"entity{n:06d}-per-region-2099-12-31" for n in range(15_000)]
    try:
        with pytest.raises(ClientError) as refused:
            clients.dynamodb.update_item(
                TableName=provisioned.batches_table,
                Key=key,
                UpdateExpression="ADD ExpectedFiles :ids",
                ExpressionAttributeValues={":ids": {"SS": file_ids}},
            )
        error = refused.value.response["Error"]
        assert error["Code"] == "ValidationException"
        assert "maximum allowed size" in error["Message"]
        item = clients.dynamodb.get_item(TableName=provisioned.batches_table, Key=key)["Item"]
        assert "ExpectedFiles" not in item
    finally:
        clients.dynamodb.delete_item(TableName=provisioned.batches_table, Key=key)


def test_local_aws_whose_moto_cannot_start_stops_its_dynamodb_local(emulator: LocalAws) -> None:
    """moto on a taken port: LocalAws raises EmulatorError and stops the DynamoDB Local it had
    started beside it (`dlpipe local up --port <taken>` left an orphan JVM behind)."""
    second = LocalAws(port=emulator.moto.port or 0, dynamodb_port=0)
    with pytest.raises(EmulatorError, match="failed to start"):
        second.start()
    assert second.pids == {"moto": None, "dynamodb-local": None}

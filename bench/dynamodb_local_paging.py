"""DynamoDB Local's paging: why every BatchIndex Query carries a Limit (QUERY_PAGE_ITEMS).

    python bench/dynamodb_local_paging.py [--jobs 100000] [--limits 0,1000] [--json out.json]

A fresh DynamoDB Local (dlpipe/local/dynamodb_local.py, in memory), one table shaped like
data-download-jobs (FileID key; BatchIndex = BatchID + Status, projection ALL), N items of
~1.3 KB in one batch partition, all `completed`. Then the completion check's count, as
JobsTable.count_by_batch sends it (Select=COUNT, the TTL filter, paged to the end), once per
page Limit (0 = none). Printed per Limit: pages, wall seconds, and the first, middle and last
page's seconds. Without a Limit, DynamoDB Local reads every remaining row of the partition
for each page (its page time falls as the count nears the end: O(rows left) a page, so the
whole count is quadratic); AWS pages in constant time, so the figures are the emulator's.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import time
from typing import Any

import boto3
from common import write_json

from dlpipe.local.dynamodb_local import DynamoDBLocal

TABLE = "jobs"
PAD = "x" * 1200  # brings an item to ~1.3 KB, as a real job item


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--limits", default="0,1000", help="page Limits; 0 = none")
    parser.add_argument("--json")
    args = parser.parse_args()
    limits = [int(x) for x in args.limits.split(",")]
    server = DynamoDBLocal()
    url = server.start()
    try:
        client = boto3.client(
            "dynamodb",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        load_s = load(client, args.jobs)
        print(f"{args.jobs:,} items loaded in {load_s:.1f} s")
        rows = [count(client, args.jobs, limit) for limit in limits]
    finally:
        server.stop()
    write_json(args.json, {"jobs": args.jobs, "load_s": load_s, "counts": rows})


def load(client: Any, n: int) -> float:
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": a, "AttributeType": "S"} for a in ("FileID", "BatchID", "Status")
        ],
        KeySchema=[{"AttributeName": "FileID", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "BatchIndex",
                "KeySchema": [
                    {"AttributeName": "BatchID", "KeyType": "HASH"},
                    {"AttributeName": "Status", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    started = time.perf_counter()

    def put(first: int) -> None:
        for start in range(first, min(first + 1000, n), 25):
            client.batch_write_item(
                RequestItems={
                    TABLE: [
                        {"PutRequest": {"Item": item(i)}} for i in range(start, min(start + 25, n))
                    ]
                }
            )

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(0, n, 1000)))
    return time.perf_counter() - started


def item(i: int) -> dict[str, Any]:
    return {
        "FileID": {"S": f"entity{i:06d}-2026-02-28"},
        "BatchID": {"S": "batch-1"},
        "Status": {"S": "completed"},
        "Pad": {"S": PAD},
    }


def count(client: Any, n: int, limit: int) -> dict[str, Any]:
    request: dict[str, Any] = {
        "TableName": TABLE,
        "IndexName": "BatchIndex",
        "KeyConditionExpression": "#batch = :batch AND #status = :status",
        "FilterExpression": "attribute_not_exists(#ttl) OR #ttl >= :now_s",
        "ExpressionAttributeNames": {"#batch": "BatchID", "#status": "Status", "#ttl": "ttl"},
        "ExpressionAttributeValues": {
            ":batch": {"S": "batch-1"},
            ":status": {"S": "completed"},
            ":now_s": {"N": str(int(time.time()))},
        },
        "Select": "COUNT",
        "ReturnConsumedCapacity": "TOTAL",
    }
    if limit:
        request["Limit"] = limit
    pages: list[float] = []
    counted, capacity = 0, 0.0
    started = time.perf_counter()
    while True:
        page_started = time.perf_counter()
        page = client.query(**request)
        pages.append(time.perf_counter() - page_started)
        counted += page["Count"]
        capacity += page["ConsumedCapacity"]["CapacityUnits"]
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    wall = time.perf_counter() - started
    if counted != n:
        raise SystemExit(f"counted {counted} of {n}")
    row = {
        "limit": limit or None,
        "pages": len(pages),
        "wall_s": round(wall, 2),
        "first_page_s": round(pages[0], 3),
        "middle_page_s": round(pages[len(pages) // 2], 3),
        "last_page_s": round(pages[-1], 3),
        "rcu": capacity,
    }
    label = f"Limit {limit}" if limit else "no Limit"
    print(
        f"{label:>11}: {row['pages']} pages, {row['wall_s']} s, page s first/middle/last "
        f"{row['first_page_s']}/{row['middle_page_s']}/{row['last_page_s']}, {capacity} RCU"
    )
    return row


if __name__ == "__main__":
    main()

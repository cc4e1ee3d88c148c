"""`dlpipe batch audit` checks the file lists beside a day's manifest as `dlpipe handoff show`
does (the write-manifest step's day, moto S3 and DynamoDB Local): a JSON Lines file list whose
line was edited by hand is named, exit 1."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_manifest_audit import Day, _audit, day
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["day", "dlpipe_cli", "no_scan", "world"]  # fixtures used by the test below


def test_the_audit_names_a_file_list_line_edited_by_hand(
    world: World, dlpipe_cli: CliRunner, day: Day
) -> None:
    assert _audit(world, dlpipe_cli) == (0, [])
    prefix, _, name = day.manifest_key.rpartition("/")
    listed = f"{prefix}/files/{name.removesuffix('.json')}.jsonl"
    body = world.clients.s3.get_object(Bucket=day.bucket, Key=listed)["Body"].read()
    records = [json.loads(line) for line in body.splitlines()]
    records[0]["size"] += 1
    edited = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    world.clients.s3.put_object(Bucket=day.bucket, Key=listed, Body=edited)
    assert _audit(world, dlpipe_cli) == (
        1,
        [
            f"{world.day} default: file list {listed} line 1: file_id {records[0]['file_id']}"
            " differs from the manifest's entry (size)"
        ],
    )

"""`dlpipe handoff show` and `show_day` check the two file lists a consumer reads instead of the
manifest (the JSON Lines file list, the Redshift COPY manifest) against the manifest's entries:
days the real manifest store wrote into moto's versioned bucket, then a list edited by hand."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.handoff import HandoffError, show_day, wait_for_day
from tests.e2e.test_handoff_commands import Bucket, _dlpipe, bucket
from tests.support import unique_day

pytestmark = pytest.mark.e2e
__all__ = ["bucket"]  # the fixture used below


def _keys(day: str, manifest_key: str) -> tuple[str, str]:
    """The day's JSON Lines file list and COPY manifest, beside its manifest."""
    prefix, _, name = manifest_key.rpartition("/")
    batch = name.removesuffix(".json")
    return f"{prefix}/files/{batch}.jsonl", f"{prefix}/{batch}.copy.json"


def _lines(clients: AwsClients, bucket: Bucket, key: str) -> list[dict[str, object]]:
    body = clients.s3.get_object(Bucket=bucket.name, Key=key)["Body"].read()
    return [json.loads(line) for line in body.splitlines()]


def _jsonl(records: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _problems(clients: AwsClients, bucket: Bucket, day: str) -> tuple[str, ...]:
    return show_day("default", day, s3_client=clients.s3, bucket=bucket.name).problems


def _drop_line(rs: list[dict[str, object]]) -> list[dict[str, object]]:
    return rs[:1] + rs[2:]


def _other_sha(rs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [rs[0], {**rs[1], "sha256": "0" * 64}, rs[2]]


def _other_version(rs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [rs[0], {**rs[1], "version_id": "elsewhere"}, rs[2]]


def _extra_line(rs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [*rs, {**rs[2], "file_id": "intruder", "s3_uri": "s3://elsewhere/x"}]


def _repeated_line(rs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [*rs, rs[0]]


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (_drop_line, "lacks 1 of the manifest's 3 entries (file_id hand1-"),
        (_other_sha, "line 2: file_id hand1-{day} differs from the manifest's entry (sha256)"),
        (
            _other_version,
            "line 2: file_id hand1-{day} differs from the manifest's entry (version_id)",
        ),
        (_extra_line, "line 4: file_id 'intruder' is not one of the manifest's entries"),
        (_repeated_line, "line 4: file_id hand0-{day} listed again"),
    ],
)
def test_show_names_a_file_list_edited_by_hand(
    bucket: Bucket,
    clients: AwsClients,
    edit: Callable[[list[dict[str, object]]], list[dict[str, object]]],
    named: str,
) -> None:
    """The untouched day verifies; its file list edited one way is one line naming it."""
    day = unique_day()
    key, _ = bucket.day(day, "completed")
    listed, _ = _keys(day, key)
    assert _problems(clients, bucket, day) == ()
    bucket.put(listed, _jsonl(edit(_lines(clients, bucket, listed))))
    (problem,) = _problems(clients, bucket, day)
    assert problem.startswith(f"file list {listed}"), problem
    assert named.format(day=day) in problem, problem


def test_show_names_a_deleted_file_list_and_copy_manifest(
    bucket: Bucket, clients: AwsClients
) -> None:
    day = unique_day()
    key, _ = bucket.day(day, "completed")
    listed, copy = _keys(day, key)
    clients.s3.delete_object(Bucket=bucket.name, Key=listed)
    clients.s3.delete_object(Bucket=bucket.name, Key=copy)
    assert _problems(clients, bucket, day) == (
        f"file list {listed} missing",
        f"COPY manifest {copy} missing",
    )


def test_show_names_a_copy_manifest_edited_by_hand_exit_1(
    bucket: Bucket, clients: AwsClients
) -> None:
    """A COPY manifest whose entry has another content_length, or that lacks an entry: a line
    each on stderr, exit 1 (untrusted), as the untouched day exits 0."""
    day = unique_day()
    key, files = bucket.day(day, "completed")
    _, copy = _keys(day, key)
    run = _dlpipe(bucket, "show", "--date", day)
    assert (run.returncode, run.stderr) == (0, "")
    doc = json.loads(clients.s3.get_object(Bucket=bucket.name, Key=copy)["Body"].read())
    doc["entries"][0]["meta"]["content_length"] += 1
    del doc["entries"][2]
    bucket.put(copy, json.dumps(doc).encode())
    run = _dlpipe(bucket, "show", "--date", day)
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    url = f"s3://{bucket.name}/{files[0]}"
    assert run.stderr.splitlines() == [
        f"{day} default: COPY manifest {copy} entry 1: url {url} differs from the manifest's"
        " entry (meta)",
        f"{day} default: COPY manifest {copy} lacks 1 of the manifest's 3 entries"
        f" (url s3://{bucket.name}/{files[2]})",
    ]


def test_a_copy_manifest_for_a_day_without_files_is_named(
    bucket: Bucket, clients: AwsClients
) -> None:
    """A day without files has an (empty) file list and no COPY manifest: one put there by
    hand is named."""
    day = unique_day()
    key, _ = bucket.day(day, "failed", files=0)
    _, copy = _keys(day, key)
    assert _problems(clients, bucket, day) == ()
    bucket.put(copy, b'{"entries":[]}\n')
    assert _problems(clients, bucket, day) == (
        f"COPY manifest {copy} exists for a day without files",
    )


def _edit_copy_manifest(clients: AwsClients, bucket: Bucket, copy: str) -> None:
    doc = json.loads(clients.s3.get_object(Bucket=bucket.name, Key=copy)["Body"].read())
    doc["entries"][0]["meta"]["content_length"] += 1
    bucket.put(copy, json.dumps(doc).encode())


@pytest.mark.parametrize("edited", ["file list", "COPY manifest"])
def test_wait_verify_is_not_ready_for_a_day_whose_list_was_edited(
    bucket: Bucket, clients: AwsClients, edited: str
) -> None:
    """A consumer that waits with --verify (the README's sensors) is never told "ready" for a
    day whose JSON Lines file list or COPY manifest was edited: exit 1 in one line naming the
    list, and wait_for_day(verify=True) raises; plain `wait` reads only pointer and manifest."""
    day = unique_day()
    key, _ = bucket.day(day, "completed")
    listed, copy = _keys(day, key)
    if edited == "file list":
        bucket.put(listed, _jsonl(_drop_line(_lines(clients, bucket, listed))))
    else:
        _edit_copy_manifest(clients, bucket, copy)
    assert _dlpipe(bucket, "wait", "--date", day).returncode == 0
    run = _dlpipe(bucket, "wait", "--date", day, "--verify")
    assert run.returncode == 1, run.stderr
    assert run.stdout == ""
    (line,) = run.stderr.splitlines()
    assert "the completed day does not verify" in line, line
    assert edited in line, line
    with pytest.raises(HandoffError, match=edited):
        wait_for_day("default", day, s3_client=clients.s3, bucket=bucket.name, verify=True)

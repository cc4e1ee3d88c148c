"""`dlpipe handoff wait|show` (the console script) and the consumer API against the emulator:
days whose manifests and pointers the real manifest store wrote into moto's versioned bucket,
over objects published there, then tampered with."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.manifest_store import S3ManifestStore
from dlpipe.domain.manifest import DayPointer, ManifestHeader, PublishedFile
from dlpipe.domain.model import make_batch_id
from dlpipe.handoff import DayState, HandoffError, ready_days, show_day, wait_for_day
from dlpipe.local.provision import Provisioned
from tests.support import unique_day

pytestmark = pytest.mark.e2e
DLPIPE = Path(sys.executable).with_name("dlpipe")


@dataclass
class Bucket:
    """The destination bucket, and the keys this test wrote (every version deleted after)."""

    clients: AwsClients
    name: str
    keys: list[str] = field(default_factory=list)

    def put(self, key: str, body: bytes, sha256: str | None = None) -> None:
        metadata = {"sha256": sha256 or hashlib.sha256(body).hexdigest()}
        self.clients.s3.put_object(Bucket=self.name, Key=key, Body=body, Metadata=metadata)
        self.keys.append(key)

    def day(self, day: str, status: str, files: int = 3) -> tuple[str, list[str]]:
        """A day of `files` published files whose batch ended `status`: its manifest and
        pointer written by the manifest store; the manifest's key and the files' keys."""
        published = []
        for n in range(files):
            body = f"file {n} of {day}".encode()
            key = f"hand{n}/{day}/hand{n}-{day}"
            self.put(key, body)
            sha = hashlib.sha256(body).hexdigest()
            published.append(PublishedFile(f"hand{n}-{day}", f"hand{n}", key, len(body), sha))
        batch = make_batch_id(day, str(uuid.uuid4()))
        header = ManifestHeader(
            "default", day, batch, status, files, files if status == "completed" else 0,
            0 if status == "completed" else files, 0, "2026-03-01T06:00:00.000Z",
            "2026-03-01T06:20:00.000Z",
        )  # fmt: skip
        store = S3ManifestStore(self.clients.s3, self.name)
        ref = store.write(header, published)
        current = store.read_pointer("default", day)
        pointer = DayPointer(
            "default", day, batch, status, header.created_at, header.finished_at, ref.key,
            ref.version_id, ref.sha256, ref.size,
        )  # fmt: skip
        assert store.put_pointer(pointer, etag=current[1] if current else None)
        self.keys += [ref.key, f"_dlpipe/manifests/default/{day}/latest.json"]
        return ref.key, [f.key for f in published]


@pytest.fixture
def bucket(clients: AwsClients, provisioned: Provisioned) -> Iterator[Bucket]:
    written = Bucket(clients, str(provisioned.destination_bucket))
    yield written
    for key in set(written.keys):
        found = clients.s3.list_object_versions(Bucket=written.name, Prefix=key)
        for version in [*found.get("Versions", []), *found.get("DeleteMarkers", [])]:
            if version["Key"] == key:
                clients.s3.delete_object(
                    Bucket=written.name, Key=key, VersionId=version["VersionId"]
                )


def _dlpipe(bucket: Bucket, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _FEED_SOURCES}
    env["DLPIPE_DEST_BUCKET"] = bucket.name
    return subprocess.run(
        [str(DLPIPE), "handoff", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


_FEED_SOURCES = ("DLPIPE_FEEDS_FILE", "DLPIPE_FEEDS_PARAMETER_PATH")  # the default feed alone


def _one_line(run: subprocess.CompletedProcess[str], prefix: str = "dlpipe: ") -> str:
    """stderr's only line, after checking no traceback was printed and its start (an error
    line's `dlpipe: `; `show` names each problem as `batch audit` does, `{date} {feed}: `)."""
    assert "Traceback" not in run.stderr, run.stderr[-1500:]
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(prefix), line
    return line


def test_wait_on_a_completed_day_exits_0_printing_its_manifest_uri(bucket: Bucket) -> None:
    day = unique_day()
    key, _ = bucket.day(day, "completed")
    run = _dlpipe(bucket, "wait", "--date", day)
    # The manifest's URI, then its JSON Lines file list's (the manifest names it).
    batch = key.rsplit("/", 1)[1].removesuffix(".json")
    file_list = f"{key.rsplit('/', 1)[0]}/files/{batch}.jsonl"
    expected = f"s3://{bucket.name}/{key}\ns3://{bucket.name}/{file_list}\n"
    assert (run.returncode, run.stdout, run.stderr) == (0, expected, "")


def test_wait_on_a_failed_day_exits_3_with_one_line(bucket: Bucket) -> None:
    day = unique_day()
    key, _ = bucket.day(day, "failed")
    run = _dlpipe(bucket, "wait", "--date", day, "--timeout", "30")
    line = _one_line(run)
    assert run.returncode == 3, run.stderr
    assert f"day {day} failed" in line
    assert f"s3://{bucket.name}/{key}" in line


def test_wait_on_a_timed_out_day_exits_4(bucket: Bucket) -> None:
    day = unique_day()
    bucket.day(day, "timeout")
    run = _dlpipe(bucket, "wait", "--date", day)
    assert (run.returncode, "timed out" in _one_line(run)) == (4, True), run.stderr


def test_wait_with_no_day_yet_exits_5_after_its_timeout(bucket: Bucket) -> None:
    """No manifest by the end of its timeout: exit 5 and one line (that it looks every interval
    until the timeout is tests/unit/services/test_handoff.py's, on a virtual clock)."""
    day = unique_day()
    run = _dlpipe(bucket, "wait", "--date", day, "--timeout", "1", "--interval", "1")
    assert run.returncode == 5, run.stderr
    assert (
        _one_line(run) == f"dlpipe: feed default's day {day} has no manifest yet (no latest.json)"
    )


def test_show_verifies_every_object_then_names_a_tampered_one(bucket: Bucket) -> None:
    """All three objects verify: exit 0, `3 of 3`; one written over: exit 1, it is named."""
    day = unique_day()
    key, files = bucket.day(day, "completed")
    run = _dlpipe(bucket, "show", "--date", day)
    assert (run.returncode, run.stderr) == (0, "")
    assert f"manifest   s3://{bucket.name}/{key}" in run.stdout
    assert "verified   3 of 3 objects" in run.stdout
    bucket.put(files[1], b"other bytes")
    run = _dlpipe(bucket, "show", "--date", day)
    assert run.returncode == 1
    assert "verified   2 of 3 objects" in run.stdout
    assert _one_line(run, f"{day} default: object {files[1]} changed: version ")


def test_wait_verify_answers_ready_only_for_a_day_that_verifies(
    bucket: Bucket, clients: AwsClients
) -> None:
    """`wait --verify` on a day whose objects verify: exit 0 with the URIs, as `wait`. One
    object written over: plain `wait` still says ready (it reads the pointer and manifest
    alone), `wait --verify` exits 1 in one line naming the object; wait_for_day(verify=True)
    raises HandoffError naming it."""
    day = unique_day()
    key, files = bucket.day(day, "completed")
    run = _dlpipe(bucket, "wait", "--date", day, "--verify")
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.startswith(f"s3://{bucket.name}/{key}\n")
    bucket.put(files[2], b"other bytes")
    assert _dlpipe(bucket, "wait", "--date", day).returncode == 0
    run = _dlpipe(bucket, "wait", "--date", day, "--verify")
    line = _one_line(run)
    assert run.returncode == 1, run.stderr
    assert f"the completed day does not verify: object {files[2]} changed" in line
    assert run.stdout == ""
    with pytest.raises(HandoffError, match=f"object {re.escape(files[2])} changed"):
        wait_for_day("default", day, s3_client=clients.s3, bucket=bucket.name, verify=True)


def test_show_names_a_manifest_rewritten_behind_the_pointer(bucket: Bucket) -> None:
    day = unique_day()
    key, _ = bucket.day(day, "completed")
    bucket.put(key, b"{}")
    run = _dlpipe(bucket, "show", "--date", day)
    assert run.returncode == 1
    assert _one_line(run, f"{day} default: ") == (
        f"{day} default: manifest {key} does not verify (SHA-256 or size differs)"
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("wait", "--date", "2026-02-30"), "'2026-02-30' is not a date"),
        (("show", "--date", "28/02/2026"), "'28/02/2026' is not a date"),
        (("wait", "--date", "2026-02-28", "--feed", "vendor-z"), "'vendor-z' is not a configured"),
        (("show", "--date", "2026-02-28", "--feed", "Bad!"), "'Bad!' is not a feed name"),
    ],
)
def test_a_bad_date_or_feed_is_one_line_exit_2(
    bucket: Bucket, args: tuple[str, ...], named: str
) -> None:
    run = _dlpipe(bucket, *args)
    assert (run.returncode, named in _one_line(run)) == (2, True), run.stderr


def test_the_python_api_answers_as_the_commands(bucket: Bucket, clients: AwsClients) -> None:
    """wait_for_day and show_day on the caller's client and bucket: ready with the URI, then
    the tampered object named."""
    day = unique_day()
    key, files = bucket.day(day, "completed")
    found = wait_for_day("default", day, s3_client=clients.s3, bucket=bucket.name)
    assert (found.state, found.ready) == (DayState.COMPLETED, True)
    assert found.manifest_uri == f"s3://{bucket.name}/{key}"
    assert show_day("default", day, s3_client=clients.s3, bucket=bucket.name).ok
    bucket.put(files[0], b"other", sha256="0" * 64)
    checked = show_day("default", day, s3_client=clients.s3, bucket=bucket.name)
    assert (checked.ok, checked.verified, checked.entries) == (False, 2, 3)
    assert checked.problems[0].startswith(f"object {files[0]} changed")
    later = unique_day()
    nothing = wait_for_day("default", later, s3_client=clients.s3, bucket=bucket.name)
    assert nothing.state is DayState.NOT_YET


def test_ready_days_hands_on_every_completed_day_up_to_the_first_not_settled(
    bucket: Bucket, clients: AwsClients
) -> None:
    """Four days from a sensor's cursor: completed, completed with no files, not yet, then
    completed. The walk hands on the first two (the empty one with 0 completed), stops at the
    third (the fourth waits for it) and names it as the next cursor; the next walk from there,
    once the third completed, hands on the third and fourth. A failed day stops a walk and is
    named; a tampered completed day raises HandoffError."""
    start = date.fromisoformat(unique_day())
    d0, d1, d2, d3, d4 = (str(start + timedelta(days=n)) for n in range(5))
    bucket.day(d0, "completed")
    bucket.day(d1, "completed", files=0)
    bucket.day(d3, "completed")
    walk = ready_days("default", d0, d3, s3_client=clients.s3, bucket=bucket.name)
    assert [(d.date, (d.counts or {}).get("completed")) for d in walk.ready] == [(d0, 3), (d1, 0)]
    assert (walk.next_date, walk.failed) == (d2, None)
    bucket.day(d2, "completed")
    walk = ready_days("default", walk.next_date, d3, s3_client=clients.s3, bucket=bucket.name)
    assert ([d.date for d in walk.ready], walk.next_date) == ([d2, d3], d4)
    bucket.day(d4, "failed")
    walk = ready_days("default", d3, d4, s3_client=clients.s3, bucket=bucket.name)
    assert [d.date for d in walk.ready] == [d3]
    assert walk.failed is not None
    assert (walk.failed.date, walk.next_date) == (d4, d4)
    _, files = bucket.day(d3, "completed")  # a second manifest for d3, then tampered with
    bucket.put(files[0], b"other bytes")
    with pytest.raises(HandoffError, match="does not verify"):
        ready_days("default", d3, d3, s3_client=clients.s3, bucket=bucket.name)

"""The consumer's wait and show on in-memory fakes: which state a day's pointer and manifest
give, how long `wait` looks, and what `show` names when an object or the manifest changed."""

from __future__ import annotations

import hashlib
import json

import pytest

from dlpipe.domain.manifest import DayPointer, ManifestHeader, PublishedFile, StoredObject
from dlpipe.services.ops.handoff import DayState, HandoffError, look, show_day, wait_for_day
from tests.fakes.manifests import BUCKET, FakeManifestStore

DAY = "2026-02-28"
BATCH = "batch-2026-02-28-0b5e6f3c-9d1a-4c7e-8f2b-1a2b3c4d5e6f"


def _day(store: FakeManifestStore, status: str, files: int = 3, batch: str = BATCH) -> str:
    """A manifest of `files` published files ended `status`, named by the pointer; its key."""
    published = [
        PublishedFile(f"e{n}-{DAY}", f"e{n}", f"e{n}/{DAY}/e{n}-{DAY}", 10 + n, f"{n:064x}")
        for n in range(files)
    ]
    for f in published:
        store.heads[f.key] = StoredObject("v1", f.size, f.sha256)
    header = ManifestHeader(
        "default", DAY, batch, status, files, files, 0, 0, "2026-03-01T06:00:00.000Z",
        "2026-03-01T06:20:00.000Z",
    )  # fmt: skip
    ref = store.write(header, published)
    current = store.read_pointer("default", DAY)
    pointer = DayPointer(
        "default", DAY, batch, status, header.created_at, header.finished_at, ref.key,
        ref.version_id, ref.sha256, ref.size,
    )  # fmt: skip
    assert store.put_pointer(pointer, etag=current[1] if current else None)
    return ref.key


class Clock:
    """monotonic and sleep of a clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _wait(store: FakeManifestStore, clock: Clock, timeout_s: float, interval_s: float = 2):
    return wait_for_day(
        store, BUCKET, "default", DAY, timeout_s=timeout_s, interval_s=interval_s,
        monotonic=clock.monotonic, sleep=clock.sleep,
    )  # fmt: skip


def test_a_completed_day_is_ready_at_once_with_its_manifest_uri() -> None:
    """A pointer to a completed manifest: ready on the first look, the URI and counts given."""
    store, clock = FakeManifestStore(), Clock()
    key = _day(store, "completed")
    day = _wait(store, clock, timeout_s=60)
    assert (day.state, day.ready, clock.slept) == (DayState.COMPLETED, True, [])
    assert day.manifest_uri == f"s3://{BUCKET}/{key}"
    assert (day.batch_id, day.file_list_uri) == (BATCH, None)
    assert day.counts == {"expected": 3, "completed": 3, "failed": 0, "error": 0, "pending": 0}


def test_a_failed_day_is_answered_at_once() -> None:
    """A failed day's manifest is final for its batch: no waiting on it."""
    store, clock = FakeManifestStore(), Clock()
    _day(store, "failed")
    day = _wait(store, clock, timeout_s=60)
    assert (day.state, day.ready, clock.slept) == (DayState.FAILED, False, [])


def test_no_pointer_is_looked_at_every_interval_until_the_timeout() -> None:
    """No latest.json: looks every 2 s, the last sleep cut to the timeout, then not_yet."""
    store, clock = FakeManifestStore(), Clock()
    day = _wait(store, clock, timeout_s=5)
    assert (day.state, day.manifest_uri) == (DayState.NOT_YET, None)
    assert clock.slept == [2, 2, 1]


def test_timeout_zero_looks_once() -> None:
    store, clock = FakeManifestStore(), Clock()
    assert _wait(store, clock, timeout_s=0).state is DayState.NOT_YET
    assert clock.slept == []


def test_a_timed_out_day_is_waited_on_until_its_repair_completes_it() -> None:
    """A timeout manifest is provisional: wait keeps looking, and returns the repaired
    batch's completed manifest once the pointer names it."""
    store, clock = FakeManifestStore(), Clock()
    _day(store, "timeout")
    real_sleep = clock.sleep

    def repair_then_sleep(seconds: float) -> None:
        real_sleep(seconds)
        if len(clock.slept) == 2:
            _day(store, "completed")

    clock.sleep = repair_then_sleep  # type: ignore[method-assign]
    day = _wait(store, clock, timeout_s=60)
    assert (day.state, len(clock.slept)) == (DayState.COMPLETED, 2)


def test_a_timed_out_day_left_so_ends_the_wait_as_timeout() -> None:
    store, clock = FakeManifestStore(), Clock()
    key = _day(store, "timeout")
    day = _wait(store, clock, timeout_s=3)
    assert (day.state, day.manifest_uri) == (DayState.TIMEOUT, f"s3://{BUCKET}/{key}")


@pytest.mark.parametrize(
    ("named", "uri"),
    [
        (f"s3://{BUCKET}/x/files.jsonl", f"s3://{BUCKET}/x/files.jsonl"),
        ("x/files.jsonl", f"s3://{BUCKET}/x/files.jsonl"),
        ({"key": "x/files.jsonl", "sha256": "ab"}, f"s3://{BUCKET}/x/files.jsonl"),
    ],
)
def test_the_file_list_the_manifest_names_is_given(named: object, uri: str) -> None:
    store = FakeManifestStore()
    key = _day(store, "completed")
    document = json.loads(store.objects[key])
    data = json.dumps({**document, "file_list": named}).encode()
    _repoint(store, key, data)
    assert look(store, BUCKET, "default", DAY).file_list_uri == uri


def _repoint(store: FakeManifestStore, key: str, data: bytes) -> None:
    """Other bytes at `key`, and a pointer that records them."""
    store.objects[key] = data
    pointer, etag = store.read_pointer("default", DAY) or pytest.fail("no pointer")
    fields = {**pointer.__dict__, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    assert store.put_pointer(DayPointer(**fields), etag=etag)


def test_show_verifies_every_object_and_names_a_changed_one() -> None:
    """Every object as its entry says: 3 of 3; one replaced: 2 of 3 and the object named."""
    store = FakeManifestStore()
    _day(store, "completed")
    checked = show_day(store, BUCKET, "default", DAY)
    assert (checked.ok, checked.entries, checked.verified, checked.problems) == (True, 3, 3, ())
    key = f"e1/{DAY}/e1-{DAY}"
    store.heads[key] = StoredObject("v2", 11, "0" * 64)
    checked = show_day(store, BUCKET, "default", DAY)
    assert (checked.ok, checked.verified) == (False, 2)
    assert checked.problems == (f"object {key} changed: version v2, the manifest lists v1",)


def test_a_manifest_that_differs_from_its_pointer_is_an_error_for_wait_a_problem_for_show() -> None:
    store, clock = FakeManifestStore(), Clock()
    key = _day(store, "completed")
    store.objects[key] = b"{}"
    with pytest.raises(HandoffError, match="does not verify"):
        _wait(store, clock, timeout_s=0)
    checked = show_day(store, BUCKET, "default", DAY)
    assert checked.problems == (f"manifest {key} does not verify (SHA-256 or size differs)",)


def test_show_of_a_day_without_a_manifest_is_a_problem() -> None:
    checked = show_day(FakeManifestStore(), BUCKET, "default", DAY)
    assert (checked.ok, checked.handoff.state) == (False, DayState.NOT_YET)


@pytest.mark.parametrize(("feed", "date"), [("Bad!", DAY), ("default", "2026-02-30")])
def test_a_bad_feed_or_date_is_a_value_error_before_any_read(feed: str, date: str) -> None:
    with pytest.raises(ValueError, match=r"feed|date"):
        look(FakeManifestStore(), BUCKET, feed, date)


def test_a_pointer_naming_another_batch_than_its_manifest_is_an_error() -> None:
    """latest.json's batch and the manifest's disagree: neither is trusted."""
    store, clock = FakeManifestStore(), Clock()
    _day(store, "completed")
    pointer, etag = store.read_pointer("default", DAY) or pytest.fail("no pointer")
    other = "batch-2026-02-28-11111111-9d1a-4c7e-8f2b-1a2b3c4d5e6f"
    assert store.put_pointer(DayPointer(**{**pointer.__dict__, "batch_id": other}), etag=etag)
    with pytest.raises(HandoffError, match=r"not what latest\.json names"):
        _wait(store, clock, timeout_s=0)

"""Scenario 5: hostile input. One day's listing carries every kind of bad file next to good
ones (they are run together, as a provider would send them, and each case is its own test
over that day); impossible dates, empty and unreadable listings are days of their own."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import BatchStatus, JobStatus, make_file_id
from dlpipe.local.durable_runner import LocalRunError
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.faults import DROP, Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from tests.e2e.test_worker_kit import queues
from tests.provider_support import TEST_PROVIDER_TOKEN, StubFactory
from tests.reliability.invariant import DayFacts, InvariantViolation
from tests.reliability.rig import LogTap, Rig, unique_day, unique_entity

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
LEASE_S = 10
_FAKE_ENTRY = {
    "url": "https://provider.invalid/object?X-Amz-Signature=0000",
    "encrypted_key": base64.b64encode(bytes(256)).decode(),
    "iv": base64.b64encode(bytes(16)).decode(),
    "cipher": CIPHER_CBC,
    "size": 10,
    "sha256": "0" * 64,
}
_REFUSED = "batch.entry_rejected"  # one log line per listing entry refused without a job
_CRASH_EVENTS = {"job.crashed", "message.failed", "worker.receive_failed", "message.rejected"}


@dataclass(frozen=True)
class Case:
    """A hostile file and where it must end: a job status and ErrorMessage code, or (status
    None) refused without a job and named in the batch's ErrorMessage."""

    status: JobStatus | None
    codes: tuple[str, ...]  # accepted ErrorMessage codes (the text before the first ':')
    detail: str = ""  # must appear in the ErrorMessage
    cipher: str = CIPHER_GCM
    size: int = 70_000
    switch: str | None = None  # a stub fault switch (a set of entities) for this file
    fields: Mapping[str, object] = field(default_factory=dict)  # malformed_fields
    raw_entity: str | None = None  # an extra raw listing entry with this (unsafe) entity


def error(code: str, switch: str, cipher: str = CIPHER_GCM, **kw: Any) -> Case:
    """A file the downloader must refuse with `code`."""
    return Case(JobStatus.ERROR, (code,), cipher=cipher, switch=switch, **kw)


def rejected(detail: str, switch: str | None = None, **fields: object) -> Case:
    """A listing entry the orchestrator refuses at once, as an `error` job."""
    return Case(JobStatus.ERROR, ("rejected_listing",), detail, switch=switch, fields=fields)


def unsafe(entity: str) -> Case:
    """A listing entry whose entity cannot be a key: no job, named in the batch's error."""
    shown = repr(entity) if len(repr(entity)) <= 40 else repr(entity)[:37]  # as messages cut it
    return Case(None, (), shown, raw_entity=entity)


CASES: dict[str, Case] = {
    "tampered-ciphertext-cbc": error("checksum_mismatch", "tampered_entities", CIPHER_CBC),
    "tampered-ciphertext-gcm": error("tag_mismatch", "tampered_entities"),
    "wrong-rsa-key": error("wrong_key", "wrong_key_entities", size=1000),
    "truncated-body-cbc": error("bad_padding", "truncated_entities", CIPHER_CBC),
    "truncated-body-gcm": error("tag_mismatch", "truncated_entities"),
    "extra-bytes-gcm": error("tag_mismatch", "extra_bytes_entities"),
    # 16 bytes more decrypt to one more block: its padding is garbage, or (1 in 256) looks
    # valid and then the plaintext is longer than declared.
    "extra-bytes-cbc": Case(
        JobStatus.ERROR,
        ("bad_padding", "size_mismatch"),
        cipher=CIPHER_CBC,
        switch="extra_bytes_entities",
    ),
    # 32 bytes -> 3 blocks; the flipped byte (middle of block 2) flips a byte of the padding.
    "bad-padding-cbc": error("bad_padding", "tampered_entities", CIPHER_CBC, size=32),
    "size-mismatch": error("size_mismatch", "bad_size_entities"),
    "sha256-mismatch": error("checksum_mismatch", "bad_sha_entities", CIPHER_CBC),
    "missing-object-404": error("source_not_found", "missing_object_entities", size=1000),
    "url-403-never-clears": Case(
        JobStatus.FAILED, ("url_expired",), "expired", switch="always_expired_entities"
    ),
    "iv-of-wrong-length": rejected(".iv: expected 12 bytes", "bad_iv_entities"),
    "iv-invalid-base64": rejected(".iv: expected base64", iv="not*base64!"),
    "key-invalid-base64": rejected(".encrypted_key: expected base64", encrypted_key="%%%%"),
    "unknown-cipher": rejected(".cipher: expected one of", "unknown_cipher_entities"),
    "missing-field-sha256": rejected(".sha256: missing", sha256=DROP),
    "missing-field-url": rejected(".url: missing", url=DROP),
    "missing-field-cipher": rejected(".cipher: missing", cipher=DROP),
    "wrong-type-size-string": rejected(".size: expected a non-negative integer", size="70000"),
    "wrong-type-size-bool": rejected(".size: expected a non-negative integer", size=True),
    "wrong-type-cipher-number": rejected(".cipher: expected one of", cipher=256),
    "negative-size": rejected(".size: expected a non-negative integer", size=-1),
    "huge-declared-size": rejected(".size: huge declared size", size=10**15),
    "url-not-http": rejected(".url: expected an absolute http(s) URL", url="file:///etc/passwd"),
    "expires-at-not-a-time": rejected(".expires_at: expected ISO 8601", expires_at="tomorrow"),
    "duplicate-entity": rejected("duplicate entity", "duplicate_entities"),
    "entity-path-traversal": unsafe("../../etc"),
    "entity-with-hash": unsafe("accounts#1"),
    "entity-with-spaces": unsafe("my accounts"),
    "entity-with-newline": unsafe("accounts\n"),
    "entity-with-slash": unsafe("a/b"),
    "entity-empty": unsafe(""),
    "entity-too-long": unsafe("e" * 65),
    "entity-non-ascii": unsafe("accöunts"),
}
GOOD = {"good-cbc": CIPHER_CBC, "good-gcm": CIPHER_GCM}


def entity_of(prefix: str, name: str) -> str:
    """The stub entity of a case: a safe name derived from the case id."""
    return f"{prefix}_{re.sub('[^a-z0-9]', '_', name)}"


def hostile_stub_inputs(prefix: str) -> tuple[list[StubFileSpec], Faults]:
    """Stub files (every case with a safe entity, plus the good files) and their faults."""
    specs = [StubFileSpec(entity_of(prefix, n), 5000, c) for n, c in GOOD.items()]
    switches: dict[str, set[str]] = {}
    malformed: dict[str, Mapping[str, object]] = {}
    extra: list[Mapping[str, object]] = []
    for name, case in CASES.items():
        if case.raw_entity is not None:
            extra.append({"entity": case.raw_entity, **_FAKE_ENTRY})
            continue
        entity = entity_of(prefix, name)
        specs.append(StubFileSpec(entity, case.size, case.cipher))
        if case.switch:
            switches.setdefault(case.switch, set()).add(entity)
        if case.fields:
            malformed[entity] = case.fields
    faults = Faults(malformed_fields=malformed, extra_listing_entries=extra)
    faults.set(**{k: frozenset(v) for k, v in switches.items()})
    return specs, faults


@dataclass(frozen=True)
class HostileDay:
    """The shared hostile day's outcome."""

    day: str
    prefix: str
    result: dict[str, Any]
    invariant: DayFacts | InvariantViolation
    events: list[dict[str, Any]]
    rig: Rig
    keys: list[str]  # every destination key holding the day

    def facts(self) -> DayFacts:
        """The invariant's facts; raises the violation if the invariant failed."""
        if isinstance(self.invariant, InvariantViolation):
            raise self.invariant
        return self.invariant


@pytest.fixture(scope="module")
def hostile_day(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    private_key: RSAPrivateKey,
    rsa_keypair: tuple[bytes, bytes],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HostileDay]:
    """Run one day whose listing holds every case and the good files, with 2 workers."""
    prefix, day = unique_entity(), unique_day()
    specs, faults = hostile_stub_inputs(prefix)
    stub = StubProvider(
        clients, rsa_keypair[1], TEST_PROVIDER_TOKEN, specs, faults=faults, key_prefix=f"{prefix}/"
    )
    workdir = tmp_path_factory.mktemp("hostile")
    with queues(clients, visibility_s=10, max_receive=3) as pair, stub:
        rig = Rig(clients, provisioned, pair, private_key, Path("unused"), aws_env, workdir)
        tap = LogTap("INFO")
        services = [rig.service(stub, lease_seconds=LEASE_S) for _ in range(2)]
        with tap.tapping(), rig.thread_workers(services, concurrency=2):
            result = rig.run_day(rig.flow(stub), day, polls=90)
        invariant: DayFacts | InvariantViolation
        try:
            invariant = rig.check_day(day, result["batch_id"], stub.expected(day))
        except InvariantViolation as violation:
            invariant = violation
        yield HostileDay(day, prefix, result, invariant, tap.events(), rig, _day_keys(rig, day))
        stub.purge()


def test_the_hostile_day_holds_the_invariant_and_fails_the_batch_loudly(
    hostile_day: HostileDay, figures: Any
) -> None:
    """Good files complete, bad ones end error/failed, the batch is failed with an ErrorMessage."""
    facts = hostile_day.facts()
    good = {make_file_id(entity_of(hostile_day.prefix, n), hostile_day.day) for n in GOOD}
    figures(cases=len(CASES), **facts.counts(), batch=str(facts.batch.status))
    assert good <= facts.by_status(JobStatus.COMPLETED)
    assert facts.by_status(JobStatus.COMPLETED) == good
    assert (hostile_day.result["status"], facts.batch.status) == ("failed", BatchStatus.FAILED)
    assert facts.batch.error_message
    assert not _CRASH_EVENTS & {e["event"] for e in hostile_day.events}


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_file_ends_in_its_named_outcome_with_nothing_published(
    hostile_day: HostileDay, name: str
) -> None:
    """The case's file ends in its status with its ErrorMessage code, and nothing is published."""
    case, facts = CASES[name], hostile_day.facts()
    if case.status is None:
        refusals = [str(e.get("problem")) for e in hostile_day.events if e["event"] == _REFUSED]
        assert [r for r in refusals if case.detail in r], refusals
        assert facts.batch.error_message
        assert not [k for k in hostile_day.keys if "etc" in k or ".." in k or " " in k]
        return
    file_id = make_file_id(entity_of(hostile_day.prefix, name), hostile_day.day)
    job = facts.jobs[file_id]
    message = job.error_message or ""
    assert job.status is case.status, message
    assert message.split(":")[0] in case.codes, message
    assert case.detail in message
    assert not [k for k in hostile_day.keys if file_id in k]
    assert not [
        e for e in hostile_day.events if e.get("file_id") == file_id and e["event"] in _CRASH_EVENTS
    ]


def _day_keys(rig: Rig, day: str) -> list[str]:
    """Every destination key that holds `day`."""
    keys: list[str] = []
    paginator = rig.clients.s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=rig.bucket):
        keys += [o["Key"] for o in page.get("Contents", []) if day in o["Key"]]
    return keys


@pytest.mark.parametrize("date", ["2026-02-30", "2026-13-01", "2026-2-28", "../2026-02-28"])
def test_an_impossible_date_is_refused_before_any_batch_is_created(
    rig: Rig, stub_factory: StubFactory, date: str
) -> None:
    """The orchestrator's event parsing refuses the date with a clear error; no batch exists."""
    stub = stub_factory([StubFileSpec(unique_entity(), 10, CIPHER_GCM)])
    with pytest.raises(LocalRunError) as refused:
        rig.run_day(rig.flow(stub), date, polls=1)
    assert "InvalidEventError" in str(refused.value.error_type)
    assert f"'date': {date!r} is not a calendar date" in str(refused.value) or (
        f"'date': date must be YYYY-MM-DD, got {date!r}" in str(refused.value)
    )
    assert rig.batches().query_by_date(date) == []
    assert stub.request_count == 0


def test_an_empty_listing_completes_the_batch_with_no_files(
    rig: Rig, stub_factory: StubFactory
) -> None:
    """A day without files: the batch completes at its first check, with no job."""
    stub, day = stub_factory([]), unique_day()
    result = rig.run_day(rig.flow(stub), day, polls=5)
    facts = rig.check_day(
        day,
        result["batch_id"],
        {},
    )
    assert (result["status"], result["polls"], facts.jobs) == ("completed", 1, {})


def test_a_listing_that_is_not_json_ends_the_batch_failed_saying_so(
    rig: Rig, stub_factory: StubFactory
) -> None:
    """Invalid JSON is permanent: no retry, batch failed with "invalid JSON" and no job."""
    stub = stub_factory(
        [StubFileSpec(unique_entity(), 10, CIPHER_GCM)], faults=Faults(malformed_json=True)
    )
    day = unique_day()
    result = rig.run_day(rig.flow(stub), day, polls=5)
    facts = rig.check_day(
        day,
        result["batch_id"],
        {},
    )
    assert (result["status"], facts.jobs) == ("failed", {})
    assert "invalid JSON" in (facts.batch.error_message or "")
    assert stub.request_count == 1


def test_every_refused_listing_entry_is_named_where_an_operator_can_see_it(
    rig: Rig, stub_factory: StubFactory
) -> None:
    """12 entries with unsafe entities: each is named in the batch's ErrorMessage or a log line."""
    unsafe_entities = [f"unsafe entity number {n:02d}" for n in range(12)]
    faults = Faults(extra_listing_entries=[{"entity": e, **_FAKE_ENTRY} for e in unsafe_entities])
    stub = stub_factory([], faults=faults)
    day, tap = unique_day(), LogTap("DEBUG")
    with tap.tapping():
        result = rig.run_day(rig.flow(stub), day, polls=3)
    batch = rig.batches().require(result["batch_id"])
    visible = (batch.error_message or "") + tap.text
    assert result["status"] == "failed"
    assert [e for e in unsafe_entities if e not in visible] == []


def garbage_bodies(entity: str, day: str) -> dict[str, str]:
    """SQS message bodies no poller wrote, by name."""
    batch_id = f"batch-{day}-00000000-0000-4000-8000-000000000000"
    return {
        "not-json": "this is not json",
        "json-array": "[1, 2, 3]",
        "missing-fields": "{}",
        "path-traversal-file-id": json.dumps({"file_id": f"../../etc-{day}", "batch_id": batch_id}),
        "bad-batch-id": json.dumps({"file_id": f"{entity}0-{day}", "batch_id": "batch-x"}),
        "oversized": "x" * 200_000,
        "unknown-job": json.dumps({"file_id": f"{entity}nope-{day}", "batch_id": batch_id}),
    }


def test_garbage_messages_are_acknowledged_and_logged_and_the_day_still_completes(
    rig: Rig, stub_factory: StubFactory
) -> None:
    """Seven forged bodies on the queue: each is acked with a log line, none crashes a worker."""
    entity, day = unique_entity(), unique_day()
    stub = stub_factory([StubFileSpec(f"{entity}{n}", 2000, CIPHER_GCM) for n in range(2)])
    for body in garbage_bodies(entity, day).values():
        rig.clients.sqs.send_message(QueueUrl=rig.queues.url, MessageBody=body)
    tap = LogTap("INFO")
    with tap.tapping(), rig.thread_workers([rig.service(stub, lease_seconds=LEASE_S)]):
        result = rig.run_day(rig.flow(stub), day, polls=30)
        rig.wait_queue_empty(timeout_s=30)
    facts = rig.check_day(
        day,
        result["batch_id"],
        stub.expected(day),
    )
    names = [e["event"] for e in tap.events()]
    assert result["status"] == "completed"
    assert facts.by_status(JobStatus.COMPLETED) == set(stub.expected(day))
    assert (names.count("message.rejected"), names.count("job.not_found")) == (6, 1)
    assert not {"job.crashed", "message.failed"} & set(names)
    assert facts.dead_letters == []

"""The stub provider's fault tables and generated data, without a server."""

from __future__ import annotations

import random

import pytest

from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.local.stub.faults import (
    DROP,
    EXTRA_BYTES,
    TRUNCATED_BYTES,
    CallFault,
    Faults,
    damage_ciphertext,
    draw_call_fault,
    falsify_descriptor,
)
from dlpipe.local.stub.publish import StubFileSpec, default_day, plaintext_chunks

DATA = bytes(range(40))
CHUNKINGS = [
    [DATA],
    [DATA[:20], DATA[20:]],
    [DATA[:19], DATA[19:21], DATA[21:]],
    [bytes([b]) for b in DATA],
]


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_tampering_flips_exactly_the_middle_byte_whatever_the_chunking(chunks: list[bytes]) -> None:
    """One byte differs, at size // 2, however the stream is cut."""
    out = b"".join(damage_ciphertext(chunks, len(DATA), "e", Faults(tampered_entities={"e"})))
    assert [i for i in range(len(DATA)) if out[i] != DATA[i]] == [20]


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_truncation_and_extra_bytes_change_only_the_tail(chunks: list[bytes]) -> None:
    """Truncation drops the last bytes; extra bytes are appended."""
    cut = b"".join(damage_ciphertext(chunks, len(DATA), "e", Faults(truncated_entities={"e"})))
    grown = b"".join(damage_ciphertext(chunks, len(DATA), "e", Faults(extra_bytes_entities={"e"})))
    assert cut == DATA[:-TRUNCATED_BYTES]
    assert grown == DATA + EXTRA_BYTES


def test_other_entities_are_stored_untouched() -> None:
    """Object faults apply to the named entities only."""
    faults = Faults(tampered_entities={"e"})
    assert b"".join(damage_ciphertext([DATA], len(DATA), "other", faults)) == DATA


def test_falsify_descriptor_replaces_drops_and_leaves_others_alone() -> None:
    """malformed_fields replaces a field or drops it with DROP; other entities are untouched."""
    faults = Faults(malformed_fields={"e": {"size": "abc", "url": DROP}}, bad_sha_entities={"e"})
    descriptor = {"entity": "e", "url": "u", "size": 1, "sha256": "f" * 64}
    assert falsify_descriptor(dict(descriptor), "e", faults) == {
        "entity": "e",
        "size": "abc",
        "sha256": "0" * 64,
    }
    assert falsify_descriptor(dict(descriptor), "other", faults) == descriptor


def test_call_faults_follow_their_rates() -> None:
    """One draw per call: error, then throttle, then stall, in proportion to their rates."""
    faults, rng = Faults(error_rate=0.2, throttle_rate=0.3, stall_rate=0.1), random.Random(1)
    draws = [draw_call_fault(faults, rng) for _ in range(10_000)]
    shares = {fault: draws.count(fault) / len(draws) for fault in CallFault}
    assert shares == pytest.approx(
        {CallFault.ERROR: 0.2, CallFault.THROTTLE: 0.3, CallFault.STALL: 0.1, CallFault.NONE: 0.4},
        abs=0.02,
    )


def test_faults_set_refuses_unknown_switches_and_snapshots_are_copies() -> None:
    """A misspelt switch fails loudly; a snapshot does not change when the switches do."""
    faults = Faults()
    with pytest.raises(TypeError, match="error_rat"):
        faults.set(error_rat=1.0)
    before = faults.snapshot()
    faults.set(error_rate=1.0)
    assert (before.error_rate, faults.error_rate) == (0.0, 1.0)


def test_plaintext_is_deterministic_per_seed_date_and_entity() -> None:
    """Same seed, date and entity: same bytes; any change: different bytes; exact size."""
    one = b"".join(plaintext_chunks(0, "2026-02-28", "a", 3_000_000))
    assert len(one) == 3_000_000
    assert one == b"".join(plaintext_chunks(0, "2026-02-28", "a", 3_000_000))
    assert one != b"".join(plaintext_chunks(1, "2026-02-28", "a", 3_000_000))
    assert b"".join(plaintext_chunks(0, "2026-02-28", "a", 0)) == b""


def test_default_day_mixes_ciphers_and_sizes() -> None:
    """20 files, both ciphers, from 0 bytes to 20 MiB, unique entities; more files cycle sizes."""
    day = default_day()
    assert len({s.entity for s in day}) == 20
    assert {s.cipher for s in day} == {CIPHER_CBC, CIPHER_GCM}
    assert (min(s.size for s in day), max(s.size for s in day)) == (0, 20 * 2**20)
    assert len({s.entity for s in default_day(45)}) == 45


@pytest.mark.parametrize(
    ("entity", "size", "cipher", "message"),
    [
        ("../x", 1, CIPHER_CBC, "entity must be"),
        ("a", -1, CIPHER_CBC, "bad stub file spec"),
        ("a", 1, "ROT13", "bad stub file spec"),
    ],
)
def test_a_bad_stub_spec_is_refused(entity: str, size: int, cipher: str, message: str) -> None:
    """Specs become S3 keys and ciphertext: unsafe entities, negative sizes, unknown ciphers fail."""
    with pytest.raises(ValueError, match=message):
        StubFileSpec(entity, size, cipher)

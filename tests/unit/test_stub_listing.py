"""The stub's listing pieces without a server: batch signatures, cursors, broken pages."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from dlpipe.config import Settings
from dlpipe.local.stub.faults import BROKEN_MALFORMED, BROKEN_TRUNCATED, Faults
from dlpipe.local.stub.listing import decode_cursor, encode_cursor, page_chunks
from dlpipe.local.stub.presign import BatchSigner, Presigner

DAY = "2026-02-28"


def test_batch_signer_signs_exactly_as_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast signer's URL is byte-identical to botocore's SigV4 query signature."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-example")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    settings = Settings.from_env(
        {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_REGION": "eu-west-1"}
    )
    presigner = Presigner(settings)
    signed_at = datetime(2026, 2, 28, 1, 2, 3, tzinfo=UTC)
    credentials = presigner._credentials.get_frozen_credentials()
    batch = BatchSigner("http://127.0.0.1:9", credentials, "eu-west-1", "bkt", 600, signed_at)
    for key in ("p/2026-02-28/synthetic/synthetic_0000001.bin", "odd key~+=.bin"):
        assert batch.url(key) == presigner.signed_at("bkt", key, 600, signed_at).url


def test_cursors_round_trip_and_refuse_strangers() -> None:
    """A cursor decodes to its offset for its date only; garbage decodes to None."""
    assert decode_cursor(encode_cursor(DAY, 1000), DAY) == 1000
    assert decode_cursor(encode_cursor(DAY, 1000), "2026-03-01") is None
    assert decode_cursor("not base64!", DAY) is None


@pytest.mark.parametrize("kind", [BROKEN_TRUNCATED, BROKEN_MALFORMED])
def test_a_broken_page_is_not_json(kind: str) -> None:
    """Both broken kinds give a body no JSON parser accepts; an intact page parses."""
    entries = [{"entity": f"e{i}"} for i in range(5)]
    intact = b"".join(page_chunks(DAY, iter(entries), "c", page=1, faults=Faults()))
    assert json.loads(intact) == {"date": DAY, "files": entries, "next": "c"}
    faults = Faults(broken_page=1, broken_page_kind=kind, broken_at_entry=3)
    broken = b"".join(page_chunks(DAY, iter(entries), None, page=1, faults=faults))
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)

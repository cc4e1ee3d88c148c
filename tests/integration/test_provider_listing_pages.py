"""Paged and streamed listings between the real client and the stub provider over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from click.testing import CliRunner

from dlpipe.cli.provider_stub import provider_stub
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.listing import MAX_FILES_PER_LISTING, ListingResult
from dlpipe.domain.provider_errors import MalformedResponseError, ProviderUnavailableError
from dlpipe.local.stub.faults import BROKEN_MALFORMED, BROKEN_TRUNCATED, Faults
from dlpipe.local.stub.listing import SYNTHETIC_PREFIX, decode_cursor, encode_cursor
from dlpipe.local.stub.publish import StubFileSpec
from tests.provider_support import fast_client

pytestmark = pytest.mark.integration
pytest_plugins = [
    "tests.provider_fixtures"
]  # rsa_keypair, private_key, provider_token, stub_factory

DAY = "2026-02-28"
FILES = [StubFileSpec("alpha", 17, CIPHER_GCM), StubFileSpec("beta", 40, CIPHER_CBC)]
HOSTILE = {"entity": "../x", "url": "http://127.0.0.1/x", "cipher": CIPHER_CBC}
FAULTS = {"duplicate_entities": {"beta"}, "extra_listing_entries": [HOSTILE]}


class RecordingSession(requests.Session):
    """A session that remembers each listing request's cursor (None for the first page)."""

    def __init__(self) -> None:
        super().__init__()
        self.cursors: list[str | None] = []

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Record the cursor, then send."""
        self.cursors.append((kwargs.get("params") or {}).get("cursor"))
        return super().request(method, url, *args, **kwargs)


def comparable(listing: ListingResult) -> tuple[object, ...]:
    """The listing without what is signed afresh per request (URLs, wraps, expiry)."""
    files = [(f.entity, f.date, f.iv, f.cipher, f.size, f.sha256) for f in listing.files]
    return listing.date, files, listing.rejected


def test_paged_and_unpaged_listings_are_identical(stub_factory) -> None:
    """Any page size yields the same files and rejections (duplicates across pages included)."""
    stub = stub_factory(FILES, Faults(**FAULTS), synthetic_files=120)
    results = {}
    for page_size in (None, 1, 7, 1000):
        stub.page_size = page_size
        results[page_size] = comparable(fast_client(stub).list_files(DAY))
    whole = results[None]
    for page_size, result in results.items():
        assert result == whole, page_size
    _date, files, rejected = whole
    assert len(files) == 1 + 120  # alpha and the synthetic ones; both copies of beta refused
    assert files[-1][0] == f"{SYNTHETIC_PREFIX}0000119"
    assert [r.entity_or_index for r in rejected] == ["files[123]", "beta"]
    assert rejected[1].reason == (
        "duplicate entity 'beta' in the listing (files[1], files[2]): all copies refused"
    )


def test_cursors_are_followed_url_encoded_until_no_next(stub_factory) -> None:
    """Each page is asked once, with the previous page's cursor; base64 '=' '+' '/' survive."""
    stub = stub_factory(FILES, page_size=10, synthetic_files=38)
    session = RecordingSession()
    entries = list(fast_client(stub, session=session).iter_listing(DAY))
    assert len(entries) == 40
    assert session.cursors == [None, *(encode_cursor(DAY, n) for n in (10, 20, 30))]
    assert all(decode_cursor(c, DAY) is not None for c in session.cursors[1:] if c)
    assert any("=" in (c or "") for c in session.cursors)
    assert stub.request_count == 4


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (BROKEN_MALFORMED, r"malformed listing: invalid JSON \(.*\) at entry 240 \(page 3\)"),
        (BROKEN_TRUNCATED, r"malformed listing: invalid JSON \(.*\) at entry 240 \(page 3\)"),
    ],
)
def test_a_broken_page_fails_the_listing_at_its_entry(
    stub_factory, kind: str, message: str
) -> None:
    """Page 3 breaks after 40 good entries: 240 entries came, then a permanent fault, no retry."""
    faults = Faults(broken_page=3, broken_page_kind=kind, broken_at_entry=40)
    stub = stub_factory([], faults, page_size=100, synthetic_files=1000)
    seen: list[object] = []
    with pytest.raises(MalformedResponseError, match=message):
        seen.extend(fast_client(stub).iter_listing(DAY))
    assert len(seen) == 240
    assert stub.request_count == 3  # a permanent fault: not asked again


def test_a_transient_failure_on_page_two_retries_that_page_only(stub_factory) -> None:
    """A 5xx on page 2 is retried for page 2; page 1 is not asked again."""
    stub = stub_factory([], page_size=5, synthetic_files=12)
    session = RecordingSession()

    def fail_page_two(method: Any, url: Any, *args: Any, **kwargs: Any) -> Any:
        if (kwargs.get("params") or {}).get("cursor") and stub.request_count == 1:
            stub.faults.set(error_rate=1.0)  # the stub answers this attempt 500/502/503
        return RecordingSession.request(session, method, url, *args, **kwargs)

    session.request = fail_page_two  # type: ignore[method-assign]
    client = fast_client(stub, session=session, sleep=lambda _s: stub.faults.set(error_rate=0.0))
    assert len(client.list_files(DAY).files) == 12
    page_two = encode_cursor(DAY, 5)
    assert session.cursors == [None, page_two, page_two, encode_cursor(DAY, 10)]


def test_a_connection_broken_mid_body_is_transient(stub_factory, monkeypatch) -> None:
    """A body that breaks off mid-stream is ProviderUnavailableError (the day is redone later)."""
    stub = stub_factory([], page_size=50, synthetic_files=120)
    original = requests.Response.iter_content

    def breaking(self: requests.Response, *args: Any, **kwargs: Any) -> Any:
        for index, chunk in enumerate(original(self, *args, **kwargs)):
            if "cursor=" in (self.url or ""):
                raise requests.exceptions.ChunkedEncodingError("connection reset")
            yield chunk
            del index

    monkeypatch.setattr(requests.Response, "iter_content", breaking)
    with pytest.raises(ProviderUnavailableError, match=r"broke off at entry 50 \(page 2\)"):
        fast_client(stub).list_files(DAY)


def test_an_unknown_cursor_is_refused_by_the_stub(stub_factory, provider_token) -> None:
    """The stub answers 400 to a cursor it did not issue (so a mangled cursor is caught)."""
    stub = stub_factory([], page_size=5, synthetic_files=12)
    response = requests.get(
        f"{stub.base_url}/v1/files",
        params={"date": DAY, "cursor": "not a cursor"},
        headers={"Authorization": f"Bearer {provider_token}"},
        timeout=5,
    )
    assert response.status_code == 400


def test_stub_help_documents_paging_and_faults() -> None:
    """`dlpipe provider-stub --help` names the page size, synthetic files and broken pages."""
    result = CliRunner().invoke(provider_stub, ["--help"])
    assert result.exit_code == 0
    for option in ("--page-size", "--synthetic-files", "--broken-page", "--broken-kind"):
        assert option in result.output


def test_list_files_keeps_the_10000_cap_and_iter_listing_goes_past_it(stub_factory) -> None:
    """The collecting API still refuses a day over 10,000 files; the streaming one lists it."""
    stub = stub_factory([], page_size=5000, synthetic_files=MAX_FILES_PER_LISTING + 1)
    with pytest.raises(MalformedResponseError, match="more than 10000 files"):
        fast_client(stub).list_files(DAY)
    assert sum(1 for _ in fast_client(stub).iter_listing(DAY)) == MAX_FILES_PER_LISTING + 1

"""The streamed listing parser against crafted byte streams: chunking, paging and every cap."""

from __future__ import annotations

import json
from collections.abc import Iterator

import ijson
import pytest

from dlpipe.adapters import listing_stream
from dlpipe.adapters.listing_stream import ListingLimits, ListingParser, collect_listing
from dlpipe.domain.listing import FileDescriptor, ListingResult, parse_listing
from dlpipe.domain.provider_errors import MalformedResponseError
from tests.unit.test_provider_contract import DAY, good, listing

ENTRIES = [good("a"), good("b", size="x"), {"url": "no entity"}, good("c"), 7, good("a")]


@pytest.fixture(params=["yajl2_c", "python"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test using it runs on ijson's C backend and on its pure-Python one."""
    monkeypatch.setattr(listing_stream, "BACKEND", ijson.get_backend(request.param))
    return str(request.param)


def body(payload: object) -> bytes:
    return json.dumps(payload).encode()


def pages(*answers: bytes, limits: ListingLimits | None = None) -> ListingResult:
    """Parse the answers as consecutive pages (as the client does), collected."""
    parser = ListingParser(DAY, limits)

    def entries() -> Iterator[object]:
        for answer in answers:
            yield from parser.page([answer])

    return collect_listing(DAY, entries())  # type: ignore[arg-type]


def test_streamed_result_equals_parse_listing_at_every_chunk_boundary(backend: str) -> None:
    """Split anywhere (two pieces at every offset, or one byte at a time), the result is parse_listing's."""
    data = body(listing(*ENTRIES))
    expected = parse_listing(json.loads(data), DAY)
    assert expected.rejected  # the sample exercises rejections and a duplicate
    splits = [[data[:i], data[i:]] for i in range(len(data) + 1)]
    splits.append([data[i : i + 1] for i in range(len(data))])
    for chunks in splits:
        parser = ListingParser(DAY)
        assert collect_listing(DAY, parser.page(chunks)) == expected


def test_a_bad_token_after_5000_good_entries_names_the_entry(backend: str) -> None:
    """5,000 entries are yielded, then the bad token fails the listing at entry 5000."""
    good_part = b", ".join(body(good(f"e{i}")) for i in range(5000))
    data = b'{"date": "' + DAY.encode() + b'", "files": [' + good_part + b", @oops]}"
    parser = ListingParser(DAY)
    seen: list[object] = []
    chunks = [data[i : i + 4096] for i in range(0, len(data), 4096)]
    with pytest.raises(MalformedResponseError) as caught:
        seen.extend(parser.page(chunks))  # extend keeps what came before the raise
    assert len(seen) == 5000
    assert str(caught.value).startswith("malformed listing: invalid JSON (a bad token or byte)")
    assert str(caught.value).endswith("at entry 5000 (page 1)")


def test_truncated_json_fails_at_the_entry_it_broke_in(backend: str) -> None:
    """An answer that stops mid-entry is a malformed listing, not a shorter one."""
    data = body(listing(good("a"), good("b"), good("c")))
    cut = data[: data.index(b'"c"') + 10]
    with pytest.raises(MalformedResponseError, match=r"invalid JSON .* at entry 2 \(page 1\)$"):
        list(ListingParser(DAY).page([cut]))


def test_pages_are_followed_and_indexes_count_across_pages() -> None:
    """Entries of page 2 are files[2].. and a duplicate across pages refuses every copy."""
    result = pages(
        body({**listing(good("a"), good("b")), "next": "c+/=1"}),
        body(listing(good("c", size="x"), good("a"))),
    )
    assert [f.entity for f in result.files] == ["b"]
    assert [r.reason for r in result.rejected] == [
        "files[2].size: expected a non-negative integer, got 'x'",
        "duplicate entity 'a' in the listing (files[0], files[3]): all copies refused",
    ]


def test_a_later_copy_is_handed_on_as_it_is_the_stream_keeps_no_entity_memory() -> None:
    """The stream holds one entry at a time: finding duplicates is its consumer's job
    (collect_listing here; the orchestrator's fan-out through the job table)."""
    outcomes = list(ListingParser(DAY).page([body(listing(good("a"), good("a")))]))
    assert [o.entity for o in outcomes] == ["a", "a"]
    assert all(isinstance(o, FileDescriptor) for o in outcomes)


def test_wrong_date_on_page_two_fails_the_listing() -> None:
    """Every page must carry the asked date."""
    with pytest.raises(
        MalformedResponseError,
        match=r"listing.date: expected '2026-02-28', got '2026-03-01' \(page 2\)",
    ):
        pages(
            body({**listing(good("a")), "next": "n1"}),
            body(listing(good("b"), date="2026-03-01")),
        )


@pytest.mark.parametrize(
    "answer",
    [
        b'{"files": [' + body(good("a")) + b'], "date": "' + DAY.encode() + b'"}',
        b'{"files": [' + body(good("a")) + b"]}",
        b'{"next": "n1", "files": [' + body(good("a")) + b"]}",
    ],
    ids=["date-after-files", "no-date", "next-but-no-date"],
)
def test_files_before_the_date_are_refused_before_any_entry_is_handed_on(
    answer: bytes, backend: str
) -> None:
    """A page whose `files` starts before its `date` was read and checked yields no entry."""
    seen: list[object] = []
    with pytest.raises(MalformedResponseError) as caught:
        seen.extend(ListingParser(DAY).page([answer]))
    assert seen == []
    assert str(caught.value) == "listing.date: must come before files (page 1)"


def test_a_date_before_the_files_may_follow_other_keys() -> None:
    """Only `date` must precede `files`: unknown keys and `next` may come anywhere."""
    answer = b'{"junk": 1, "next": "n1", "date": "' + DAY.encode() + b'", "files": ['
    answer += body(good("a")) + b"]}"
    parser = ListingParser(DAY)
    assert [e.entity for e in parser.page([answer])] == ["a"]
    assert parser.next_cursor == "n1"


def test_a_page_with_neither_date_nor_files_names_the_missing_date() -> None:
    """An object without `date` (and without `files`) is refused as missing its date."""
    with pytest.raises(MalformedResponseError, match=r"listing\.date: missing \(page 1\)"):
        pages(b'{"next": "n1"}')


def test_a_top_level_key_named_files_item_is_not_an_entry(backend: str) -> None:
    """Only entries of the top-level `files` array are entries: a key "files.item" is ignored."""
    answer = b'{"date": "' + DAY.encode() + b'", "files": [], "files.item": ' + body(good("x"))
    answer += b', "files.item.x": [' + body(good("y")) + b"]}"
    assert list(ListingParser(DAY).page([answer])) == []


@pytest.mark.parametrize(
    ("answer", "key"),
    [
        (body(listing(good("a")))[:-1] + b', "files": [' + body(good("b")) + b"]}", "files"),
        (
            b'{"date": "' + DAY.encode() + b'", "date": "' + DAY.encode() + b'", "files": []}',
            "date",
        ),
        (b'{"next": "c1", "date": "' + DAY.encode() + b'", "files": [], "next": "c2"}', "next"),
    ],
    ids=["files", "date", "next"],
)
def test_a_repeated_top_level_key_refuses_the_page(answer: bytes, key: str, backend: str) -> None:
    """`date`, `files` or `next` given twice in one page is a malformed listing (the later
    copy would otherwise stream a second time or replace the first)."""
    with pytest.raises(MalformedResponseError) as caught:
        pages(answer)
    assert str(caught.value) == f"listing.{key}: given twice (page 1)"


def test_keys_of_nested_objects_are_not_top_level_keys(backend: str) -> None:
    """A `files` or `date` key inside another value (even under the key "") is no page key."""
    nested = b'{"": {"date": "x", "files": 1}, "date": "' + DAY.encode() + b'", "files": ['
    nested += body(good("a")) + b'], "meta": {"next": 5}}'
    parser = ListingParser(DAY)
    assert [e.entity for e in parser.page([nested])] == ["a"]
    assert parser.next_cursor is None


def test_a_repeated_cursor_is_a_provider_fault() -> None:
    """A cursor seen before would loop forever: the listing is refused."""
    with pytest.raises(MalformedResponseError, match="page 3 repeats an earlier cursor"):
        pages(
            body({**listing(good("a")), "next": "x"}),
            body({**listing(good("b")), "next": "y"}),
            body({**listing(good("c")), "next": "x"}),
        )


def test_cursors_are_remembered_by_digest_not_in_full() -> None:
    """A provider's cursors may be long (72 KB x 10,000 pages): only a 32-byte digest of each is kept."""
    parser = ListingParser(DAY)
    for n in range(3):
        list(parser.page([body({**listing(good(f"e{n}")), "next": f"{n}" + "c" * 72_000})]))
    assert len(parser.next_cursor or "") == 72_001  # the last one is still asked for, whole
    assert sorted(len(seen) for seen in parser._cursors) == [32, 32, 32]


def test_page_and_file_caps() -> None:
    """More pages or files than the configured caps refuse the listing."""
    page = body({**listing(good("a")), "next": "n"})
    with pytest.raises(MalformedResponseError, match="more than 1 pages"):
        pages(page, body(listing()), limits=ListingLimits(max_pages=1))
    with pytest.raises(MalformedResponseError, match="more than 2 files"):
        pages(body(listing(good("a"), good("b"), good("c"))), limits=ListingLimits(max_files=2))


def test_one_entry_larger_than_the_cap_refuses_the_listing() -> None:
    """A giant entry cannot exhaust memory: past the per-entry cap the listing is refused."""
    limits = ListingLimits(max_entry_bytes=16 * 1024)
    small = good("a", extra="x" * 8000)  # 8 KB of unknown field: under the cap, kept
    assert [f.entity for f in pages(body(listing(small)), limits=limits).files] == ["a"]
    giant = body(listing(good("a"), {**good("b"), "extra": ["x" * 100] * 400}))
    with pytest.raises(MalformedResponseError, match=r"files\[1\]: the entry is larger than 16384"):
        pages(giant, limits=limits)


def test_one_giant_token_is_refused_before_it_is_buffered_whole() -> None:
    """A huge string (in an entry or an unknown top-level field) trips the cap while streaming."""
    limits = ListingLimits(max_entry_bytes=16 * 1024)
    giant = b'{"date": "' + DAY.encode() + b'", "junk": "' + b"x" * 10_000_000 + b'", "files": []}'
    parser = ListingParser(DAY, limits)
    chunks = (giant[i : i + 65536] for i in range(0, len(giant), 65536))
    with pytest.raises(MalformedResponseError, match="a JSON value longer than 16384 bytes"):
        list(parser.page(chunks))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"", "invalid JSON"),
        (b"[]", "listing: expected a JSON object, got list"),
        (body({"date": DAY, "files": {}}), "listing.files: expected a list, got dict"),
        (body({"date": DAY}), "listing.files: missing"),
        (body({**listing(), "next": 5}), "listing.next: expected a non-empty string cursor"),
        (body(listing(date=None)), "listing.date: expected '2026-02-28', got null"),
        (body(listing()) + b" {}", "invalid JSON"),
    ],
)
def test_whole_listing_faults_raise(answer: bytes, message: str) -> None:
    """Faults of the answer as a whole are MalformedResponseError naming the fault."""
    with pytest.raises(MalformedResponseError, match=message):
        pages(answer)


def test_numbers_json_loads_tolerates_refuse_the_listing(backend: str) -> None:
    """NaN (not JSON) refuses the listing; a 30-digit size does too on yajl2_c, not on python."""
    nan = body(listing(good("a"))).replace(b"12345", b"NaN")
    with pytest.raises(MalformedResponseError, match=r"invalid JSON .* at entry 0"):
        pages(nan)
    huge = body(listing(good("a"))).replace(b"12345", b"1" + b"0" * 30)
    if backend == "python":
        assert "huge declared size" in pages(huge).rejected[0].reason
    else:
        with pytest.raises(MalformedResponseError, match=r"\(a number out of range\) at entry 0"):
            pages(huge)


SIGNATURE = "0123456789abcdefSIGNATURE"
LEAKY_URL = f"https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature={SIGNATURE}"


BREAKS = {  # a listing broken in or right after its presigned URL, and the fixed detail
    "invalid-utf8": (lambda d: d.replace(b"SIGNATURE", b"SIGNA\xffTURE"), "a bad token or byte"),
    "stray-token": (lambda d: d.replace(b'TURE", ', b'TURE" @, '), "a bad token or byte"),
    "unquoted": (lambda d: d.replace(b'"https:', b"https:"), "a bad token or byte"),
    "truncated": (
        lambda d: d[: d.index(b"TURE") + 4],
        "the answer breaks off or has trailing data",
    ),
}


@pytest.mark.parametrize("fault", sorted(BREAKS))
def test_a_parse_error_never_quotes_the_input(fault: str, backend: str) -> None:
    """The parser's own words (yajl quotes ~30 bytes around the fault) never reach the
    message: a presigned URL's signature or credential would be in the batch's ErrorMessage."""
    breaks, detail = BREAKS[fault]
    with pytest.raises(MalformedResponseError) as caught:
        list(ListingParser(DAY).page([breaks(body(listing(good("a", url=LEAKY_URL))))]))
    message = str(caught.value)
    assert message == f"malformed listing: invalid JSON ({detail}) at entry 0 (page 1)"
    assert not any(part in message for part in ("AKIA", "0123456789", "amazonaws", "TURE"))

"""The stub provider's listing answers: pages, opaque cursors, synthetic entries, broken pages.

A listing is an indexed sequence of entries; a page is a slice of it written to the socket
entry by entry (chunked), so a 100,000-entry answer is never held whole. Cursors are base64 of
"{date}#{offset}" (carrying '=', '+' or '/': a client that does not URL-encode them is
caught). Synthetic files list large days without storing them: docs/ARCHITECTURE.md, "Why
the listing is a stream".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator

from dlpipe.local.stub.faults import BROKEN_MALFORMED, Descriptor, Faults

SYNTHETIC_PREFIX = "synthetic_"
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_CHUNK_BYTES = 64 * 1024


def encode_cursor(date: str, offset: int) -> str:
    """The opaque cursor of the page starting at `offset`."""
    return base64.b64encode(f"{date}#{offset}".encode()).decode("ascii")


def decode_cursor(cursor: str, date: str) -> int | None:
    """The offset a cursor of `date` stands for; None if it is not one of ours."""
    try:
        day, _, offset = base64.b64decode(cursor, validate=True).decode("ascii").partition("#")
        value = int(offset)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return value if day == date and value >= 0 else None


def synthetic_entity(index: int) -> str:
    """The entity name of synthetic file `index`."""
    return f"{SYNTHETIC_PREFIX}{index:07d}"


def listing_entry(
    entity: str,
    url: str,
    encrypted_key: str,
    iv: bytes,
    *,
    cipher: str,
    size: int,
    sha256: str,
    expires_at: str,
) -> Descriptor:
    """One listing entry as the provider API documents it: the stub's one builder of them."""
    return {
        "entity": entity,
        "url": url,
        "encrypted_key": encrypted_key,
        "iv": base64.b64encode(iv).decode("ascii"),
        "cipher": cipher,
        "size": size,
        "sha256": sha256,
        "expires_at": expires_at,
    }


def synthetic_descriptor(entity: str, url: str, encrypted_key: str, expires_at: str) -> Descriptor:
    """A well-formed descriptor of an object that does not exist (a synthetic file).

    Why they exist: docs/ARCHITECTURE.md, "Why the listing is a stream".
    """
    iv = hashlib.sha256(entity.encode()).digest()[:16]
    return listing_entry(
        entity,
        url,
        encrypted_key,
        iv,
        cipher="AES-256-CBC",
        size=0,
        sha256=_EMPTY_SHA256,
        expires_at=expires_at,
    )


def page_chunks(
    date: str,
    entries: Iterator[dict[str, object]],
    next_cursor: str | None,
    *,
    page: int,
    faults: Faults,
) -> Iterator[bytes]:
    """The page's JSON, about 64 KiB a chunk; broken as `faults.broken_page` asks."""
    broken = faults.broken_page == page
    shown_date = date if faults.listing_date is None else faults.listing_date
    buffer = [f'{{"date": {json.dumps(shown_date)}, "files": ['.encode()]
    size = 0
    for index, entry in enumerate(entries):
        if broken and index == faults.broken_at_entry:
            yield from _broken(buffer, index, entry, faults.broken_page_kind)
            if faults.broken_page_kind != BROKEN_MALFORMED:
                return
            broken = False
            continue
        piece = (b", " if index else b"") + json.dumps(entry).encode()
        buffer.append(piece)
        size += len(piece)
        if size >= _CHUNK_BYTES:
            yield b"".join(buffer)
            buffer, size = [], 0
    if broken:  # the page had fewer entries than `broken_at_entry`: break at its end
        yield from _broken(buffer, -1, None, faults.broken_page_kind)
        if faults.broken_page_kind != BROKEN_MALFORMED:
            return
    tail = "]" if next_cursor is None else f'], "next": {json.dumps(next_cursor)}'
    buffer.append(f"{tail}}}".encode())
    yield b"".join(buffer)


def _broken(
    buffer: list[bytes], index: int, entry: dict[str, object] | None, kind: str
) -> Iterator[bytes]:
    comma = b", " if index > 0 else b""
    if kind == BROKEN_MALFORMED:
        buffer.append(comma + b'{"entity": @bad}')  # not JSON: '@' starts no value
    else:
        text = json.dumps(entry).encode() if entry is not None else b'{"entity": "cut'
        buffer.append(comma + text[: max(1, len(text) // 2)])  # the answer stops mid-entry
    yield b"".join(buffer)
    buffer.clear()

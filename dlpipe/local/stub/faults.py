"""The stub provider's fault switches, and the small tables that apply them.

Three kinds: per API call (5xx, 429, stall, latency, bad JSON, a broken listing page), per
descriptor when it is served (wrong sha256/size/IV/cipher, dropped or replaced fields), and
per stored object when a date is published (tampered, truncated, extra bytes: set those
before the date's first listing). URL and key faults (expired, missing object, wrong key) are applied by the stub.
"""

from __future__ import annotations

import base64
import copy
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Final


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Final = _Drop()  # in `malformed_fields`: remove the field instead of replacing it
UNKNOWN_CIPHER = "AES-128-ECB"
TRUNCATED_BYTES = 5  # leaves CBC off its block boundary, and cuts into a GCM tag
EXTRA_BYTES = b"\x00" * 16
BROKEN_TRUNCATED = "truncated"  # the page's JSON stops mid-entry (the HTTP body ends cleanly)
BROKEN_MALFORMED = "malformed"  # a bad token where the entry should be, then the rest
BROKEN_PAGE_KINDS = (BROKEN_TRUNCATED, BROKEN_MALFORMED)


class Streams:
    """What the trickling file endpoint saw: downloads started, open now, most open at once.
    One instance is shared by every snapshot of its Faults, so a test reads it while it runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.downloads = self.open = self.peak = 0

    def started(self) -> int:
        """Count a download that starts; its number (1 for the first)."""
        with self._lock:
            self.downloads += 1
            self.open += 1
            self.peak = max(self.peak, self.open)
            return self.downloads

    def ended(self) -> None:
        """Count a download that ended, however (sent, or the client went away)."""
        with self._lock:
            self.open -= 1


@dataclass
class Faults:
    """Mutable switches; change them with `set` while the stub runs (each call sees one snapshot)."""

    error_rate: float = 0.0  # fraction of API calls answered 500/502/503
    throttle_rate: float = 0.0  # 429 with Retry-After: 1
    stall_rate: float = 0.0  # sleep `stall_seconds` before answering
    stall_seconds: float = 0.0
    latency_s: float = 0.0  # added to every call
    malformed_json: bool = False
    empty_listing: bool = False
    listing_date: str | None = None  # every listing page's `date`, in place of the asked one
    malformed_fields: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    expired_url_entities: AbstractSet[str] = frozenset()  # the listing's URL only
    always_expired_entities: AbstractSet[str] = frozenset()  # the refresh endpoint's too
    wrong_key_entities: AbstractSet[str] = frozenset()
    tampered_entities: AbstractSet[str] = frozenset()
    truncated_entities: AbstractSet[str] = frozenset()
    extra_bytes_entities: AbstractSet[str] = frozenset()
    bad_sha_entities: AbstractSet[str] = frozenset()
    bad_size_entities: AbstractSet[str] = frozenset()
    missing_object_entities: AbstractSet[str] = frozenset()
    bad_iv_entities: AbstractSet[str] = frozenset()
    unknown_cipher_entities: AbstractSet[str] = frozenset()
    duplicate_entities: AbstractSet[str] = frozenset()
    extra_listing_entries: Sequence[Mapping[str, object]] = ()  # raw, hostile entries
    # File URLs point at the stub itself, which sends each file at this many bytes a second
    # (0: the presigned S3 URL, at full speed); only the first `trickle_downloads` downloads
    # trickle (None: all of them), so a provider can recover.
    trickle_bytes_per_s: int = 0
    trickle_downloads: int | None = None
    streams: Streams = field(default_factory=Streams, compare=False)
    broken_page: int = 0  # 1-based listing page answered with broken JSON; 0: none
    broken_page_kind: str = BROKEN_TRUNCATED  # one of BROKEN_PAGE_KINDS
    broken_at_entry: int = 0  # entries of that page served intact before the break
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def set(self, **changes: object) -> None:
        """Change some switches at once; unknown names raise TypeError."""
        names = {f.name for f in fields(self) if not f.name.startswith("_")}
        if unknown := set(changes) - names:
            raise TypeError(f"unknown fault switch(es): {', '.join(sorted(unknown))}")
        with self._lock:
            for name, value in changes.items():
                setattr(self, name, value)

    def snapshot(self) -> Faults:
        """A consistent copy for one API call."""
        with self._lock:
            return copy.copy(self)


class CallFault(Enum):
    """What an API call suffers before it is answered."""

    NONE = "none"
    ERROR = "error"
    THROTTLE = "throttle"
    STALL = "stall"


def draw_call_fault(faults: Faults, rng: random.Random) -> CallFault:
    """One draw: [0, error) is a 5xx, then `throttle_rate` a 429, then `stall_rate` a stall."""
    draw = rng.random()
    for fault, rate in (
        (CallFault.ERROR, faults.error_rate),
        (CallFault.THROTTLE, faults.throttle_rate),
        (CallFault.STALL, faults.stall_rate),
    ):
        if draw < rate:
            return fault
        draw -= rate
    return CallFault.NONE


Descriptor = dict[str, object]

# Served descriptor faults: switch name -> how the file object is falsified.
_DESCRIPTOR_FAULTS: tuple[tuple[str, Callable[[Descriptor], Descriptor]], ...] = (
    ("bad_sha_entities", lambda d: {**d, "sha256": "0" * 64}),
    ("bad_size_entities", lambda d: {**d, "size": int(str(d["size"])) + 1}),
    ("bad_iv_entities", lambda d: {**d, "iv": base64.b64encode(b"short").decode()}),
    ("unknown_cipher_entities", lambda d: {**d, "cipher": UNKNOWN_CIPHER}),
)


def falsify_descriptor(descriptor: Descriptor, entity: str, faults: Faults) -> Descriptor:
    """Apply the descriptor faults switched on for `entity`, then `malformed_fields`."""
    for switch, falsify in _DESCRIPTOR_FAULTS:
        if entity in getattr(faults, switch):
            descriptor = falsify(descriptor)
    for name, value in faults.malformed_fields.get(entity, {}).items():
        if value is DROP:
            descriptor.pop(name, None)
        else:
            descriptor[name] = value
    return descriptor


Transform = Callable[[Iterable[bytes], int], Iterator[bytes]]


def _flip_middle_byte(chunks: Iterable[bytes], size: int) -> Iterator[bytes]:
    target, offset = size // 2, 0
    for chunk in chunks:
        i = target - offset
        offset += len(chunk)
        yield (
            chunk[:i] + bytes([chunk[i] ^ 0x01]) + chunk[i + 1 :] if 0 <= i < len(chunk) else chunk
        )


def _drop_tail(chunks: Iterable[bytes], size: int) -> Iterator[bytes]:
    keep = max(0, size - TRUNCATED_BYTES)
    for chunk in chunks:
        if keep > 0:
            yield chunk[:keep]
        keep -= len(chunk)


def _append_extra(chunks: Iterable[bytes], _size: int) -> Iterator[bytes]:
    yield from chunks
    yield EXTRA_BYTES


# Stored-object faults: switch name -> how the ciphertext is damaged on its way to S3.
_CIPHERTEXT_FAULTS: tuple[tuple[str, Transform], ...] = (
    ("tampered_entities", _flip_middle_byte),
    ("truncated_entities", _drop_tail),
    ("extra_bytes_entities", _append_extra),
)


def damage_ciphertext(
    chunks: Iterable[bytes], size: int, entity: str, faults: Faults
) -> Iterable[bytes]:
    """The ciphertext stream with the object faults switched on for `entity` (one is enough)."""
    for switch, transform in _CIPHERTEXT_FAULTS:
        if entity in getattr(faults, switch):
            return transform(chunks, size)
    return chunks

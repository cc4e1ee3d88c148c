"""An in-memory provider listing for the batch flow (its FileLister port)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.listing import FileDescriptor, ListingResult, RejectedFile


def descriptor(entity: str, date: str, size: int = 100) -> FileDescriptor:
    """A listed file (its URL and key are placeholders: the flow never opens them)."""
    return FileDescriptor(
        entity=entity,
        date=date,
        url=f"https://provider.example/{entity}?X-Amz-Signature=abc",
        encrypted_key="a2V5",
        iv="aXZpdml2aXZpdml2",
        cipher=CIPHER_GCM,
        size=size,
        sha256="0" * 64,
        expires_at=None,
    )


@dataclass
class FakeLister:
    """Streams the day's entries in order; `opened` counts how often the listing was read."""

    entries: list[FileDescriptor | RejectedFile] = field(default_factory=list)
    opened: int = 0

    def iter_listing(self, date: str) -> Iterator[FileDescriptor | RejectedFile]:
        self.opened += 1
        yield from self.entries

    def list_files(self, date: str) -> ListingResult:
        files = [e for e in self.iter_listing(date) if isinstance(e, FileDescriptor)]
        rejected = [e for e in self.entries if isinstance(e, RejectedFile)]
        return ListingResult(date, files, rejected)

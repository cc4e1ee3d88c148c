"""The root guard (dlpipe/services/orchestrator/root_guard.py): a default feed's entity that
names a reserved root is refused in any letter case, as the prefix rule ignores case; other
entities pass as they were listed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dlpipe.domain.listing import FileDescriptor, ListingResult, RejectedFile
from dlpipe.services.orchestrator.root_guard import RootGuard, guarded, reserved_roots

DAY = "2026-02-28"
ROOTS = reserved_roots(["vendor-b/daily", "Accounts/eu", ""])


def _file(entity: str) -> FileDescriptor:
    return FileDescriptor(
        entity, DAY, "https://files.example/f", "a2V5", "aXY=", "AES-256-GCM", 1, None, None
    )


@dataclass(frozen=True)
class Listed:
    """A lister of one day's entries, read whole (no iter_listing)."""

    files: list[FileDescriptor]

    def list_files(self, date: str) -> ListingResult:
        """The day's files, none refused."""
        return ListingResult(date, self.files, [])


@pytest.mark.parametrize(
    ("entity", "owner"),
    [
        ("vendor-b", "another feed's files"),
        ("Vendor-B", "another feed's files"),
        ("VENDOR-B", "another feed's files"),
        ("accounts", "another feed's files"),
        ("_dlpipe", "dlpipe's own keys"),
        ("_DLPipe", "dlpipe's own keys"),
    ],
)
def test_an_entity_naming_a_reserved_root_in_any_case_is_refused(entity: str, owner: str) -> None:
    """`Vendor-B/...` beside `vendor-b/daily/` is one folder on a case-insensitive copy."""
    refused = guarded(_file(entity), ROOTS)
    assert isinstance(refused, RejectedFile)
    assert refused.entity == entity
    assert f"entity {entity!r} is reserved: {entity}/ holds {owner}" in refused.reason


@pytest.mark.parametrize("entity", ["vendor-bb", "vendor", "daily", "Accounts-eu", "dlpipe"])
def test_an_entity_that_only_resembles_a_root_passes(entity: str) -> None:
    assert guarded(_file(entity), ROOTS) == _file(entity)


def test_the_guarded_listing_refuses_a_case_variant_read_whole_or_entry_by_entry() -> None:
    """RootGuard over a lister: `Vendor-B` among the refused, `trades` kept, by list_files and
    by iter_listing."""
    guard = RootGuard(Listed([_file("Vendor-B"), _file("trades")]), ROOTS)
    listing = guard.list_files(DAY)
    assert [f.entity for f in listing.files] == ["trades"]
    assert [r.entity for r in listing.rejected] == ["Vendor-B"]
    streamed = list(guard.iter_listing(DAY))
    assert [type(e).__name__ for e in streamed] == ["RejectedFile", "FileDescriptor"]

"""The default feed's files stay out of other feeds' places.

The default feed publishes at the bucket's root, `{entity}/{date}/...`, so an entity equal to
a named feed's first prefix segment (`vendor-b`) would put a stranger's file inside that feed's
folder, and `_dlpipe` next to dlpipe's own manifests. Letter case is ignored (`Vendor-B` too),
as the prefix rule ignores it: a consumer copying the bucket to a case-insensitive disk would
merge the two. Such an entry is refused like any other broken entry: an `error` job
`rejected_listing: entity 'vendor-b' is reserved ...`, no request for its file. Named feeds
publish under their own prefixes, which never overlap (dlpipe/domain/feeds.py), so only the
default feed is guarded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dlpipe.domain.feeds import RESERVED_PREFIX
from dlpipe.domain.listing import FileDescriptor, ListingResult, RejectedFile
from dlpipe.services.orchestrator.fanout import Entry, FileLister, open_listing


def reserved_roots(named_prefixes: list[str]) -> frozenset[str]:
    """The root-level names the default feed may not publish under, lower-cased: dlpipe's own
    and the first segment of every named feed's destination prefix."""
    firsts = (p.split("/", 1)[0] for p in named_prefixes if p)
    return frozenset({RESERVED_PREFIX, *(first.lower() for first in firsts)})


def guarded(entry: Entry, roots: frozenset[str]) -> Entry:
    """`entry`, or its refusal when its entity is a reserved root in any letter case."""
    if isinstance(entry, FileDescriptor) and entry.entity.lower() in roots:
        own = entry.entity.lower() == RESERVED_PREFIX
        owner = "dlpipe's own keys" if own else "another feed's files"
        reason = (
            f"entity {entry.entity!r} is reserved: {entry.entity}/ holds {owner}, where a"
            " file of the default feed would be taken for theirs"
        )
        return RejectedFile(entry.entity, reason, entry.entity)
    return entry


@dataclass(frozen=True)
class RootGuard:
    """A FileLister whose entries pass `guarded` (streamed when the lister streams)."""

    lister: FileLister
    roots: frozenset[str]

    def list_files(self, date: str) -> ListingResult:
        """The whole listing, reserved entities among the refused."""
        listing = self.lister.list_files(date)
        listed: list[Entry] = [*listing.files, *listing.rejected]
        entries = [guarded(e, self.roots) for e in listed]
        files = [e for e in entries if isinstance(e, FileDescriptor)]
        rejected = [e for e in entries if isinstance(e, RejectedFile)]
        return ListingResult(listing.date, files, rejected)

    def iter_listing(self, date: str) -> Iterator[Entry]:
        """The listing entry by entry, reserved entities refused."""
        for entry in open_listing(self.lister, date):
            yield guarded(entry, self.roots)

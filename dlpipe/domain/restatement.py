"""Restatements: what a vendor's listing of a day already delivered says changed.

Pure: the day's listing (each entry's FileID, size and SHA-256) against the day's jobs (what
each published, or that it was withdrawn). A listed file with no job is `added`; a completed
job whose listed size or SHA-256 differs from what it published is `changed`; a completed job
absent from a complete listing (every page read) is `withdrawn`; everything else is
`unchanged`. A file withdrawn before and still absent stays withdrawn and is none of these: an
unchanged day run again is no revision. A withdrawn file listed again is `added`. Jobs not
completed (failed, error, pending) are a rerun's business, never a restatement.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Revised(StrEnum):
    """What a revision says of one file of the day."""

    UNCHANGED = "unchanged"
    CHANGED = "changed"
    ADDED = "added"
    WITHDRAWN = "withdrawn"


@dataclass(frozen=True)
class ListedFile:
    """One entry of the day's listing: its FileID and what the vendor says its plaintext is
    (None: the entry does not say)."""

    file_id: str
    size: int | None
    sha256: str | None


@dataclass(frozen=True)
class DayFile:
    """One job of the day as a restatement reads it: whether it completed, what it published
    (size and SHA-256), and whether a revision withdrew it."""

    file_id: str
    completed: bool
    size: int | None
    sha256: str | None
    withdrawn: bool = False


@dataclass(frozen=True)
class Restatement:
    """The FileIDs of each kind, each sorted."""

    unchanged: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    withdrawn: tuple[str, ...] = ()

    @property
    def is_revision(self) -> bool:
        """True when anything changed, was added or was withdrawn: the day needs a revision."""
        return bool(self.changed or self.added or self.withdrawn)

    def counts(self) -> dict[str, int]:
        """How many of each kind, keyed by Revised's values."""
        return {str(kind): len(self.of(kind)) for kind in Revised}

    def of(self, kind: Revised) -> tuple[str, ...]:
        """The FileIDs of `kind`."""
        return {
            Revised.UNCHANGED: self.unchanged,
            Revised.CHANGED: self.changed,
            Revised.ADDED: self.added,
            Revised.WITHDRAWN: self.withdrawn,
        }[kind]


def changed_content(listed: ListedFile, published: DayFile) -> bool:
    """The vendor lists other contents than the job published: a size or a SHA-256 it gives
    that differs (one it does not give cannot tell a change)."""
    size_differs = listed.size is not None and listed.size != published.size
    sha_differs = listed.sha256 is not None and listed.sha256.lower() != (published.sha256 or "")
    return size_differs or sha_differs


def restatement(
    listed: Iterable[ListedFile], day: Iterable[DayFile], *, listing_complete: bool
) -> Restatement:
    """Compare the day's listing with its jobs; `listing_complete` is False when not every page
    was read, and then nothing is found withdrawn."""
    jobs = {job.file_id: job for job in day}
    kinds: dict[Revised, list[str]] = {kind: [] for kind in Revised}
    seen: set[str] = set()
    for entry in listed:
        seen.add(entry.file_id)
        job = jobs.get(entry.file_id)
        if job is None or job.withdrawn:
            kinds[Revised.ADDED].append(entry.file_id)
        elif job.completed and changed_content(entry, job):
            kinds[Revised.CHANGED].append(entry.file_id)
        else:
            kinds[Revised.UNCHANGED].append(entry.file_id)
    for file_id, job in jobs.items():
        if file_id in seen or not job.completed or job.withdrawn:
            continue  # (a file withdrawn before and still absent is no current file)
        kinds[Revised.WITHDRAWN if listing_complete else Revised.UNCHANGED].append(file_id)
    return Restatement(*(tuple(sorted(set(kinds[kind]))) for kind in Revised))

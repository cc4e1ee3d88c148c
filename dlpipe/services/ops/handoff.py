"""A consumer's questions about one feed's day: is it ready (`dlpipe handoff wait`,
`dlpipe.handoff.wait_for_day`), and does its manifest verify (`dlpipe handoff show`,
`show_day`)? Both follow the day's pointer, `latest.json`, to the manifest it names, checked
against the pointer's SHA-256 and size; `show` also HEADs every object the manifest lists
and reads the file lists beside it (the JSON Lines and the COPY manifest) entry by entry.
The checks are manifest_check.py's, the audit's own.

A restated day's pointer names its latest revision's manifest: each look says which revision
(1 for an ordinary manifest) and, for a revision, how many files changed, were added or were
withdrawn, so a sensor keyed on (date, revision) runs once more for each revision; `show` also
checks that the manifest it supersedes is there at the version it names."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date as _date
from datetime import timedelta
from enum import StrEnum
from typing import Any

from dlpipe.domain.handoff_events import REVISED_COUNTS
from dlpipe.domain.manifest import Manifest, ManifestError, day_prefix
from dlpipe.domain.model import validate_date
from dlpipe.domain.statuses import BATCH_OPEN, SUCCESSFUL_BATCH_STATUSES
from dlpipe.services.ops.manifest_check import (
    ManifestProblemError,
    list_problems,
    object_problems,
    read_manifest,
    version_problems,
)
from dlpipe.services.ops.manifest_ports import ManifestReader

# The manifest's top-level key naming its JSON Lines file list: an S3 URI, a key in the
# manifest's bucket, or an object with `uri` or `key`. A manifest without it names none.


class DayState(StrEnum):
    """Where a feed's day stands for a consumer, from the manifest `latest.json` names."""

    COMPLETED = "completed"  # every file published: load it
    FAILED = "failed"  # the batch ended failed: final until an operator reruns the day
    TIMEOUT = "timeout"  # the batch timed out: provisional, a repair may still complete it
    NOT_YET = "not_yet"  # no manifest yet (no latest.json)


# States that `wait` returns on at once; on the others it looks again until its timeout.
SETTLED = frozenset({DayState.COMPLETED, DayState.FAILED})
_ONE_DAY = timedelta(days=1)


class HandoffError(Exception):
    """The day's pointer or the manifest it names cannot be trusted (one line, naming it)."""


@dataclass(frozen=True)
class DayHandoff:
    """One look at a feed's day: its state and, once it has a manifest, where it is."""

    feed: str
    date: str
    state: DayState
    batch_id: str | None = None
    manifest_uri: str | None = None
    manifest_version_id: str | None = None
    manifest_sha256: str | None = None
    file_list_uri: str | None = None
    # The manifest's: expected, completed, failed, error, pending, and a revision's unchanged,
    # changed, added and withdrawn.
    counts: Mapping[str, int] | None = None
    revision: int = 1  # the day's revision (1: its first manifest, not a restatement's)

    @property
    def revised(self) -> dict[str, int] | None:
        """A revision's changed, added and withdrawn counts (None: an ordinary manifest)."""
        if self.revision == 1 or self.counts is None:
            return None
        return {name: self.counts.get(name, 0) for name in REVISED_COUNTS}

    @property
    def ready(self) -> bool:
        """True when the day completed: its files may be loaded."""
        return self.state is DayState.COMPLETED

    def to_dict(self) -> dict[str, Any]:
        """Stable keys for `--json` and scripts."""
        return {
            "feed": self.feed,
            "date": self.date,
            "state": str(self.state),
            "batch_id": self.batch_id,
            "manifest_uri": self.manifest_uri,
            "manifest_version_id": self.manifest_version_id,
            "manifest_sha256": self.manifest_sha256,
            "file_list_uri": self.file_list_uri,
            "counts": None if self.counts is None else dict(self.counts),
            "revision": self.revision,
        }


@dataclass(frozen=True)
class DayVerification:
    """A day's manifest checked object by object: how many verified and what is wrong."""

    handoff: DayHandoff
    entries: int
    verified: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when the day has a manifest and every check passed."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """The handoff's keys and the verification's."""
        return {
            **self.handoff.to_dict(),
            "entries": self.entries,
            "verified": self.verified,
            "problems": list(self.problems),
        }


def look(reader: ManifestReader, bucket: str, feed: str, date: str) -> DayHandoff:
    """The day as its pointer and manifest say now; HandoffError if either cannot be trusted
    (unreadable, or a manifest that is missing or differs from the pointer), ValueError for a
    feed name or date that is none."""
    return _read_day(reader, bucket, feed, date)[0]


def wait_for_day(
    reader: ManifestReader,
    bucket: str,
    feed: str,
    date: str,
    *,
    timeout_s: float,
    interval_s: float,
    verify: bool = False,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> DayHandoff:
    """Look every `interval_s` until the day completed or failed, or `timeout_s` passed (0:
    look once); the last look. A timed-out day is waited on: a repair may still end it.

    `verify`: a completed day is answered ready only once it verifies as `show_day` checks it
    (every object's version, size and SHA-256, the file list and COPY manifest); one that
    does not is HandoffError naming its first problem, never "ready"."""
    deadline = monotonic() + timeout_s
    while True:
        day = look(reader, bucket, feed, date)
        remaining = deadline - monotonic()
        if day.state in SETTLED or remaining <= 0:
            break
        sleep(min(interval_s, remaining))
    if verify and day.ready:
        checked = show_day(reader, bucket, feed, date)
        if not checked.ok:
            more = len(checked.problems) - 1
            tail = f" (and {more} more problem(s): dlpipe handoff show)" if more else ""
            raise HandoffError(f"the completed day does not verify: {checked.problems[0]}{tail}")
        day = checked.handoff
    return day


@dataclass(frozen=True)
class ReadyDays:
    """A walk over a feed's days, oldest first: what a sensor hands to runs, and where its
    next walk starts."""

    ready: tuple[DayHandoff, ...]  # completed (and verified, if asked), oldest first
    next_date: str  # the first day not handed on: the next walk's first (a sensor's cursor)
    failed: DayHandoff | None = None  # the failed day the walk stopped at, if it met one


def ready_days(
    reader: ManifestReader,
    bucket: str,
    feed: str,
    first: str,
    last: str,
    *,
    verify: bool = True,
) -> ReadyDays:
    """Each of the feed's days from `first` to `last` (inclusive), one look each, oldest
    first, up to the first that is not completed: a day not settled yet (no manifest, or
    timed out: a repair may still complete it) ends the walk there, so no later day is handed
    on before it; a failed day ends it too, named in `failed`. A completed day with no files
    is ready like any other (its counts say 0 completed: its JSON Lines file list is empty).
    `verify`: each completed day is checked as `wait_for_day(verify=True)` checks it."""
    day, end = _date.fromisoformat(validate_date(first)), _date.fromisoformat(validate_date(last))
    ready: list[DayHandoff] = []
    while day <= end:
        found = wait_for_day(
            reader, bucket, feed, day.isoformat(), timeout_s=0, interval_s=1, verify=verify
        )
        if found.state is DayState.FAILED:
            return ReadyDays(tuple(ready), day.isoformat(), found)
        if not found.ready:
            break
        ready.append(found)
        day += _ONE_DAY
    return ReadyDays(tuple(ready), day.isoformat())


def show_day(reader: ManifestReader, bucket: str, feed: str, date: str) -> DayVerification:
    """The day's manifest and every object it lists checked (version, size, SHA-256 by
    HEAD), and its JSON Lines file list and COPY manifest against its entries; each problem
    one line, none when the day verifies. A day without a manifest is a
    problem too. ValueError for a feed name or date that is none."""
    day_prefix(feed, date)
    try:
        day, manifest = _read_day(reader, bucket, feed, date)
    except HandoffError as exc:
        return DayVerification(DayHandoff(feed, date, DayState.NOT_YET), 0, 0, (str(exc),))
    if manifest is None:
        return DayVerification(day, 0, 0, ("no manifest yet (no latest.json)",))
    problems = tuple(object_problems(reader, manifest.entries))
    entries = len(manifest.entries)
    listed = (*list_problems(reader, manifest), *_superseded_problems(reader, manifest))
    return DayVerification(day, entries, entries - len(problems), problems + listed)


def _superseded_problems(reader: ManifestReader, manifest: Manifest) -> list[str]:
    """A revision names the manifest it supersedes by key and version: it must be there, so
    a consumer can tell what it loaded before from what changed (a version may be None in an
    unversioned bucket: the key's current object then)."""
    revision = manifest.header.revision
    if revision is None:
        return []
    key, version = revision.supersedes_key, revision.supersedes_version_id
    if reader.head(key, version) is None:
        return [f"revision {revision.number} supersedes {key} version {version}, which is missing"]
    return []


def _read_day(
    reader: ManifestReader, bucket: str, feed: str, date: str
) -> tuple[DayHandoff, Manifest | None]:
    day_prefix(feed, date)  # ValueError (one line) for a bad feed name or date, before any I/O
    try:
        pointed = reader.read_pointer(feed, date)
    except ManifestError as exc:
        raise HandoffError(f"latest.json unreadable: {exc}") from exc
    if pointed is None:
        return DayHandoff(feed, date, DayState.NOT_YET), None
    pointer = pointed[0]
    try:
        manifest, _ = read_manifest(reader, pointer)
    except ManifestProblemError as exc:
        raise HandoffError(str(exc)) from exc
    for problem in version_problems(reader, pointer):
        raise HandoffError(problem)
    head = manifest.header
    if (head.feed, head.date, head.batch_id) != (feed, date, pointer.batch_id):
        raise HandoffError(
            f"manifest {pointer.key} is batch {head.batch_id}'s of {head.feed} {head.date},"
            f" not what latest.json names"
        )
    day = DayHandoff(
        feed,
        date,
        _state(head.status),
        batch_id=head.batch_id,
        manifest_uri=f"s3://{bucket}/{pointer.key}",
        manifest_version_id=pointer.version_id,
        manifest_sha256=pointer.sha256,
        file_list_uri=_file_list_uri(manifest.file_list, bucket),
        counts=head.fields()["counts"],
        revision=1 if head.revision is None else head.revision.number,
    )
    return day, manifest


def _state(status: str) -> DayState:
    if status in SUCCESSFUL_BATCH_STATUSES:
        return DayState.COMPLETED
    return DayState.TIMEOUT if status in BATCH_OPEN else DayState.FAILED


def _file_list_uri(named: str | None, bucket: str) -> str | None:
    if named is None:
        return None
    return named if named.startswith("s3://") else f"s3://{bucket}/{named}"

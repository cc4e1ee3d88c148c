"""`dlpipe batch audit`: per date and feed, is the day complete and does its manifest hold?

For each date: a completed batch exists and every file it listed completed; the day's pointer
names that batch's completed manifest (not its timeout one, if it was repaired); the
manifest's bytes hash to the SHA-256 the pointer recorded and parse; each entry's object is
there at the entry's version, with its size and SHA-256 metadata (HEAD only: no file is read
twice; the manifest, version and object checks are manifest_check.py's, shared with `dlpipe
handoff show`); the JSON Lines file list and the COPY manifest beside it hold exactly the
manifest's entries; and the manifest's counts agree with the batch item and with the jobs
(BatchIndex COUNTs). The pointer names the object that is there: its version too, so a
manifest deleted and written again is named, as is a pointer that still names the deleted
version; and the `Day Completed` event the batch sent named that same version and SHA-256, and
no later run withheld the hand-off (HandoffProblem). Each problem is one line.

A restated day's completed batch is its latest revision, whose event is `Day Revised`; its
manifest lists only the day's current files, so the jobs it is counted against are its own
partition's (exactly its changed and added files: unchanged ones stay, withdrawn ones stay
completed where they were). Every manifest it supersedes, back to the day's first, is checked
too, each against the object versions it names (audit_revisions.py), a problem of one naming
its revision and batch."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from dlpipe.domain.handoff_events import DAY_COMPLETED, DAY_REVISED, HandoffEvent
from dlpipe.domain.manifest import DayPointer, Manifest, ManifestError
from dlpipe.domain.model import Batch, BatchStatus, JobStatus
from dlpipe.services.ops.audit_revisions import RevisionCheck, revision_checks
from dlpipe.services.ops.feed_filter import record_feed
from dlpipe.services.ops.manifest_check import (
    ManifestProblemError,
    list_problems,
    object_problems,
    read_manifest,
    version_problems,
)
from dlpipe.services.ops.manifest_ports import ManifestReader
from dlpipe.services.ops.ports import OpsBatches, OpsJobs


@dataclass(frozen=True)
class AuditDeps:
    """The stores the audit reads."""

    batches: OpsBatches
    jobs: OpsJobs
    manifests: ManifestReader


@dataclass
class DayCheck:
    """One date of one feed: its completed batch, its manifest and what is wrong."""

    date: str
    feed: str
    batch: Batch | None = None
    manifest_key: str | None = None
    entries: int | None = None
    problems: list[str] = field(default_factory=list)
    revision: int | None = None  # the pointer's manifest's (1: a day never restated)
    revisions: list[RevisionCheck] = field(default_factory=list)  # the manifests it supersedes

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems

    def lines(self) -> list[str]:
        """`2026-02-28 vendor-b: object ... missing`, one per problem."""
        return [f"{self.date} {self.feed}: {problem}" for problem in self.problems]


def audit_manifests(deps: AuditDeps, dates: list[str], feed: str) -> list[DayCheck]:
    """Check each date of `feed` (module docstring): one DayCheck per date."""
    return [_audit_day(deps, day, feed) for day in dates]


def _audit_day(deps: AuditDeps, day: str, feed: str) -> DayCheck:
    check = DayCheck(day, feed)
    found = [b for b in deps.batches.query_by_date(day) if record_feed(b) == feed]
    completed = [b for b in found if b.status is BatchStatus.COMPLETED]
    chosen = completed or found
    check.batch = chosen[-1] if chosen else None
    if not completed:
        latest = f" (latest batch {found[-1].batch_id} is {found[-1].status})" if found else ""
        check.problems.append(f"no completed batch{latest}")
    elif (missing := completed[-1].expected - completed[-1].completed) > 0:
        check.problems.append(f"{missing} listed file(s) not completed")
    try:
        pointed = deps.manifests.read_pointer(feed, day)
    except ManifestError as exc:
        check.problems.append(f"latest.json unreadable: {exc}")
        return check
    if pointed is None:
        check.problems.append("manifest missing (no latest.json)")
        return check
    pointer = pointed[0]
    check.manifest_key = pointer.key
    if completed:
        check.problems += _pointer_problems(pointer, completed[-1])
        check.problems += _handoff_problems(pointer, completed[-1])
    try:
        manifest, _ = read_manifest(deps.manifests, pointer)
    except ManifestProblemError as exc:
        check.problems.append(str(exc))
        return check
    check.problems += version_problems(deps.manifests, pointer)
    check.entries = len(manifest.entries)
    check.problems += object_problems(deps.manifests, manifest.entries)
    check.problems += list_problems(deps.manifests, manifest)
    check.problems += _count_problems(deps, found, manifest)
    revision = manifest.header.revision
    check.revision = 1 if revision is None else revision.number
    check.revisions = revision_checks(deps.manifests, found, manifest)
    check.problems += [line for superseded in check.revisions for line in superseded.lines()]
    return check


def _pointer_problems(pointer: DayPointer, completed: Batch) -> list[str]:
    """The pointer must name the completed batch's completed manifest: a batch repaired from
    timeout has a timeout manifest too, which its completed one replaces."""
    if pointer.batch_id != completed.batch_id:
        return [
            f"latest.json names batch {pointer.batch_id}, not the completed {completed.batch_id}"
        ]
    if pointer.status != str(BatchStatus.COMPLETED):
        return [
            f"latest.json names batch {pointer.batch_id}'s {pointer.status} manifest"
            f" {pointer.key}, not a completed one"
        ]
    return []


def _handoff_problems(pointer: DayPointer, completed: Batch) -> list[str]:
    """The event the batch handed off named the manifest the pointer names (version and
    SHA-256), and no run withheld the hand-off since (HandoffProblem on the batch item)."""
    problems = []
    if completed.handoff_problem:
        problems.append(f"hand-off withheld: {completed.handoff_problem}")
    if completed.handoff_event and completed.handoff_type in (DAY_COMPLETED, DAY_REVISED):
        named = HandoffEvent.from_dict(json.loads(completed.handoff_event)).detail.get("manifest")
        if (
            named
            and pointer.key == _named_key(named)
            and (
                named.get("version_id") != pointer.version_id
                or named.get("sha256") != pointer.sha256
            )
        ):
            problems.append(
                f"the {completed.handoff_type} event sent named {pointer.key} version"
                f" {named.get('version_id')}, latest.json names version {pointer.version_id}"
            )
    return problems


def _named_key(named: dict[str, object]) -> str:
    """The key of the manifest an event names (its `uri` without the bucket)."""
    return str(named.get("uri", "")).removeprefix("s3://").partition("/")[2]


def _count_problems(deps: AuditDeps, found: list[Batch], manifest: Manifest) -> list[str]:
    head = manifest.header
    batch = next((b for b in found if b.batch_id == head.batch_id), None)
    if batch is None:
        return [f"the manifest's batch {head.batch_id} is not in the batches table"]
    problems = []
    recorded = (batch.expected, batch.completed, batch.unsuccessful)
    listed = (head.expected, head.completed, head.failed + head.error)
    if recorded != listed:
        problems.append(
            f"manifest counts {listed} (expected, completed, unsuccessful) differ from"
            f" the batch's {recorded}"
        )
    revision = head.revision
    if revision is not None:
        moved = deps.jobs.count_by_batch(batch.batch_id, JobStatus.COMPLETED)
        if moved != revision.changed + revision.added:
            problems.append(
                f"{revision.changed + revision.added} changed and added manifest entries,"
                f" {moved} completed jobs in revision batch {batch.batch_id}"
            )
        return problems
    # The day's completed jobs sit in this batch's partition and its predecessors' (a rerun
    # never adopts a completed job): count them where the manifest was built from.
    day = [b for b in found if b.created_at <= batch.created_at]
    jobs = sum(deps.jobs.count_by_batch(b.batch_id, JobStatus.COMPLETED) for b in day)
    if jobs != len(manifest.entries):
        problems.append(f"{len(manifest.entries)} manifest entries, {jobs} completed jobs")
    return problems

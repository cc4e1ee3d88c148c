"""The dead-letter queue: inspect without consuming, and redrive without ever losing a message.

Redrive order per message: (requeue the job if failed/error), send to the main queue, and
only then delete from the DLQ. A crash in between leaves a duplicate, never a loss.

A message whose job belongs to a batch that has ended is held, as `jobs requeue` refuses such
a file (`recovery.ended_repairs`, the one rule): sent, it would complete in a batch nobody
polls, which stays as it ended. It stays in the DLQ, nothing written, its reason naming the run
of the day that repairs it (which adopts the file; a later redrive then sends or drops it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from dlpipe.domain.errors import RequeueRefusedError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import FileJob, JobStatus, file_feed
from dlpipe.domain.queued import QueuedMessage
from dlpipe.domain.statuses import UNSUCCESSFUL_JOB_STATUSES
from dlpipe.domain.transitions import lease_live
from dlpipe.log import get_logger
from dlpipe.services.ops.advice import DayRepair
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.feed_filter import FeedChoice
from dlpipe.services.ops.ports import OpsJobs
from dlpipe.services.ops.recovery import ended_repairs, send_jobs

PEEK_VISIBILITY_S = 30  # long enough to read the jobs, short if we crash before giving back
REDRIVE_VISIBILITY_S = 300


class Action(StrEnum):
    """What redrive does with one DLQ message."""

    DELETE = "delete"  # the job completed: nothing left to do
    REQUEUE_AND_SEND = "requeue+send"  # failed / error: back to available, then queued
    SEND = "send"  # available, or downloading (an expired lease is taken over by a worker)
    LEAVE = "leave"  # malformed body or unknown job: a person must look
    HOLD = "hold"  # its batch has ended: a new run of the day repairs it, not a send


# What would put a message's job back on the download queue.
_SENDS = (Action.REQUEUE_AND_SEND, Action.SEND)


@dataclass(frozen=True)
class DlqEntry:
    """A DLQ message, the job it names (as it is now), what redrive does and what it did."""

    message: QueuedMessage
    job: FileJob | None
    action: Action
    reason: str
    outcome: str | None = None  # after a redrive: redriven | deleted | left | held | not-sent
    repair: DayRepair | None = None  # HOLD: what repairs the file (its batch has ended)

    @property
    def file_id(self) -> str | None:
        """The FileID the message names, if it is a job message."""
        return self.message.job.file_id if self.message.job else None


def plan(message: QueuedMessage, job: FileJob | None, now_ms: int) -> tuple[Action, str]:
    """Decide a message's fate from the job's current record."""
    if message.job is None:
        return Action.LEAVE, f"malformed: {message.problem}"
    if job is None:
        return Action.LEAVE, "no such job"
    if job.status is JobStatus.COMPLETED:
        return Action.DELETE, "job completed"
    if job.status in UNSUCCESSFUL_JOB_STATUSES:
        return Action.REQUEUE_AND_SEND, f"job {job.status}"
    if lease_live(job, now_ms):
        # Its worker holds its own in-flight message; a copy would only bounce back here.
        return Action.LEAVE, f"held by worker {job.lease_owner}: redrive once it is done"
    return Action.SEND, f"job {job.status}"


def _of_feed(message: QueuedMessage, feed: FeedChoice) -> bool:
    """True if the message is of `feed` (every message for None; a malformed one is no feed's)."""
    if feed is None:
        return True
    return message.job is not None and file_feed(message.job.file_id, default=None) == feed


def _entries(
    ops: OpsContext, limit: int, visibility_s: int, feed: FeedChoice = None
) -> list[DlqEntry]:
    url = ops.settings.require("dlq_url")
    peeker = ops.messages()
    received = peeker.receive(url, limit, visibility_s, ops.receive_wait_seconds)
    # Another feed's messages go back at once, untouched: the DLQ is shared by every feed.
    messages = [m for m in received if _of_feed(m, feed)]
    others = [m for m in received if not _of_feed(m, feed)]
    if others:
        peeker.give_back(url, others)
    try:
        found = ops.jobs().batch_get([m.job.file_id for m in messages if m.job], consistent=True)
        entries = []
        for message in messages:
            job = found.get(message.job.file_id) if message.job else None
            entries.append(DlqEntry(message, job, *plan(message, job, ops.now_ms())))
        ended = ended_repairs(ops, [e.job for e in entries if e.job and e.action in _SENDS])
    except BaseException:
        peeker.give_back(url, messages)
        raise
    return [_held(e, ended) for e in entries]


def _held(entry: DlqEntry, ended: dict[str, DayRepair]) -> DlqEntry:
    """HOLD for a message that would go back to the queue, if its job's batch has ended."""
    repair = ended.get(entry.job.batch_id) if entry.job and entry.action in _SENDS else None
    if repair is None:
        return entry
    return replace(entry, action=Action.HOLD, reason=str(repair), repair=repair)


def peek(ops: OpsContext, limit: int, feed: FeedChoice = None) -> list[DlqEntry]:
    """Up to `limit` DLQ messages (of `feed` among them, if given) with their jobs; every
    message is given back at once."""
    entries = _entries(ops, limit, PEEK_VISIBILITY_S, feed)
    ops.messages().give_back(ops.settings.require("dlq_url"), [e.message for e in entries])
    return entries


def _requeue(jobs: OpsJobs, entry: DlqEntry, now_ms: int) -> DlqEntry:
    """failed / error -> available; if refused, re-plan from what the job is now."""
    if entry.action is not Action.REQUEUE_AND_SEND or entry.file_id is None:
        return entry
    try:
        job = jobs.requeue(entry.file_id)
    except RequeueRefusedError as refused:
        current = refused.current if isinstance(refused.current, FileJob) else None
        action, reason = plan(entry.message, current, now_ms)
        if action is Action.REQUEUE_AND_SEND:  # still failed: someone else's write won
            action, reason = Action.LEAVE, f"requeue refused: {refused}"
        return replace(entry, job=current, action=action, reason=reason)
    return replace(entry, job=job, action=Action.SEND, reason=f"requeued from {entry.reason}")


def _outcome(entry: DlqEntry, unsent: set[str]) -> str:
    if entry.action is Action.DELETE:
        return "deleted"
    if entry.action is Action.SEND:
        return "not-sent" if entry.file_id in unsent else "redriven"
    return "held" if entry.action is Action.HOLD else "left"


def _execute(ops: OpsContext, entries: list[DlqEntry]) -> list[DlqEntry]:
    jobs = ops.jobs()
    # Every queue the files go back to is found before the first write (ConfigError, nothing
    # changed): a requeued job whose message cannot be sent would wait for the sweeper.
    sending = [e.file_id for e in entries if e.file_id and e.action in _SENDS]
    for feed in {file_feed(f, default=DEFAULT_FEED_NAME) for f in sending}:
        ops.queue(feed)
    entries = [_requeue(jobs, e, ops.now_ms()) for e in entries]
    # Each job goes back to the queue its size routes it to: the DLQ is shared by both.
    to_send = [e.job for e in entries if e.action is Action.SEND and e.job is not None]
    unsent = send_jobs(ops, to_send) if to_send else set()
    return [replace(e, outcome=_outcome(e, unsent)) for e in entries]


def redrive(ops: OpsContext, limit: int, dry_run: bool, feed: FeedChoice = None) -> list[DlqEntry]:
    """Send DLQ messages (of `feed` among the first `limit`, if given) back to the main queue,
    then delete them; drop those of completed jobs; hold those of ended batches (HOLD)."""
    peeker, url = ops.messages(), ops.settings.require("dlq_url")
    entries = _entries(ops, limit, REDRIVE_VISIBILITY_S, feed)
    removed: set[str] = set()
    try:
        if dry_run:
            return [replace(e, outcome=f"would {e.action}") for e in entries]
        entries = _execute(ops, entries)
        # Only after the send succeeded: at-least-once, never a lost message.
        removable = [e.message for e in entries if e.outcome in ("redriven", "deleted")]
        removed = {m.message_id for m in removable} - set(peeker.delete(url, removable))
    finally:
        peeker.give_back(url, [e.message for e in entries if e.message.message_id not in removed])
    _log(entries)
    return entries


def _log(entries: list[DlqEntry]) -> None:
    log = get_logger(component="ops")
    for entry in entries:
        log.info(
            f"dlpipe.services.ops.dlq.{(entry.outcome or 'planned').replace('-', '_')}",
            message_id=entry.message.message_id,
            file_id=entry.file_id,
            reason=entry.reason,
        )

"""Typed records for a file job and a daily batch, and the identifiers they are keyed by."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import TypeVar

from dlpipe.domain import statuses
from dlpipe.domain.cipher_format import Cipher, UnknownCipher
from dlpipe.domain.errors import InvalidIdentifierError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, is_feed_name
from dlpipe.domain.outcome import OutcomeSummary

# The statuses and their table live in dlpipe/domain/statuses.py; callers import them here too.
JobStatus = statuses.JobStatus
BatchStatus = statuses.BatchStatus

# Entities become S3 key segments and file names: a strict allow-list, no dots, no slashes.
_ENTITY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_BATCH_ID = re.compile(
    r"^batch-(\d{4}-\d{2}-\d{2})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)


def validate_date(value: object) -> str:
    """Return `value` if it is a real calendar date written YYYY-MM-DD."""
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise InvalidIdentifierError(f"date must be YYYY-MM-DD, got {value!r}")
    try:
        date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidIdentifierError(f"{value!r} is not a calendar date") from exc
    return value


def validate_entity(value: object) -> str:
    """Return `value` if it is a safe entity name (letters, digits, '_' and '-', <= 64)."""
    if not isinstance(value, str) or not _ENTITY.fullmatch(value):
        raise InvalidIdentifierError(
            f"entity must be 1-64 letters, digits, '_' or '-' (no dots, slashes or spaces), got {value!r}"
        )
    return value


# The default feed's keys are the contract's formats ({entity}-{date}, batch-{date}-{uuid}),
# which existing items and tools use; a named feed's keys carry the feed before a '.', which
# neither a feed name nor an entity contains: no two collide.
_FEED_SEPARATOR = "."


def _with_feed(feed: str, key: str) -> str:
    if feed == DEFAULT_FEED_NAME:
        return key
    if not is_feed_name(feed):
        raise InvalidIdentifierError(f"feed must be [a-z0-9][a-z0-9-]{{0,30}}, got {feed!r}")
    return f"{feed}{_FEED_SEPARATOR}{key}"


def _split_feed(value: str) -> tuple[str, str] | None:
    """(feed, rest) of a key, None if a '.' follows no named feed; the default feed's keys
    have no '.', a named feed's one."""
    feed, separator, rest = value.partition(_FEED_SEPARATOR)
    if not separator:
        return DEFAULT_FEED_NAME, value
    # The default feed is never written with its name: one (feed, ...) has one key.
    if not is_feed_name(feed) or feed == DEFAULT_FEED_NAME:
        return None
    return feed, rest


def make_file_id(entity: str, download_date: str, feed: str = DEFAULT_FEED_NAME) -> str:
    """FileID = {entity}-{YYYY-MM-DD} (the default feed) or {feed}.{entity}-{YYYY-MM-DD}."""
    return _with_feed(feed, f"{validate_entity(entity)}-{validate_date(download_date)}")


def parse_file_key(file_id: object) -> tuple[str, str, str]:
    """Split a FileID into (feed, entity, date), refusing anything that is not one."""
    split = _split_feed(file_id) if isinstance(file_id, str) else None
    if split is None or len(split[1]) < 12 or split[1][-11] != "-":
        raise InvalidIdentifierError(
            "FileID must be {entity}-{YYYY-MM-DD} or {feed}.{entity}-{YYYY-MM-DD},"
            f" got {file_id!r}"
        )
    feed, rest = split
    return feed, validate_entity(rest[:-11]), validate_date(rest[-10:])


def parse_file_id(file_id: object) -> tuple[str, str]:
    """(entity, date) of any feed's FileID (parse_file_key also names the feed)."""
    _, entity, day = parse_file_key(file_id)
    return entity, day


def parse_batch_key(value: object) -> tuple[str, str]:
    """Split a BatchID into (feed, polling date), refusing anything that is not one."""
    split = _split_feed(value) if isinstance(value, str) else None
    match = _BATCH_ID.fullmatch(split[1]) if split else None
    if split is None or match is None:
        raise InvalidIdentifierError(
            f"BatchID must be [{{feed}}.]batch-{{YYYY-MM-DD}}-{{uuid}}, got {value!r}"
        )
    return split[0], validate_date(match.group(1))


def validate_batch_id(value: object) -> str:
    """Return `value` if it is [{feed}.]batch-{YYYY-MM-DD}-{uuid4}."""
    parse_batch_key(value)
    return str(value)


def make_batch_id(polling_date: str, uuid_hex: str, feed: str = DEFAULT_FEED_NAME) -> str:
    """BatchID = batch-{YYYY-MM-DD}-{uuid} (the default feed) or {feed}.batch-{...}-{uuid}."""
    key = f"batch-{validate_date(polling_date)}-{uuid_hex}"
    return validate_batch_id(_with_feed(feed, key))


# A key's parts by name, each with the caller's fallback for a value that is no such key: the
# one reading of a key's feed (and a BatchID's date) for every caller. The parse_* functions
# above refuse instead, for callers that validate.
_Fallback = TypeVar("_Fallback")


def file_feed(file_id: object, *, default: _Fallback) -> str | _Fallback:
    """The feed a FileID names; `default` if `file_id` is no FileID."""
    try:
        return parse_file_key(file_id)[0]
    except InvalidIdentifierError:
        return default


def batch_feed(batch_id: object, *, default: _Fallback) -> str | _Fallback:
    """The feed a BatchID names; `default` if `batch_id` is no BatchID."""
    try:
        return parse_batch_key(batch_id)[0]
    except InvalidIdentifierError:
        return default


def batch_polling_date(batch_id: object, *, default: _Fallback) -> str | _Fallback:
    """The polling date a BatchID names; `default` if `batch_id` is no BatchID."""
    try:
        return parse_batch_key(batch_id)[1]
    except InvalidIdentifierError:
        return default


@dataclass(frozen=True)
class FileJob:
    """One file of one day: where to fetch it, how to decrypt it, and who holds it."""

    file_id: str
    batch_id: str
    status: JobStatus
    entity: str
    download_date: str
    presigned_url: str
    encrypted_aes_key: str
    encoded_aes_iv: str
    cipher: Cipher | UnknownCipher  # UnknownCipher: as stored, refused where decrypted
    created_at: str
    status_updated_at_ms: int
    ttl_epoch_s: int
    expected_size: int | None = None
    expected_sha256: str | None = None
    url_expires_at: str | None = None
    completed_at: str | None = None
    error_message: str | None = None
    lease_owner: str | None = None
    lease_expires_at_ms: int | None = None
    attempts: int = 0
    byte_count: int | None = None
    sha256: str | None = None
    destination_key: str | None = None
    # Where in the day's listing the file was (0-based entry index): a later entry with the
    # same FileID is a duplicate, not a replay of this write (dlpipe/services/orchestrator/fanout.py).
    listing_index: int | None = None
    # A rerun's mark on a job of an earlier batch that it could not adopt (completed, or under
    # a live lease): `{BatchID}#{entry}` of the rerun's listing that named it (listed_by()), so
    # a later entry naming it again is found as a duplicate, as ListingIndex finds one.
    listed_by: str | None = None
    # The owner id of the claim whose write ended it (completed, failed, error, released):
    # how a retried write of that claim, refused by its own first send, knows it landed.
    finished_by: str | None = None
    # The feed it belongs to; its keys carry it too (make_file_id, make_batch_id).
    feed: str = DEFAULT_FEED_NAME
    # A restated file (dlpipe/domain/restatement.py): its revision (None: the first), what the
    # revision it replaces published (version id, SHA-256, size), and the revision batch that
    # found it withdrawn (its object stays).
    revision: int | None = None
    previous_version_id: str | None = None
    previous_sha256: str | None = None
    previous_size: int | None = None
    withdrawn_by: str | None = None
    # What the revision batch that placed it found it (restatement.Revised: changed, added);
    # with `revision`, it tells the revision's manifest each entry's mark.
    revised_as: str | None = None

    @property
    def is_terminal(self) -> bool:
        """True once the job is completed, failed or error."""
        return self.status in statuses.TERMINAL_JOB_STATUSES


def listed_by(batch_id: str, listing_index: int) -> str:
    """The ListedBy value for entry `listing_index` of `batch_id`'s listing."""
    return f"{batch_id}#{listing_index}"


def listed_index(value: str | None, batch_id: str) -> int | None:
    """The entry of `batch_id`'s listing a ListedBy value names; None if another batch's."""
    prefix = f"{batch_id}#"
    if value is None or not value.startswith(prefix) or not value[len(prefix) :].isdigit():
        return None
    return int(value[len(prefix) :])


# The String Sets (ExpectedFiles, CompletedFiles, FailedFiles) are kept only for a day of at
# most this many files: 3 sets x 1,000 FileIDs of ~30 bytes stay near 90 KB, far below
# DynamoDB's 400 KB item limit. A larger day carries counts only (SetsTruncated) and its
# membership is answered by BatchIndex.
SETS_MAX_FILES = 1_000


@dataclass(frozen=True)
class Batch:
    """One daily run: what was expected and what has finished.

    The counts hold at any size; the sets are present only while the day is small
    (SETS_MAX_FILES). An item without the counts derives them from its sets.
    """

    batch_id: str
    polling_date: str
    status: BatchStatus
    start_time: str
    created_at: str
    updated_at: str
    ttl_epoch_s: int
    expected_files: frozenset[str] = field(default_factory=frozenset)
    completed_files: frozenset[str] = field(default_factory=frozenset)
    failed_files: frozenset[str] = field(default_factory=frozenset)
    timeout_at: str | None = None
    error_message: str | None = None
    expected_count: int | None = None
    queued_count: int | None = None
    completed_count: int | None = None
    failed_count: int | None = None
    error_count: int | None = None
    sets_truncated: bool = False
    # Why it ended so (dlpipe/domain/outcome.py), written with its final status.
    outcome: OutcomeSummary | None = None
    # The rerun batch that adopted this batch's unfinished files (they left its partition).
    adopted_by: str | None = None
    feed: str = DEFAULT_FEED_NAME  # the feed whose day it runs
    # The hand-off (dlpipe/services/orchestrator/announce.py): the outcome event as first sent
    # (its JSON) and its detail-type, so a later run re-sends it byte for byte; why a run
    # withheld it (a manifest that no longer verifies, say); and the Day Late event's ID.
    handoff_event: str | None = None
    handoff_type: str | None = None
    handoff_problem: str | None = None
    late_event_id: str | None = None
    # A revision batch of a restated day (dlpipe/domain/restatement.py): its revision number
    # (2, 3, ...; None: the day's first batch, or a rerun of one), and the batch it revises.
    revision: int | None = None
    revises: str | None = None

    @property
    def is_terminal(self) -> bool:
        """True once the batch is completed, failed or timed out."""
        return self.status in statuses.TERMINAL_BATCH_STATUSES

    @property
    def has_sets(self) -> bool:
        """True while the item names its files (a day within SETS_MAX_FILES)."""
        return not self.sets_truncated

    @property
    def expected(self) -> int:
        """How many files the provider listed (ExpectedCount, else the size of ExpectedFiles)."""
        return self.expected_count if self.expected_count is not None else len(self.expected_files)

    @property
    def completed(self) -> int:
        """How many files completed (CompletedCount, else the size of CompletedFiles)."""
        if self.completed_count is not None:
            return self.completed_count
        return len(self.completed_files)

    @property
    def unsuccessful(self) -> int:
        """Files that ended failed or error (FailedCount + ErrorCount, else FailedFiles)."""
        if self.failed_count is None and self.error_count is None:
            return len(self.failed_files)
        return (self.failed_count or 0) + (self.error_count or 0)

    @property
    def pending(self) -> int:
        """Expected files not yet known to be finished."""
        return max(0, self.expected - self.completed - self.unsuccessful)

    @property
    def pending_files(self) -> frozenset[str]:
        """Expected files not yet known to be completed or failed (empty without sets)."""
        return self.expected_files - self.completed_files - self.failed_files


@dataclass(frozen=True)
class Verified:
    """What the verified plaintext turned out to be."""

    byte_count: int
    sha256: str


@dataclass(frozen=True)
class Published:
    """A job's file found published at its key (the sweeper's look): the verified object, and
    for a restated file's revision the version it replaced (None: a first revision, or not
    known)."""

    key: str
    verified: Verified
    previous_version_id: str | None = None

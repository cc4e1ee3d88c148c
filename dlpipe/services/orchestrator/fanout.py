"""fetch-and-queue fanned out: the day's listing streamed in chunks, one durable step a chunk.

Why chunks. One step that listed a 100,000-file day and wrote its jobs one PutItem at a time
could not finish inside one Lambda invocation (900 s), and its replay would redo the whole
day. So chunk n (1-based) is the step `fetch-and-queue-files` (n = 1) or `fetch-and-queue-files-n`:
it takes the next CHUNK_ENTRIES entries of the listing stream, writes their jobs (conditional
puts, WRITE_WORKERS threads), sends the new ones (SendMessageBatch, the same threads), and
checkpoints only counts and the stream offset it reached (QueueResult, ~150 bytes: far below
the 256 KB per-operation limit, whatever the day's size). The chunk that reaches the end of the
stream also records the batch as queued (mark_queued), so a day of at most CHUNK_ENTRIES entries is
one step.

How a chunk finds its entries: by their offset in the stream. The provider's cursors are
opaque and its pages re-sign URLs, and the client does not resume from a cursor, so neither a
cursor nor a page is a position a replay can return to; the entry offset is. Within one invocation the flow keeps the open
stream (ListingPosition) and each chunk continues it: the listing is read once. A fresh
invocation (a replay after a crash, a timeout, a retried step) re-opens the listing and skips
to the offset of the first unfinished chunk, writing nothing for the skipped entries but
remembering their FileIDs and refusals (the expected set and the batch's ErrorMessage need
them). So a replay re-reads the listing once (O(n) bytes, seconds to a minute at 100 MiB),
never O(n^2), and re-writes only the unfinished chunk. This assumes the provider lists a
day in a stable order, as a paged API must for its cursors to work; if the re-read stream
ends before the offset, the day fails (FetchFailed) rather than guess.

Chunk size 1,000 entries: at ~5-10 ms a conditional put and 8 threads that is ~1-2 s of
DynamoDB writes and 100 SendMessageBatch calls, so a chunk fits any invocation with room
for the re-read; 100,000 files make 100 steps (the history allows ~25,000 operations); the
~1,000 puts/s peak is within on-demand's default table throughput (4,000 WCU) and SQS standard
queues do not throttle sends. More threads would mostly buy throttling retries.

Memory: flat in the size of the day. A chunk holds its 1,000 entries; what the day so far
implies is two bounded tallies: ExpectedFiles (the FileIDs while the batch item keeps its
sets, SETS_MAX_FILES, then a count) and Refusals (a count and the first SHOWN_REFUSALS
lines). The checkpoint carries both, so a replay restores them instead of re-deriving them.

Duplicates (an entity listed twice) without a memory of every entity. Within a chunk they
are found before anything is written: every copy is refused, one error job stands for them.
Across chunks the job table finds them: every job records the entry that wrote it
(ListingIndex), so a conditional put that meets a job of this batch written by another entry
is a later copy, not a replay of this one. The first copy's job was written (and maybe
queued) already: the flow cannot take it back, so the refusal goes to the batch's
ErrorMessage and the day ends failed, naming both entries (the unstreamed listing refused
both). A stored job without ListingIndex names no entry, so it is taken for a replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.listing import FileDescriptor, ListingResult, RejectedFile
from dlpipe.domain.model import SETS_MAX_FILES
from dlpipe.services.orchestrator.jobs_from_listing import listed_file_id

CHUNK_ENTRIES = 1000
WRITE_WORKERS = 8
SHOWN_REFUSALS = 5  # refusal lines the batch's ErrorMessage shows (and a checkpoint carries)
REFUSAL_CHARS = 150  # each cut to this length

Entry = FileDescriptor | RejectedFile
_In = TypeVar("_In")
_Out = TypeVar("_Out")


class FileLister(Protocol):
    """What the flow needs of the provider (dlpipe.adapters.provider_client.ProviderClient fits).

    A lister that also has `iter_listing(date)` is streamed; one with only `list_files`
    (wrappers in tests) is read whole.
    """

    def list_files(self, date: str) -> ListingResult:
        """The provider's files for `date`; ProviderUnavailableError / ProviderRefusedError."""
        ...


def open_listing(lister: FileLister, date: str) -> Iterator[Entry]:
    """The day's entries in the provider's order, streamed when the lister can."""
    streamed: Callable[[str], Iterator[Entry]] | None = getattr(lister, "iter_listing", None)
    if streamed is not None:
        return streamed(date)
    listing = lister.list_files(date)
    return iter([*listing.files, *listing.rejected])


def refusal(rejected: RejectedFile) -> str:
    """The batch-level problem line for a refused entry."""
    return f"provider entry {rejected.entity_or_index} rejected: {rejected.reason}"


@dataclass
class ExpectedFiles:
    """The day's FileIDs while they fit the batch item's set (SETS_MAX_FILES), then their count.

    What keeps the orchestrator's memory flat in the size of the day: past the cap it holds
    one number, not 100,000 strings. Under the cap the set absorbs a repeated FileID; past it
    each FileID must be added once, which the fan-out's outcomes guarantee (a job written or
    found at its own listing index counts, a duplicate never does).
    """

    ids: set[str] | None = field(default_factory=set)
    _count: int = 0

    @classmethod
    def resumed(cls, count: int) -> ExpectedFiles:
        """After a checkpoint of `count` files: a small day rebuilds its set while skipping to
        the offset (`ListingPosition.skip_to`), a large one goes on from the count."""
        return cls() if count <= SETS_MAX_FILES else cls(ids=None, _count=count)

    @property
    def count(self) -> int:
        """How many FileIDs the day has so far."""
        return self._count if self.ids is None else len(self.ids)

    def add(self, file_id: str) -> None:
        """One more file of the day (past the cap, add each FileID once)."""
        if self.ids is None:
            self._count += 1
            return
        self.ids.add(file_id)
        if len(self.ids) > SETS_MAX_FILES:
            self._count, self.ids = len(self.ids), None


@dataclass
class Refusals:
    """Entries that could not become jobs: their number and the first few lines, cut short.

    Bounded whatever the day (the batch's ErrorMessage shows SHOWN_REFUSALS of them; every
    refusal is logged as it is found)."""

    count: int = 0
    shown: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        """One more refused entry."""
        self.count += 1
        if len(self.shown) < SHOWN_REFUSALS:
            self.shown.append(line[:REFUSAL_CHARS])

    def summary(self) -> str | None:
        """The batch's ErrorMessage for these refusals (None when there are none)."""
        if not self.count:
            return None
        more = self.count - len(self.shown)
        tail = f"; and {more} more (each logged as batch.entry_rejected)" if more > 0 else ""
        return f"{self.count} provider entries rejected: {'; '.join(self.shown)}{tail}"


@dataclass
class ListingPosition:
    """One invocation's open listing stream: where it is, and what the entries so far imply.

    Its memory is one chunk of entries plus two bounded tallies (ExpectedFiles, Refusals):
    nothing in it grows with the number of files past SETS_MAX_FILES.
    """

    batch_id: str
    date: str
    entries: Iterator[Entry]
    offset: int = 0  # entries taken so far
    ended: bool = False
    expected: ExpectedFiles = field(default_factory=ExpectedFiles)
    refusals: Refusals = field(default_factory=Refusals)
    feed: str = DEFAULT_FEED_NAME  # its batch's, and so its jobs' (keys never cross feeds)
    revision: int | None = None  # its batch's, when it revises a restated day (restate.py)

    def at(self, batch_id: str, date: str, offset: int) -> bool:
        """True if this stream can go on from `offset` for that batch and day."""
        return (self.batch_id, self.date, self.offset) == (batch_id, date, offset)

    def take(self, count: int) -> list[Entry]:
        """The next `count` entries (fewer at the end, which sets `ended`)."""
        chunk: list[Entry] = []
        for entry in self.entries:
            chunk.append(entry)
            if len(chunk) == count:
                break
        else:
            self.ended = True
        self.offset += len(chunk)
        return chunk

    def skip_to(self, offset: int) -> bool:
        """Read (not write) up to `offset`; False if the stream ended first (the listing
        changed since those chunks ran). A small day's FileIDs are collected again for its
        ExpectedFiles set; the counts and refusals come from the checkpoint."""
        while self.offset < offset and not self.ended:
            for entry in self.take(min(CHUNK_ENTRIES, offset - self.offset)):
                if self.expected.ids is not None:
                    file_id = listed_file_id(entry, self.date, self.feed)
                    if file_id is not None:
                        self.expected.add(file_id)
        return self.offset == offset


def in_parallel(
    func: Callable[[_In], _Out], items: Sequence[_In], workers: int = WRITE_WORKERS
) -> list[_Out]:
    """`func` over `items` on a few threads, results in order; the first error propagates.

    Each call runs in a copy of the caller's context, so context variables (structlog's bound
    fields, a bench's phase label) reach the threads.
    """
    if len(items) <= 1:
        return [func(item) for item in items]
    contexts = [copy_context() for _ in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(lambda ctx, item: ctx.run(func, item), contexts, items))

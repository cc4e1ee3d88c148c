"""fetch-and-queue fanned out: the day's listing streamed in chunks, one durable step a chunk.

Why chunks. One step that lists a 100,000-file day and writes its jobs one PutItem at a time
cannot finish inside one Lambda invocation (900 s), and its replay redid the whole day. Now
chunk n (1-based) is the step `fetch-and-queue-files` (n = 1) or `fetch-and-queue-files-n`:
it takes the next CHUNK_ENTRIES entries of the listing stream, writes their jobs (conditional
puts, WRITE_WORKERS threads), sends the new ones (SendMessageBatch, the same threads), and
checkpoints only counts and the stream offset it reached (QueueResult, ~150 bytes: far below
the 256 KB per-operation limit, whatever the day's size). The chunk that reaches the end of the
stream also records the batch as queued (mark_queued), so a small day is one step as before.

How a chunk finds its entries (option (b)/(c) of issue 12 were rejected): the provider's
cursors are opaque and its pages re-sign URLs, and the client does not resume from a cursor;
so the stream position is the entry offset. Within one invocation the flow keeps the open
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

Duplicates. A streamed listing reports a later copy of an entity after the first copy's job
was written (and maybe queued): the flow cannot take that back, so the refusal goes to the
batch's ErrorMessage and the day ends failed, naming it (the unstreamed listing refused both).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from dlpipe.domain.listing import FileDescriptor, ListingResult, RejectedFile
from dlpipe.services.orchestrator.jobs_from_listing import error_job

CHUNK_ENTRIES = 1000
WRITE_WORKERS = 8

Entry = FileDescriptor | RejectedFile
_In = TypeVar("_In")
_Out = TypeVar("_Out")


class FileLister(Protocol):
    """What the flow needs of the provider (dlpipe.adapters.provider_client.ProviderClient fits).

    A lister that also has `iter_listing(date)` is streamed; one with only `list_files`
    (wrappers in tests) is read whole, as before streaming.
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
class ListingPosition:
    """One invocation's open listing stream: where it is, and what the entries so far imply."""

    batch_id: str
    date: str
    entries: Iterator[Entry]
    offset: int = 0  # entries taken so far
    ended: bool = False
    expected: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

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
        """Read (not write) up to `offset`, remembering what those entries imply; False if
        the stream ended first (the listing changed since those chunks ran)."""
        while self.offset < offset and not self.ended:
            for entry in self.take(min(CHUNK_ENTRIES, offset - self.offset)):
                self.remember(entry)
        return self.offset == offset

    def remember(self, entry: Entry) -> None:
        """Record an entry a finished chunk already wrote, as that chunk recorded it."""
        if isinstance(entry, FileDescriptor):
            self.expected.add(entry.file_id)
            return
        refused = error_job(entry, self.batch_id, self.date, 0)
        if refused is None:
            self.problems.append(refusal(entry))
        else:
            self.expected.add(refused.file_id)


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

"""Fixes to moto's SQS (5.2.5, `moto/sqs/models.py`), patched into the emulator process only.

moto serves SQS from a threaded werkzeug server, and two defects of its models broke the
10,000-file benchmarks. `apply_fixes()` patches them in-process, keeping moto's answers (the same
API results, the same GetQueueAttributes counts, the same visibility and delay semantics).
Drop a patch, and its test in tests/unit/test_moto_sqs.py, once moto fixes the function named.

Lost messages (a race). `Queue.delete_message` rebuilds `Queue._messages` (a comprehension over
the old list, then an assignment) without `Queue._messages_lock`, while `Queue.add_message`
appends under it: a SendMessage that lands between the copy and the assignment vanishes. A
10,000-file run lost 13 messages; AWS never loses a sent message. In-process (the race of
tests/unit/test_moto_sqs.py: 4 threads send 1,000 messages while 4 receive and delete), moto
with only the cost fix below lost 68-158 of the 1,000 in each of 17 runs. The patch:

- `Queue.delete_message` rebuilds the list under the lock (still copy-on-write, so the methods
  that iterate `_messages` without the lock keep seeing a whole list) and finds the message
  through an index of receipt handles (filled by `Message.mark_received`) instead of two scans.
- `SQSBackend.receive_message`, `SQSBackend.change_message_visibility` and
  `SQSBackend.purge_queue` hold the queue's lock too: receive moves messages to the dead-letter
  queue with an unlocked in-place `_messages.remove` (which shifts the list under a rebuilding
  delete, so the rebuild can skip, and lose, a message), purge assigns a new list, and
  concurrent receives of one queue also raced on `Message.mark_received` and the pending set
  (deletes then failing with ReceiptHandleIsInvalid, receives with "Set changed size during
  iteration": 37-95 such errors per race run). A long poll still waits without the lock: `Queue.wait_for_messages` waits
  on the lock's condition, and a `threading.Condition` over an RLock releases every level.
- `SQSBackend.send_message` and `SQSBackend.send_message_batch` hold it too: the batch sets each
  message's `user_id` after `Queue.add_message` has made it visible, while a receive deep-copies
  the message (iterating its `__dict__`), so a receive failed with "RuntimeError: dictionary
  changed size during iteration" (once in a fresh-clone `make test`; in tests/unit/test_moto_sqs.py's
  long-poll race, 16 long polls woken by each send, after 1, 2, 3 and 44 runs). With the lock,
  a message is whole before any receive sees it. (A queue with a Lambda event-source mapping
  would run the Lambda under the lock; the local stack has none.)

Quadratic cost. `SQSBackend.send_message` reads `queue.attributes.get("ContentBasedDeduplication")`
for every message (as do `SQSBackend._validate_message` and `Queue.add_message` on FIFO queues),
and `Queue.attributes` computes ApproximateNumberOfMessages, ...NotVisible and ...Delayed by
scanning every message, each `Message.visible` / `Message.delayed` calling
`moto.core.utils.unix_time_millis` (datetime arithmetic, ~15 us). With 5,000 messages queued one
SendMessageBatch of 10 took 1.75 s (3.56 s under cProfile, all of it in `Queue.attributes`),
and one ReceiveMessage of 10 took 5.2 s: `SQSBackend.is_message_valid_based_on_retention_period`
asks `get_queue_attributes(["MessageRetentionPeriod"])` for each received message, which builds
`Queue.attributes` three times. The patch:

- the three count properties of `Queue` answer 0 while a thread runs `SQSBackend.send_message`
  or `SQSBackend.send_message_batch` (which read only ContentBasedDeduplication from the
  attributes; a queue with a Lambda event-source mapping also receives and deletes in there,
  which reads no count), and `SQSBackend.get_queue_attributes` computes them only when the
  caller asks for one of them or for "All" (so a nested GetQueueAttributes gets real counts);
- `unix_time_millis` in `moto.sqs.models`' namespace only becomes `time.time() * 1000`: the same
  POSIX epoch clock (moto's `utcnow` is a plain `datetime.now(UTC)`, with no time-travel hook);
  the values it feeds that an API shows (SentTimestamp, ApproximateFirstReceiveTimestamp) are
  truncated to whole milliseconds as before.

Measured in-process at 5,000 deep, before -> after: SendMessageBatch of 10 1.7-2.0 s -> 1-2 ms
(what is left, moto's attribute-name conversion, does not grow with the queue), ReceiveMessage of
10 5.2-5.9 s -> 8-14 ms, DeleteMessage 1.8-3.5 ms -> 43-73 us (an index of receipt handles, not
two Python scans of the queue), GetQueueAttributes All 0.15-0.2 s -> 5-10 ms.
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

COUNT_ATTRIBUTES = frozenset(
    {
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    }
)
_COUNT_PROPERTIES = (
    "approximate_number_of_messages",
    "approximate_number_of_messages_not_visible",
    "approximate_number_of_messages_delayed",
)
_MARKER = "_dlpipe_fixes"
# SQSBackend methods run holding the queue's lock (the race fix); see the module docstring.
_LOCKED = (
    "send_message",
    "send_message_batch",
    "receive_message",
    "change_message_visibility",
    "purge_queue",
)

_apply_lock = threading.Lock()
_counts = threading.local()
# Every receipt handle moto hands out, to the message it belongs to. Weak: moto's reset drops
# its messages, and with them their entries.
_by_handle: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def apply_fixes() -> None:
    """Patch moto's SQS models in this process (both fixes); calling it again changes nothing."""
    _fix_races()
    _fix_costs()


def _models() -> Any:
    # Imported here: only the emulator child process (and the tests of this module) load moto.
    from moto.sqs import models  # noqa: PLC0415

    return models


def _once(name: str, patch: Callable[[Any], None]) -> None:
    """Run `patch(models)` unless it already ran on this moto module."""
    models = _models()
    with _apply_lock:
        done: set[str] = models.Queue.__dict__.get(_MARKER, set())
        if name in done:
            return
        patch(models)
        setattr(models.Queue, _MARKER, done | {name})


def _fix_races() -> None:
    _once("races", _patch_races)


def _fix_costs() -> None:
    _once("costs", _patch_costs)


# --- lost messages -------------------------------------------------------------------------


def _patch_races(models: Any) -> None:
    queue_cls, backend_cls = models.Queue, models.SQSBackend
    invalid = models.ReceiptHandleIsInvalid
    mark_received = models.Message.mark_received

    def indexed_mark_received(self: Any, visibility_timeout: int | None = None) -> None:
        mark_received(self, visibility_timeout)
        _by_handle[self.receipt_handle] = self

    def delete_message(self: Any, receipt_handle: str) -> None:
        with self._messages_lock:
            if receipt_handle in self.deleted_messages:
                return  # already deleted (checked under the lock: a racing delete may just have)
            messages = self._messages
            at = _position(messages, _by_handle.get(receipt_handle))
            if at < 0:  # not indexed, or not in this queue: moto's own search, moto's answer
                found = (i for i, m in enumerate(messages) if m.had_receipt_handle(receipt_handle))
                at = next(found, -1)
                if at < 0:
                    raise invalid()
            message = messages[at]
            self._messages = messages[:at] + messages[at + 1 :]
            self.pending_messages.discard(message)
            self.deleted_messages.update(message.all_receipt_handles)

    models.Message.mark_received = indexed_mark_received
    queue_cls.delete_message = delete_message
    for name in _LOCKED:
        setattr(backend_cls, name, _holding_queue_lock(getattr(backend_cls, name)))


def _position(messages: list[Any], message: Any) -> int:
    """Where `message` (compared by identity: moto's Message has no __eq__) is, or -1."""
    if message is None:
        return -1
    try:
        return messages.index(message)
    except ValueError:
        return -1


def _holding_queue_lock(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method(backend, queue_name, ...)` run while holding that queue's `_messages_lock`."""

    @functools.wraps(method)
    def locked(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        queue = self.get_queue(queue_name)  # QueueDoesNotExist, as the method would raise
        with queue._messages_lock:
            return method(self, queue_name, *args, **kwargs)

    return locked


# --- quadratic cost ------------------------------------------------------------------------


@contextmanager
def _counting(*, skip: bool) -> Iterator[None]:
    """While inside, the approximate counts of every queue answer 0 on this thread if `skip`."""
    before = getattr(_counts, "skip", False)
    _counts.skip = skip
    try:
        yield
    finally:
        _counts.skip = before


def _count_property(compute: Callable[[Any], int]) -> property:
    def count(self: Any) -> int:
        return 0 if getattr(_counts, "skip", False) else compute(self)

    return property(functools.wraps(compute)(count))


def _without_counts(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def sending(*args: Any, **kwargs: Any) -> Any:
        with _counting(skip=True):
            return method(*args, **kwargs)

    return sending


def _patch_costs(models: Any) -> None:
    queue_cls, backend_cls = models.Queue, models.SQSBackend
    for name in _COUNT_PROPERTIES:
        setattr(queue_cls, name, _count_property(getattr(queue_cls, name).fget))
    for name in ("send_message", "send_message_batch"):
        setattr(backend_cls, name, _without_counts(getattr(backend_cls, name)))

    get_queue_attributes = backend_cls.get_queue_attributes

    @functools.wraps(get_queue_attributes)
    def counted_when_asked(self: Any, queue_name: str, attribute_names: list[str]) -> Any:
        names = attribute_names or []
        asked = "All" in names or not COUNT_ATTRIBUTES.isdisjoint(names)
        with _counting(skip=not asked):
            return get_queue_attributes(self, queue_name, attribute_names)

    backend_cls.get_queue_attributes = counted_when_asked

    unix_time_millis = models.unix_time_millis

    def fast_unix_time_millis(dt: datetime | None = None) -> float:
        return unix_time_millis(dt) if dt is not None else time.time() * 1000.0

    models.unix_time_millis = fast_unix_time_millis

"""Fixes to moto's SQS (5.2.5, `moto/sqs/models.py`), patched into the emulator process only.

`apply_fixes()` patches two defects that broke the 10,000-file benchmarks, keeping moto's
answers: messages lost to races between sends, receives and deletes of one queue (fixed by
holding the queue's lock), and a send and receive cost that grows with the queue's depth
(fixed by not computing message counts nobody asked for). The defects, the patches and their
measurements: docs/ARCHITECTURE.md, "Why the local emulator is patched". Drop a patch, and
its test in tests/unit/test_moto_sqs.py, once moto fixes the function named.
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
# SQSBackend methods run holding the queue's lock (the race fix; docs/ARCHITECTURE.md, "Why the
# local emulator is patched").
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

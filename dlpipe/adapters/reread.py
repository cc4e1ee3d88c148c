"""A secret's value that is read again when the party it is shown to refuses it.

The downloader's key and the provider token are read once, then kept: a process would
otherwise go on failing every file with a rotated or restored secret until it restarts. When
a use of the value fails in the way only a wrong value explains (a wrong_key unwrap, a 401),
the caller asks `newer_than(failed)`: the value another thread read since `failed` was used,
else the source read again, at most once every `interval_s` (DLPIPE_SECRET_REREAD_SECONDS)
so a day of files that fail alike costs one read a minute, not one per file.

A refused use that names itself (`refused`, e.g. the file's wrapped key) is not told "still
the same" on the strength of a read older than its own first refusal: the value may have been
fixed since. Within the interval it gets RereadDue (retry after the interval's rest) instead,
and when it comes back, any re-read made since (its own or another use's) answers it.

Secrets Manager unavailable (throttled, 5xx, timing out, not reachable: `get_secret`) is a
dependency outage, DependencyUnavailableError, never a verdict on the value: a re-read that
meets one raises it (the file waits the outage out, as for DynamoDB) and does not count
against the interval. A value whose first read met an outage at start (`deferred`) is read
on its first use instead, and again on each use until a read succeeds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.adapters.aws_errors import is_transient
from dlpipe.domain.errors import DependencyUnavailableError
from dlpipe.domain.text import one_line
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from mypy_boto3_secretsmanager.type_defs import GetSecretValueResponseTypeDef

log = get_logger()
T = TypeVar("T")
SECRETS_MANAGER = "Secrets Manager"  # the dependency's name in outcomes and the worker's logs


def get_secret(client: SecretsManagerClient, secret_id: str) -> GetSecretValueResponseTypeDef:
    """The secret's current value, as the downloader reads it: DependencyUnavailableError
    when Secrets Manager throttles, answers 5xx, times out, drops or refuses the connection
    past the client's retries (an outage its file waits out, as every AWS call of a worker
    does); any other error as botocore raised it."""
    try:
        return client.get_secret_value(SecretId=secret_id)
    except (ClientError, BotoCoreError) as exc:
        if is_transient(exc):
            raise DependencyUnavailableError(
                f"{SECRETS_MANAGER} GetSecretValue of {secret_id!r}: {_cause(exc)}",
                dependency=SECRETS_MANAGER,
            ) from exc
        raise


def _cause(exc: ClientError | BotoCoreError) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return one_line(f"{error.get('Code') or 'Unknown'}: {error.get('Message') or ''}", 200)
    return one_line(f"{type(exc).__name__}: {exc}", 200)


class RereadDue(Exception):  # not an error: a refusal that is not answered yet
    """A refused use whose value was last read before the refusal, within the interval: try
    again in `in_s` seconds, when the source may be read again."""

    def __init__(self, where: str, in_s: float) -> None:
        super().__init__(f"{where} is read again in {in_s:.0f} s")
        self.in_s = in_s


_REFUSALS_KEPT = 10_000  # refused uses remembered at most (one interval's worth, at most)


class Rereadable(Generic[T]):
    """`value`, read by `read`; `newer_than` reads again (bounded) after a refused use."""

    def __init__(
        self,
        read: Callable[[], T],
        *,
        where: str,
        same: Callable[[T, T], bool],
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
        deferred: bool = False,
    ) -> None:
        self._read, self._where, self._same = read, where, same
        self._interval_s, self._clock = interval_s, clock
        self._lock = threading.Lock()
        self._value: T | None = None
        self._unread = deferred  # no value yet: `value` reads it
        self._failed_reads = 0  # first reads that failed; a caller that waited for one fails too
        self._failure: DependencyUnavailableError | None = None
        if not deferred:
            self._value = read()  # the first read's errors are the caller's (one line, at startup)
            self._unread = False
        self._read_at: float | None = None  # when a refusal last made us read again
        self._reads = 0  # re-reads made so far (succeeded): a refusal's "since" mark
        self._refusals: dict[Hashable, int] = {}  # refused use -> `_reads` at its first refusal

    @property
    def value(self) -> T:
        """The value now; for a deferred value not read yet, read now (its read's errors)."""
        asked = self._failed_reads
        with self._lock:
            if self._unread:
                self._first_read(asked)
            return cast("T", self._value)

    def _first_read(self, asked: int) -> None:
        """Read the deferred value (the lock held). A read that failed while the caller waited
        for the lock answers for it: threads that meet an outage together cost one read."""
        if self._failure is not None and self._failed_reads != asked:
            raise DependencyUnavailableError(
                str(self._failure), dependency=self._failure.dependency
            )
        try:
            value = self._read()
        except DependencyUnavailableError as exc:
            self._failed_reads += 1
            self._failure = exc
            raise
        self._value, self._unread, self._failure = value, False, None
        log.info("secret.read", source=self._where, failed_reads=self._failed_reads)

    def newer_than(self, failed: T, *, refused: Hashable | None = None) -> T | None:
        """A value other than `failed` to try once, or None: the source still holds `failed`,
        cannot be read now (logged, the value kept), or was read again less than
        `interval_s` ago. DependencyUnavailableError when an outage kept it from being read:
        the interval is not spent, the next refusal reads again.

        With `refused` (the use's identity), None within the interval only when a re-read
        made since that use's first refusal found `failed`; else RereadDue, with the
        interval's rest."""
        with self._lock:
            if self._unread:
                self._first_read(self._failed_reads)
            value = cast("T", self._value)
            if not self._same(value, failed):
                self._forget(refused)
                return value  # another thread has read it again since
            now = self._clock()
            if self._read_at is not None and now - self._read_at < self._interval_s:
                self._unless_answered(refused, self._read_at + self._interval_s - now)
                return None
            previous, self._read_at = self._read_at, now
            try:
                fresh = self._read()
            except DependencyUnavailableError:
                self._read_at = previous  # an outage says nothing of the value
                raise
            except Exception as exc:  # noqa: BLE001 - a failed re-read keeps the value it has
                log.warning("secret.reread_failed", source=self._where, error=str(exc))
                self._forget(refused)
                return None
            self._reads += 1
            self._forget(refused)
            # Older refusals than the last interval's have been answered (or went elsewhere).
            self._refusals = {k: n for k, n in self._refusals.items() if n >= self._reads - 1}
            if self._same(fresh, failed):
                log.info("secret.reread_unchanged", source=self._where)
                return None
            log.info("secret.reread_changed", source=self._where)
            self._value = fresh
            return fresh

    def _unless_answered(self, refused: Hashable | None, in_s: float) -> None:
        """Within the interval (the lock held): RereadDue in `in_s`, unless no use is named or
        a re-read since its first refusal answered it."""
        if refused is None:
            return
        first = self._refusals.get(refused)
        if first is not None and self._reads > first:
            del self._refusals[refused]  # read again since it was first refused: the verdict
            return
        if first is None and len(self._refusals) >= _REFUSALS_KEPT:
            return  # too many waiting to remember one more: the old verdict stands
        if first is None:
            self._refusals[refused] = self._reads
        log.info("secret.reread_due", source=self._where, in_s=round(in_s, 3))
        raise RereadDue(self._where, in_s)

    def _forget(self, refused: Hashable | None) -> None:
        if refused is not None:
            self._refusals.pop(refused, None)

"""A secret's value that is read again when the party it is shown to refuses it.

The downloader's key and the provider token are read once, then kept: a process would
otherwise go on failing every file with a rotated or restored secret until it restarts. When
a use of the value fails in the way only a wrong value explains (a wrong_key unwrap, a 401),
the caller asks `newer_than(failed)`: the value another thread read since `failed` was used,
else the source read again, at most once every `interval_s` (DLPIPE_SECRET_REREAD_SECONDS)
so a day of files that fail alike costs one read a minute, not one per file.

Secrets Manager unavailable (throttled, 5xx, timing out, not reachable: `get_secret`) is a
dependency outage, DependencyUnavailableError, never a verdict on the value: a re-read that
meets one raises it (the file waits the outage out, as for DynamoDB) and does not count
against the interval. A value whose first read met an outage at start (`deferred`) is read
on its first use instead, and again on each use until a read succeeds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
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

    def newer_than(self, failed: T) -> T | None:
        """A value other than `failed` to try once, or None: the source still holds `failed`,
        cannot be read now (logged, the value kept), or was read again less than
        `interval_s` ago. DependencyUnavailableError when an outage kept it from being read:
        the interval is not spent, the next refusal reads again."""
        with self._lock:
            if self._unread:
                self._first_read(self._failed_reads)
            value = cast("T", self._value)
            if not self._same(value, failed):
                return value  # another thread has read it again since
            now = self._clock()
            if self._read_at is not None and now - self._read_at < self._interval_s:
                return None
            previous, self._read_at = self._read_at, now
            try:
                fresh = self._read()
            except DependencyUnavailableError:
                self._read_at = previous  # an outage says nothing of the value
                raise
            except Exception as exc:  # noqa: BLE001 - a failed re-read keeps the value it has
                log.warning("secret.reread_failed", source=self._where, error=str(exc))
                return None
            if self._same(fresh, failed):
                log.info("secret.reread_unchanged", source=self._where)
                return None
            log.info("secret.reread_changed", source=self._where)
            self._value = fresh
            return fresh

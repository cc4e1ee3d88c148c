"""The stub provider's published days: each date's files, stored once, remembered for answers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from dlpipe.domain.model import validate_date
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import PublishedFile, StubFileSpec, publish_file
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

PUBLISH_WORKERS = 4  # parallel uploads; each buffers at most two 8 MiB parts


def _log() -> Any:
    # Bound per call: a logger bound at import would miss configure_logging (stream, level).
    return get_logger(component="dlpipe.local.stub.server")


class PublishedDays:
    """Publishes a date's files on first use (thread-safe) and keeps their keys and digests."""

    def __init__(
        self,
        s3: S3Client,
        bucket: str,
        specs: Sequence[StubFileSpec],
        *,
        seed: int,
        key_prefix: str,
        faults: Callable[[], Faults],
    ) -> None:
        self._s3, self._bucket, self._specs = s3, bucket, list(specs)
        self._seed, self._key_prefix, self._faults = seed, key_prefix, faults
        self._days: dict[str, dict[str, PublishedFile]] = {}
        self._lock = threading.Lock()

    def object_key(self, date: str, entity: str) -> str:
        """Where the ciphertext of `entity` for `date` is stored."""
        return f"{self._key_prefix}{validate_date(date)}/{entity}.bin"

    def get(self, date: str) -> dict[str, PublishedFile]:
        """The date's files by entity, published now if this is the date's first use."""
        with self._lock:  # concurrent first listings must not publish twice
            if date not in self._days:
                self._days[date] = self._publish(validate_date(date))
            return self._days[date]

    def purge(self) -> None:
        """Delete every object stored so far and forget the dates."""
        with self._lock:
            keys = [p.object_key for day in self._days.values() for p in day.values()]
            self._days.clear()
        for start in range(0, len(keys), 1000):
            batch = keys[start : start + 1000]
            self._s3.delete_objects(
                Bucket=self._bucket, Delete={"Objects": [{"Key": k} for k in batch]}
            )

    def _publish(self, date: str) -> dict[str, PublishedFile]:
        started, faults = time.monotonic(), self._faults()

        def one(spec: StubFileSpec) -> PublishedFile:
            key = self.object_key(date, spec.entity)
            return publish_file(
                self._s3, self._bucket, key, spec, date=date, seed=self._seed, faults=faults
            )

        with ThreadPoolExecutor(PUBLISH_WORKERS, thread_name_prefix="stub-publish") as pool:
            published = {p.spec.entity: p for p in pool.map(one, self._specs)}
        _log().info(
            "dlpipe.local.stub.server.published",
            date=date,
            files=len(published),
            plaintext_bytes=sum(spec.size for spec in self._specs),
            elapsed_ms=round((time.monotonic() - started) * 1000),
        )
        return published

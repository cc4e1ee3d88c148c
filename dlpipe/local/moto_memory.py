"""Fixes to moto's memory (5.2.5), patched into the emulator process only.

`apply_fixes()` stops `BaseModel.__new__` tracking every model object for ever, and gives
`S3Backend.list_object_versions` a view of the bucket under `Prefix` instead of a deep copy of
all of it: together they had the kernel's OOM killer stop the emulator in `make soak`. The
details and measurements: docs/ARCHITECTURE.md, "Why the local emulator is patched". Drop a
patch, and its test in tests/unit/test_moto_memory.py, once moto fixes the function named.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

_MARKER = "_dlpipe_memory_fixes"
_apply_lock = threading.Lock()


def apply_fixes() -> None:
    """Patch moto's model tracking and S3's ListObjectVersions in this process (idempotent)."""
    from moto.core.common_models import BaseModel  # noqa: PLC0415 - emulator child only
    from moto.s3.models import S3Backend  # noqa: PLC0415

    with _apply_lock:
        if not getattr(S3Backend, _MARKER, False):
            S3Backend.list_object_versions = _prefix_first(S3Backend.list_object_versions)  # type: ignore[method-assign]
            setattr(S3Backend, _MARKER, True)
        if not getattr(BaseModel, _MARKER, False):
            BaseModel.__new__ = staticmethod(_untracked_new)  # type: ignore[method-assign]
            setattr(BaseModel, _MARKER, True)


def _untracked_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    """BaseModel.__new__ without `cls.instances_tracked.append(instance)`."""
    return object.__new__(cls)


def _prefix_first(original: Any) -> Any:
    def list_object_versions(  # noqa: PLR0917 - moto's own signature
        self: Any,
        bucket_name: str,
        delimiter: str | None = None,
        key_marker: str | None = None,
        max_keys: int | None = 1000,
        prefix: str = "",
        version_id_marker: str | None = None,
    ) -> Any:
        return original(
            _BackendUnderPrefix(self, prefix or ""),
            bucket_name,
            delimiter=delimiter,
            key_marker=key_marker,
            max_keys=max_keys,
            prefix=prefix,
            version_id_marker=version_id_marker,
        )

    list_object_versions.__doc__ = original.__doc__
    list_object_versions.__wrapped__ = original  # type: ignore[attr-defined]
    return list_object_versions


class _KeysUnderPrefix:
    """The bucket's versioned key store, as `list_object_versions` iterates it, under a prefix."""

    def __init__(self, keys: Any, prefix: str) -> None:
        self._keys = keys
        self._prefix = prefix

    def iterlists(self) -> Iterator[tuple[str, list[Any]]]:
        prefix = self._prefix
        return (
            (name, versions) for name, versions in self._keys.iterlists() if name.startswith(prefix)
        )


class _BucketUnderPrefix:
    def __init__(self, bucket: Any, prefix: str) -> None:
        self._bucket = bucket
        self.keys = _KeysUnderPrefix(bucket.keys, prefix)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bucket, name)


class _BackendUnderPrefix:
    """The S3 backend as `list_object_versions` sees it: `get_bucket` answers the view."""

    def __init__(self, backend: Any, prefix: str) -> None:
        self._backend = backend
        self._prefix = prefix

    def get_bucket(self, bucket_name: str) -> _BucketUnderPrefix:
        return _BucketUnderPrefix(self._backend.get_bucket(bucket_name), self._prefix)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

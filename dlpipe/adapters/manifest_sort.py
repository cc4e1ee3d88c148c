"""The manifest's entries in FileID order, in bounded memory, whatever the day's size.

BatchIndex returns a batch's jobs in no useful order (its sort key is the status), and a day
may hold 100,000 files. So the entries are sorted in runs of `run_entries` (each run's objects
looked at by HEAD on a few threads, its lines sorted and written to a temporary file), then
the runs are merged (heapq.merge holds one line per run). Memory: one run and its lines.
The unpublished files (no HEAD) are sorted the same way, in their own runs."""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Any

from dlpipe.domain.manifest import ManifestEntry, PublishedFile, StoredObject
from dlpipe.domain.manifest_lists import UnpublishedFile
from dlpipe.log import get_logger

log = get_logger(component="orchestrator")
Head = Callable[[str], StoredObject | None]


def sorted_runs(
    files: Iterable[PublishedFile],
    *,
    bucket: str,
    head: Head,
    directory: str,
    run_entries: int,
    workers: int,
) -> list[str]:
    """Verify `files` against their objects and write them to sorted run files; their paths."""
    paths: list[str] = []
    stream = iter(files)
    with ThreadPoolExecutor(workers) as pool:
        while run := list(islice(stream, run_entries)):
            lines = (
                _line(entry.file_id, {**entry.file_record(), "bucket": entry.bucket})
                for entry in pool.map(lambda f: _verified(f, bucket, head), run)
                if entry is not None
            )
            paths.append(_write_run(lines, directory, f"run-{len(paths):05d}"))
    return paths


def sorted_unpublished(
    files: Iterable[UnpublishedFile], *, directory: str, run_entries: int
) -> list[str]:
    """The unpublished files in sorted run files; their paths."""
    paths: list[str] = []
    stream = iter(files)
    while run := list(islice(stream, run_entries)):
        lines = (_line(file.file_id, file.record()) for file in run)
        paths.append(_write_run(lines, directory, f"unpublished-{len(paths):05d}"))
    return paths


def merged_unpublished(paths: list[str]) -> Iterator[UnpublishedFile]:
    """The unpublished files in FileID order."""
    for fields in _merged(paths):
        yield UnpublishedFile(**fields)


def _write_run(lines: Iterable[str], directory: str, name: str) -> str:
    path = os.path.join(directory, f"{name}.jsonl")
    with open(path, "w", encoding="ascii") as out:
        out.writelines(sorted(lines))
    return path


def merged(paths: list[str]) -> Iterator[ManifestEntry]:
    """The runs' entries in FileID order (each line starts with its FileID and a tab)."""
    for fields in _merged(paths):
        yield ManifestEntry(**fields)


def _merged(paths: list[str]) -> Iterator[dict[str, Any]]:
    files = [open(path, encoding="ascii") for path in paths]  # noqa: SIM115 (closed below)
    try:
        for line in heapq.merge(*files):
            yield json.loads(line.partition("\t")[2])
    finally:
        for handle in files:
            handle.close()


def _line(file_id: str, fields: dict[str, Any]) -> str:
    # The FileID first: plain string order of the lines is FileID order (no tab in a FileID).
    return f"{file_id}\t{json.dumps(fields, sort_keys=True)}\n"


def _verified(file: PublishedFile, bucket: str, head: Head) -> ManifestEntry | None:
    """The entry for `file` if its object is there as the job recorded it, else None (logged)."""
    found = head(file.key)
    if found is None or found.size != file.size or found.sha256 not in (None, file.sha256):
        log.error(
            "manifest.object_unverified",
            file_id=file.file_id,
            missing=found is None,
        )
        return None
    return ManifestEntry(
        file.file_id, file.entity, bucket, file.key, file.size, file.sha256, found.version_id
    )

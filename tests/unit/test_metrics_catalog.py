"""dlpipe.metrics emits only what its CATALOG declares, under the declared dimension sets."""

from __future__ import annotations

import json
import threading

import pytest

from dlpipe import metrics

FILE_DIMENSIONS = {"Component": "worker", "Outcome": "error", "ErrorCode": "x", "Feed": "default"}


def test_a_metric_missing_from_the_catalog_is_refused() -> None:
    """A renamed metric cannot slip past the dashboard and alarm checks."""
    with pytest.raises(ValueError, match="CATALOG"):
        metrics.emit({"FilesDone": (1, metrics.COUNT)})


def test_a_per_file_id_cannot_become_a_dimension() -> None:
    """Dimensions other than the catalogued ones (a FileID, say) are refused."""
    with pytest.raises(ValueError, match="do not match"):
        metrics.emit(
            {metrics.FILE_DOWNLOADS: (1, metrics.COUNT)},
            dimensions={**FILE_DIMENSIONS, "FileID": "accounts-2026-02-28"},
        )


def test_catalogued_dimension_sets_are_what_the_line_declares(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The EMF line's Dimensions are the catalog's sets, each key a root member."""
    lines: list[str] = []
    monkeypatch.setattr(metrics, "_sink", lines.append)
    metrics.emit({metrics.FILE_BYTES: (5, metrics.BYTES)}, dimensions=FILE_DIMENSIONS, FileID="f")
    (document,) = (json.loads(line) for line in lines)
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert [tuple(s) for s in directive["Dimensions"]] == list(metrics.FILE_DIMENSION_SETS)
    assert {k: document[k] for k in FILE_DIMENSIONS} == FILE_DIMENSIONS


def test_every_final_batch_status_counts_a_catalogued_metric() -> None:
    """A batch status added to the table as final needs its metric (dlpipe/domain/statuses.py),
    and the catalogue takes it from there."""
    from dlpipe.domain.statuses import TERMINAL_BATCH_STATUSES

    assert set(metrics.BATCH_FINISHED) == set(TERMINAL_BATCH_STATUSES)
    assert {metrics.CATALOG[name] for name in metrics.BATCH_FINISHED.values()} == {
        metrics.BATCH_DIMENSION_SETS
    }


def test_each_emf_document_reaches_stdout_in_one_write_whole_line_included(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker's threads emit at once: a document written apart from its newline (print)
    interleaves with another thread's, two documents on one line."""
    writes: list[str] = []

    class Recording:
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(metrics.sys, "stdout", Recording())
    threads = [
        threading.Thread(target=metrics.stdout_line, args=(json.dumps({"n": n}),))
        for n in range(20)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(writes) == 20
    assert all(w.endswith("\n") and json.loads(w) for w in writes)

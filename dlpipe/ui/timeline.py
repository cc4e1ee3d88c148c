"""Progress over time: files finished by each moment of a batch, from the jobs' status times."""

from __future__ import annotations

from dataclasses import dataclass

from dlpipe.domain.clock import ms_from_iso
from dlpipe.domain.model import Batch, FileJob, JobStatus

BUCKETS = 30


@dataclass(frozen=True)
class TimelineBar:
    """Files finished by `at_ms`, cumulative."""

    at_ms: int
    completed: int
    unsuccessful: int  # failed + error


@dataclass(frozen=True)
class Timeline:
    """From the batch's start to its last finished file (or now, while it runs)."""

    start_ms: int
    end_ms: int
    total: int  # the height of a full bar: the batch's files
    bars: list[TimelineBar]

    def percent(self, count: int) -> float:
        """`count` as a share of the full bar's height."""
        return round(100.0 * count / self.total, 1) if self.total else 0.0


def _epoch_ms(iso: str) -> int:
    return ms_from_iso(iso)


def timeline(batch: Batch, jobs: list[FileJob], now_ms: int) -> Timeline:
    """BUCKETS cumulative bars of completed and unsuccessful files since the batch started."""
    start_ms = _epoch_ms(batch.start_time)
    finished = [j for j in jobs if j.is_terminal]
    last_ms = max((j.status_updated_at_ms for j in finished), default=start_ms)
    end_ms = max(now_ms if not batch.is_terminal else last_ms, start_ms + 1000)
    step = (end_ms - start_ms) / BUCKETS
    bars = []
    for n in range(1, BUCKETS + 1):
        at_ms = start_ms + round(step * n)
        done = [j for j in finished if j.status_updated_at_ms <= at_ms]
        completed = sum(1 for j in done if j.status is JobStatus.COMPLETED)
        bars.append(TimelineBar(at_ms, completed, len(done) - completed))
    total = max(batch.expected, len(jobs), 1)
    return Timeline(start_ms, end_ms, total, bars)

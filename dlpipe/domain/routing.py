"""Which queue a file goes to, and whether a worker has the time to finish it: plain rules.

A file goes to the large-file queue (only `dlpipe worker` consumes it) when it could not be
finished inside the downloader Lambda's timeout at MIN_THROUGHPUT_MIB_S with SAFETY_FACTOR;
a file that does not fit the time a worker has left ends `failed` at once instead of
restarting until it dead-letters. The measurements behind the defaults: docs/ARCHITECTURE.md,
"Why large files go to their own queue".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

MIB = 1024 * 1024
LAMBDA_TIMEOUT_S = 900
MIN_THROUGHPUT_MIB_S = 20
SAFETY_FACTOR = 0.5


def large_file_threshold_bytes(
    timeout_s: int = LAMBDA_TIMEOUT_S,
    min_throughput_mib_s: float = MIN_THROUGHPUT_MIB_S,
    safety_factor: float = SAFETY_FACTOR,
) -> int:
    """Bytes a downloader with `timeout_s` can surely finish: timeout x throughput x safety."""
    return int(timeout_s * min_throughput_mib_s * MIB * safety_factor)


DEFAULT_LARGE_FILE_THRESHOLD_BYTES = large_file_threshold_bytes()  # 9000 MiB


class Route(StrEnum):
    """The queue a job's message goes to."""

    MAIN = "main"  # the downloader Lambda (and the worker, which polls both)
    LARGE = "large"  # only the long-poll worker


def route_for(size_bytes: int | None, threshold_bytes: int, has_large_queue: bool) -> Route:
    """LARGE when a large queue exists and the file is known to exceed the threshold."""
    if not has_large_queue or size_bytes is None:
        return Route.MAIN
    return Route.LARGE if size_bytes > threshold_bytes else Route.MAIN


def seconds_needed(size_bytes: int, min_throughput_mib_s: float = MIN_THROUGHPUT_MIB_S) -> int:
    """Whole seconds a file of `size_bytes` takes at the minimum throughput."""
    return math.ceil(size_bytes / (min_throughput_mib_s * MIB))


class Budget(StrEnum):
    """Whether a worker can take a file now."""

    FITS = "fits"
    LATER = "later"  # not in what is left of this invocation, but in a fresh one
    TOO_LARGE = "too_large"  # not even in a whole invocation: it can never finish here


def budget_decision(
    size_bytes: int | None,
    remaining_s: float | None,
    full_budget_s: float | None,
    min_throughput_mib_s: float = MIN_THROUGHPUT_MIB_S,
) -> Budget:
    """Compare the time a file needs with what is left now and with a whole invocation.

    None for a budget means unlimited (the long-poll worker); an unknown size always fits.
    """
    if size_bytes is None:
        return Budget.FITS
    needed_s = seconds_needed(size_bytes, min_throughput_mib_s)
    if full_budget_s is not None and needed_s > full_budget_s:
        return Budget.TOO_LARGE
    if remaining_s is not None and needed_s > remaining_s:
        return Budget.LATER
    return Budget.FITS


def too_large_message(size_bytes: int, budget_s: float) -> str:
    """The job's ErrorMessage text after the code: size, time needed, time available."""
    return (
        f"{size_bytes} bytes needs ~{seconds_needed(size_bytes)} s at the minimum throughput, "
        f"this worker has {int(budget_s)} s"
    )


@dataclass(frozen=True)
class TimeBudget:
    """A worker's time for one file: a whole invocation (`full_s`) and what is left now.

    None means unlimited: the long-poll worker by default has no budget at all.
    """

    full_s: float | None = None
    remaining_s: Callable[[], float] | None = None

    def decide(self, size_bytes: int | None) -> Budget:
        """budget_decision for a file of `size_bytes`, with the time left read now."""
        remaining = self.remaining_s() if self.remaining_s is not None else None
        return budget_decision(size_bytes, remaining, self.full_s)

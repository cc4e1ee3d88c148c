"""How long the orchestrator's CPU-bound steps take on Lambda, and how much /tmp they spool.

Lambda gives a function CPU in proportion to its memory, one vCPU at 1,769 MB; the steps are
single-threaded, so memory past that buys them nothing. A step's modelled time on Lambda is
its CPU per file measured here (one core, BENCHMARKS.md) times the day's files, stretched by
that share. terraform/lambda_orchestrator.tf holds the same figures and refuses a plan whose
memory, /tmp or timeouts do not fit `largest_day_files`; tests/infra/test_terraform_sizing.py
holds the two to each other.
"""

from __future__ import annotations

import math
from typing import Final

LAMBDA_MB_PER_VCPU: Final = 1769

# write-manifest: 252.5 CPU-s in the step's own process for 100,000 files (BENCHMARKS.md, "A/B
# of the full step"), rounded up.
MANIFEST_CPU_MS_PER_FILE: Final = 2.53
# fan-out: botocore building, signing and parsing one PutItem and a tenth of a
# SendMessageBatch, the top of the 1.25-3.8 ms measured a file (BENCHMARKS.md).
FANOUT_CPU_MS_PER_FILE: Final = 3.8
# write-manifest's /tmp at 100,000 files (dlpipe/adapters/manifest_store.py; BENCHMARKS.md):
# the 41 MiB manifest, as much again in sorted runs, the 30 MiB file list and the 15 MiB COPY
# manifest, 127 MiB were they all there at once, rounded up.
MANIFEST_SPOOL_BYTES_PER_FILE: Final = 1400
# The spool may take 2/3 of /tmp: the runtime and the merge's output need the rest.
SPOOL_SHARE_OF_TMP: Final = 2 / 3
# A step may take half an invocation: the replay before it and its AWS calls' latency, which
# the CPU model leaves out, take the rest.
STEP_SHARE_OF_INVOCATION: Final = 0.5


def vcpu_share(memory_mb: int) -> float:
    """The share of one vCPU a function of `memory_mb` gets for a single-threaded step."""
    return min(memory_mb, LAMBDA_MB_PER_VCPU) / LAMBDA_MB_PER_VCPU


def modelled_step_seconds(cpu_ms_per_file: float, files: int, memory_mb: int) -> int:
    """Seconds a step of `cpu_ms_per_file` takes for `files` at `memory_mb`, rounded up."""
    return math.ceil(files * cpu_ms_per_file / 1000 / vcpu_share(memory_mb))


def spool_mb(files: int) -> int:
    """MB the write-manifest step spools in /tmp for a day of `files`, rounded up."""
    return math.ceil(files * MANIFEST_SPOOL_BYTES_PER_FILE / 1048576)


def minimum_memory_mb(cpu_ms_per_file: float, files: int, step_seconds: float) -> int | None:
    """The least memory at which a step of `cpu_ms_per_file` for `files` fits `step_seconds`;
    None when even one whole vCPU is too slow."""
    needed = math.ceil(files * cpu_ms_per_file / 1000 * LAMBDA_MB_PER_VCPU / step_seconds)
    return needed if needed <= LAMBDA_MB_PER_VCPU else None


def largest_day_files(cpu_ms_per_file: float, step_seconds: float) -> int:
    """The most files a step of `cpu_ms_per_file` handles within `step_seconds` on one vCPU."""
    return math.floor(step_seconds * 1000 / cpu_ms_per_file)

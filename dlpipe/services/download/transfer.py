"""One pass over a file: stream the ciphertext, decrypt and verify it, write the plaintext.

Nothing here publishes: the caller completes the upload only after `transfer_once` returned,
that is after the GCM tag (or CBC padding), the size and the SHA-256 all checked out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dlpipe.domain.model import FileJob, Verified
from dlpipe.domain.rules import visibility_margin_seconds
from dlpipe.domain.stall import StallFloor, StallWatch
from dlpipe.domain.url_policy import UrlPolicy
from dlpipe.services.download.ports import Decryption, Source, Upload

MIB = 1024 * 1024
MAX_PARTS = 10_000  # S3's limit on parts in one multipart upload


@dataclass(frozen=True)
class TransferTuning:
    """Chunk and part sizes, timeouts and the retry budget of one file's transfer."""

    chunk_bytes: int = 1 * MIB
    part_bytes: int = 8 * MIB
    # Parts uploading while the next one fills. One keeps a worker's peak under 100 MiB
    # (bench/worker_memory.py); two made no measurable difference through the emulator.
    max_in_flight_parts: int = 1
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0
    # Below this a transfer is abandoned (provider_slow); a silent connection is cut after
    # the window too, since no byte in a whole window is below any floor.
    stall_floor: StallFloor = field(default_factory=StallFloor)
    attempts: int = 4
    retry_wait_s: float = 1.0  # exponential backoff multiplier, full jitter
    retry_wait_max_s: float = 30.0
    retry_after_max_s: float = 120.0  # a server's Retry-After is honored up to this
    # A message stays hidden this long past the lease; None: a tenth of the lease, >= 1 s.
    visibility_margin_s: int | None = None

    def part_bytes_for(self, expected_size: int | None) -> int:
        """The part size for a file of `expected_size`: `part_bytes`, grown (in whole MiB) when
        the file would otherwise need more than S3's 10,000 parts (8 MiB parts end at 78 GiB)."""
        if not expected_size:
            return self.part_bytes
        needed = -(-expected_size // MAX_PARTS)  # ceiling division
        return max(self.part_bytes, -(-needed // MIB) * MIB)

    def margin_s(self, lease_seconds: int) -> int:
        """Seconds a message stays hidden beyond a lease of `lease_seconds`."""
        if self.visibility_margin_s is not None:
            return self.visibility_margin_s
        return visibility_margin_seconds(lease_seconds)


def transfer_once(
    job: FileJob,
    url: str,
    *,
    decryption: Decryption,
    source: Source,
    sink: Upload,
    tuning: TransferTuning,
    checkpoint: Callable[[], None],
    policy: UrlPolicy,
    clock: Callable[[], float] = time.monotonic,
) -> Verified:
    """Stream `url` through decryption and verification into `sink`; raise on any fault,
    ProviderSlowError when the source stays below the stall floor for a whole window."""
    # Key, IV and cipher are checked before the first byte is fetched.
    decryptor = decryption.open_decryptor(job.cipher, job.encrypted_aes_key, job.encoded_aes_iv)
    verifier = decryption.verifier(job.expected_size, job.expected_sha256)
    read_timeout_s = min(tuning.read_timeout_s, tuning.stall_floor.window_s)
    timeout_s = (tuning.connect_timeout_s, read_timeout_s)
    with source.open(
        url, chunk_bytes=tuning.chunk_bytes, timeout_s=timeout_s, policy=policy
    ) as chunks:
        watch = StallWatch(tuning.stall_floor, clock())
        for chunk in chunks:
            watch.observe(len(chunk), clock())
            checkpoint()
            plaintext = decryptor.update(chunk)
            verifier.update(plaintext)
            sink.write(plaintext)
    plaintext = decryptor.finalize()
    verifier.update(plaintext)
    sink.write(plaintext)
    verifier.verify()
    return Verified(verifier.byte_count, verifier.sha256_hex)

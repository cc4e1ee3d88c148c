"""What the one redaction costs a log line: a 1 KB message with a 4 KB PEM and a token registered.

    python bench/redaction_cost.py [--rounds 2000]

Prints the time to build the needles at registration (once per secret), the number of
windows, and the per-call cost of `redact` for a 1 KB message that carries no secret (every
log line's case) and for one that carries the token (an echo), median of `--rounds` calls, and the registered secrets' scan alone.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import time
from collections.abc import Callable

from dlpipe.domain import redaction
from dlpipe.domain.redaction import forget_secrets, redact, register_secret


def _pem(size: int = 4096) -> str:
    body = base64.b64encode(os.urandom(size * 3 // 4)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"


def _per_call_us(text: str, rounds: int, call: Callable[[str], str] = redact) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        call(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    rounds = parser.parse_args().rounds
    token = base64.urlsafe_b64encode(os.urandom(24)).decode()
    clean = ('{"event": "job.completed", "file_id": "positions-2026-04-06", "detail": "'
             + "ok " * 320 + '"}')[:1024]  # fmt: skip
    echoed = clean[:500] + token.lower() + clean[500 + len(token) :]
    forget_secrets()
    print(f"1 KB message, nothing registered: {_per_call_us(clean, rounds):.1f} us/call")
    started = time.perf_counter()
    register_secret(_pem())
    register_secret(token)
    built_ms = (time.perf_counter() - started) * 1e3
    needles = redaction._needles
    print(f"registration (4 KB PEM + token): {built_ms:.0f} ms, {len(needles.runs)} windows")
    print(f"1 KB message, no secret in it: {_per_call_us(clean, rounds):.1f} us/call")
    print(f"1 KB message, the token in it: {_per_call_us(echoed, rounds):.1f} us/call")
    scan = redaction._mask_secrets  # the registered secrets alone
    print(f"  of which the secrets' scan: {_per_call_us(clean, rounds, scan):.1f} us/call")
    assert token.lower() not in redact(echoed)


if __name__ == "__main__":
    main()

"""A log line and a metric line never share a line, whatever the redirection: with stdout and
stderr sent to one file (`> log 2>&1`, as README's worker shell does), a line must reach the
file in one write. A record longer than the stream's buffer was written in pieces, and a
metric line written between them landed inside it (1 line in 8,000 of a worker's log)."""

from __future__ import annotations

import io
import json

from dlpipe.log import configure_logging, get_logger, logging_config, restore_logging


class _Writes(io.RawIOBase):
    """A file that records each write the OS would see."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.writes.append(bytes(data))
        return len(data)


def test_a_record_longer_than_the_buffer_reaches_the_file_in_one_write() -> None:
    """A 20 KB record on a stream buffered as stderr is (8 KB, line-buffered): one write,
    the whole JSON line and its newline."""
    raw = _Writes()
    stream = io.TextIOWrapper(io.BufferedWriter(raw, 8192), encoding="utf-8", line_buffering=True)
    before = logging_config()
    try:
        configure_logging("INFO", stream)
        get_logger().info("big.record", payload="x" * 20_000)
    finally:
        restore_logging(before)
    assert len(raw.writes) == 1, [len(w) for w in raw.writes]
    (line,) = raw.writes
    assert line.endswith(b"\n")
    assert json.loads(line)["payload"] == "x" * 20_000

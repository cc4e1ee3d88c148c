"""Named pause points for the chaos tests, injected into the download service by the dev kit.

DLPIPE_TEST_PAUSE_AT=`<point>:<hold_seconds>:<announce_file>`: the first time the process
reaches `<point>` (`received`, `claimed`, `published`), it appends `<point> <pid> <file_id>`
to the file and sleeps `hold_seconds`, so a test can SIGKILL or SIGSTOP it exactly there.
`dlpipe worker` (and a local day's workers) read the variable once at start and pass the
pauser to the service; this module lives in the dev kit, so the Lambda zip never holds it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path

# Tests only: a named point where the downloader announces itself and pauses.
ENV_TEST_PAUSE_AT = "DLPIPE_TEST_PAUSE_AT"


class PausePoint:
    """Announces and pauses the first time the process reaches `point`; nothing otherwise."""

    def __init__(self, point: str, hold_s: float, announce: Path) -> None:
        self.point, self.hold_s, self.announce = point, hold_s, announce
        self._once = threading.Lock()  # held for good by the first thread that pauses

    def __call__(self, point: str, file_id: str) -> None:
        if point != self.point or not self._once.acquire(blocking=False):
            return
        with self.announce.open("a") as out:
            out.write(f"{point} {os.getpid()} {file_id}\n")
        time.sleep(self.hold_s)


def pause_from_env(environ: Mapping[str, str] = os.environ) -> PausePoint | None:
    """The pauser DLPIPE_TEST_PAUSE_AT asks for, or None when it is unset."""
    raw = environ.get(ENV_TEST_PAUSE_AT, "")
    if not raw:
        return None
    point, hold_s, path = raw.split(":", 2)
    return PausePoint(point, float(hold_s), Path(path))

"""Named pause points for the chaos tests; inert unless DLPIPE_TEST_PAUSE_AT is set.

DLPIPE_TEST_PAUSE_AT=`<point>:<hold_seconds>:<announce_file>`: the first time this process
reaches `<point>` (`received`, `claimed`, `published`), it appends `<point> <pid> <file_id>`
to the file and sleeps `hold_seconds`, so a test can SIGKILL or SIGSTOP it exactly there.
The environment is read once at import: when unset, `reach` costs one comparison.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from dlpipe.config import ENV_TEST_PAUSE_AT


def _parse(raw: str) -> tuple[str, float, Path] | None:
    if not raw:
        return None
    point, hold_s, path = raw.split(":", 2)
    return point, float(hold_s), Path(path)


_PLAN = _parse(os.environ.get(ENV_TEST_PAUSE_AT, ""))
_once = threading.Lock()  # held for good by the first thread that pauses


def reach(point: str, file_id: str) -> None:
    """Announce and pause here if a test asked for it (once per process); otherwise nothing."""
    if _PLAN is None or _PLAN[0] != point or not _once.acquire(blocking=False):
        return
    with _PLAN[2].open("a") as out:
        out.write(f"{point} {os.getpid()} {file_id}\n")
    time.sleep(_PLAN[1])

"""No module of dlpipe/ runs past MAX_LINES: a longer one is split along a seam (a port, a
step, a wire format), as docs/ARCHITECTURE.md's "Why some modules stay long" says for those
near it. OVER names the modules still past it; none may join them, and each leaves the list
once it is split."""

from __future__ import annotations

from pathlib import Path

import dlpipe

ROOT = Path(dlpipe.__file__).parent
MAX_LINES = 350
OVER: frozenset[str] = frozenset()


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_of_dlpipe_is_longer_than_the_limit() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted(ROOT.rglob("*.py"))
        if (n := _lines(p)) > MAX_LINES and str(p.relative_to(ROOT)) not in OVER
    }
    assert not long, f"split these modules (over {MAX_LINES} lines): {long}"


def test_each_module_let_past_the_limit_is_still_past_it() -> None:
    fits = {name for name in OVER if _lines(ROOT / name) <= MAX_LINES}
    assert not fits, f"take these from OVER, they fit now: {sorted(fits)}"

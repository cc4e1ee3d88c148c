"""Times have one format for people, the CLI's tables and the web view alike, and one for
storage (what items hold and `--json` prints)."""

from __future__ import annotations

import pytest

from dlpipe.cli.ops.render import iso, stamp
from dlpipe.domain.clock import iso_from_ms, time_for_people
from dlpipe.ui import present

MS = 1_772_258_400_999  # 2026-02-28T06:00:00.999Z


def test_the_format_for_people_is_utc_to_the_second_with_its_zone() -> None:
    """One word, ISO 8601, the milliseconds dropped (not rounded up into the next second)."""
    assert time_for_people(MS) == "2026-02-28T06:00:00Z"
    assert time_for_people(0) == "1970-01-01T00:00:00Z"


def test_the_format_for_storage_keeps_the_milliseconds() -> None:
    """Items and --json: the same instant with its milliseconds."""
    assert iso_from_ms(MS) == "2026-02-28T06:00:00.999Z"
    assert iso(MS) == iso_from_ms(MS)


@pytest.mark.parametrize(
    "value",
    [
        MS,
        "2026-02-28T06:00:00.999Z",
        "2026-02-28T06:00:00.999+00:00",
        "2026-02-28T07:00:00.999+01:00",
    ],
)
def test_the_cli_and_the_web_view_show_a_time_the_same_way(value: int | str) -> None:
    """Epoch ms or any stored ISO form: the CLI's table cell and the web page's text agree."""
    web = present.iso(value) if isinstance(value, int) else present.short_time(value)
    assert stamp(value) == web == "2026-02-28T06:00:00Z"


def test_a_stored_text_that_is_no_time_is_shown_as_it_is() -> None:
    """Neither surface invents a time; the CLI escapes control characters, HTML escapes later."""
    assert stamp("soon\x1b") == "soon\\x1b"
    assert present.short_time("soon") == "soon"
    assert (stamp(None), present.iso(None), present.short_time(None)) == (None, "-", "-")

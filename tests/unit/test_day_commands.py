"""The one rule for the command that starts a date's run by hand."""

from __future__ import annotations

import pytest

from dlpipe.domain.day_commands import start_day_command
from dlpipe.domain.feeds import DEFAULT_FEED_NAME


@pytest.mark.parametrize(
    ("feed", "deployed", "rerun", "command"),
    [
        (DEFAULT_FEED_NAME, False, False, "dlpipe run --date 2026-04-06"),
        (DEFAULT_FEED_NAME, False, True, "dlpipe run --date 2026-04-06"),
        ("vendor-b", False, True, "dlpipe run --date 2026-04-06 --feed vendor-b"),
        (DEFAULT_FEED_NAME, True, False, "dlpipe backfill --from 2026-04-06 --to 2026-04-06"),
        (
            "vendor-b",
            True,
            True,
            "dlpipe backfill --from 2026-04-06 --to 2026-04-06 --feed vendor-b --rerun",
        ),
    ],
)
def test_the_start_command_names_the_feed_and_the_rerun_where_they_matter(
    feed: str, deployed: bool, rerun: bool, command: str
) -> None:
    assert start_day_command("2026-04-06", feed, deployed=deployed, rerun=rerun) == command

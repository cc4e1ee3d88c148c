"""The command that starts a date's run by hand, as every screen and log line names it."""

from __future__ import annotations

from dlpipe.domain.feeds import DEFAULT_FEED_NAME


def start_day_command(date: str, feed: str, *, deployed: bool, rerun: bool = False) -> str:
    """`dlpipe backfill` where an orchestrator is deployed (it invokes it), else `dlpipe run`
    (the poller in the operator's shell, with the same attach-or-adopt rules). A named feed's
    day is named with `--feed`; the default feed's names none, so the command reads the same
    with or without named feeds. `rerun`: the day has completed and is to be run again (a
    restatement's revision), which `run` does by itself and `backfill` is told."""
    of_feed = "" if feed == DEFAULT_FEED_NAME else f" --feed {feed}"
    if deployed:
        again = " --rerun" if rerun else ""
        return f"dlpipe backfill --from {date} --to {date}{of_feed}{again}"
    return f"dlpipe run --date {date}{of_feed}"

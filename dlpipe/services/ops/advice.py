"""The repair commands the CLI and the web view suggest, as they run where they are shown."""

from __future__ import annotations

from dlpipe.config import Settings
from dlpipe.domain.feeds import DEFAULT_FEED_NAME


def start_day_command(settings: Settings, polling_date: str, feed: str = DEFAULT_FEED_NAME) -> str:
    """The command that starts a date's batch (or a new run adopting its unfinished files).

    `backfill` invokes the deployed orchestrator, so it works only where
    DLPIPE_ORCHESTRATOR_ARN is set; elsewhere (the local stack) `dlpipe run` runs the poller
    in this shell, with the same attach-or-adopt rules for a date that already has batches.
    A named feed's day is named with `--feed`; the default feed's command names none, so it
    reads the same with or without named feeds."""
    of_feed = "" if feed == DEFAULT_FEED_NAME else f" --feed {feed}"
    if settings.orchestrator_arn:
        return f"dlpipe backfill --from {polling_date} --to {polling_date}{of_feed}"
    return f"dlpipe run --date {polling_date}{of_feed}"

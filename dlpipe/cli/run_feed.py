"""`dlpipe run --feed NAME` without --local: the feed the day runs for, found where the
orchestrator finds it (the feeds file, then the SSM parameters), with `--poll-interval` over
the feed's own polling."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dlpipe.bootstrap.feed_source import feed_source
from dlpipe.config import Settings
from dlpipe.domain.feeds import DEFAULT_FEED_NAME, Feed
from dlpipe.feed_settings import FeedSource, settings_for_feed

if TYPE_CHECKING:
    from dlpipe.adapters.aws import AwsClients


class _Polled:
    """A feed source whose feeds poll every `interval` seconds (the run's --poll-interval)."""

    def __init__(self, source: FeedSource, interval: int) -> None:
        self._source, self._interval = source, interval

    def feed(self, name: str) -> Feed:
        """The feed called `name`, with the run's interval."""
        return replace(self._source.feed(name), poll_interval_seconds=self._interval)


@dataclass(frozen=True)
class RunFeed:
    """The feed `dlpipe run` runs a day of, and where the orchestrator's handler finds it."""

    name: str
    source: FeedSource

    def settings(self, settings: Settings) -> Settings:
        """The settings of the feed's run; FeedError (one line) if no configuration names it."""
        return settings_for_feed(settings, self.source.feed(self.name))

    def event(self, day: str, rerun: bool = False) -> dict[str, str | bool]:
        """The orchestrator's event: a named feed's says `"feed"`, the default feed's names
        none; `"rerun": true` only for a rerun."""
        event: dict[str, str | bool] = {"date": day}
        if self.name != DEFAULT_FEED_NAME:
            event["feed"] = self.name
        return {**event, "rerun": True} if rerun else event

    @property
    def of_feed(self) -> str:
        """`, feed NAME` for a named feed's progress lines; nothing for the default feed."""
        return "" if self.name == DEFAULT_FEED_NAME else f", feed {self.name}"


def run_feed(
    settings: Settings, name: str, poll_interval: int | None, clients: AwsClients | None = None
) -> RunFeed:
    """Feed `name` of the feeds file or the SSM parameters (FeedError: an invalid feeds file),
    polled every `poll_interval` seconds if given, else at its own interval; the parameters
    read with `clients` if given."""
    found = feed_source(settings, clients)
    return RunFeed(name, found if poll_interval is None else _Polled(found, poll_interval))

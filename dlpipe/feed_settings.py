"""One feed's settings, and where the feeds come from at run time.

`settings_for_feed` turns the process's Settings and one Feed into the Settings that feed's
orchestrator run and downloader parts use; the default feed without overrides keeps the
settings as they are. A `FeedSource` names a feed's configuration by its name: locally the
feeds file (`FileFeeds`, DLPIPE_FEEDS_FILE), on AWS one SSM parameter per feed
(dlpipe/adapters/feed_parameters.py); `ChainedFeeds` asks each in turn. The default feed is
always known, from the settings. A source asked for a feed it does not know reads its
configuration again, at most once every REREAD_INTERVAL_S, so a feed added while the
processes run is found by its first job, and a flood of such jobs costs one read.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from dlpipe.config import ENV_FEEDS_FILE, Settings
from dlpipe.domain.feeds import DEFAULT_FEED, FILE_SECRET_PREFIX, Feed, FeedError
from dlpipe.feeds_file import feeds_from_env, load_feeds_file
from dlpipe.log import get_logger

log = get_logger()
_OVERRIDES = (
    "poll_interval_seconds",
    "max_polls",
    "large_file_threshold_bytes",
    "stall_floor_bytes",
    "stall_window_seconds",
    "max_share_percent",
    "restatement_window_days",
    "queue_url",
)
# Shorter than the first wait of a job whose feed is unknown (dlpipe.domain.unknown_feed), so
# the job's next delivery always meets a fresh read.
REREAD_INTERVAL_S = 5.0


class UnknownFeedError(FeedError):
    """No configuration names the feed (neither the feeds file nor the deployment's)."""

    def __init__(self, name: str, where: str = "") -> None:
        super().__init__(f"feed {name!a} is not configured{where}")
        self.feed, self.where = name, where


class FeedSource(Protocol):
    """Where a feed's configuration is found by its name."""

    def feed(self, name: str) -> Feed:
        """The validated feed called `name`; UnknownFeedError or FeedError (one line)."""
        ...


def settings_for_feed(settings: Settings, feed: Feed) -> Settings:
    """The settings `feed`'s components run with: its provider, token, key, allowlist,
    overrides, name and destination prefix over the process's settings. A field the feed
    leaves unset (the default feed may) keeps the process's value."""
    changes: dict[str, Any] = {"feed": feed.name, "destination_prefix": feed.destination_prefix}
    if feed.provider_base_url is not None:
        changes["provider_base_url"] = feed.provider_base_url
    if feed.token_secret is not None:
        path = _file_path(feed.token_secret)
        # Exactly one source each: a process-wide token or secret must never stand in for it.
        changes["provider_token"] = None
        changes["provider_token_file"] = path
        changes["provider_token_secret_id"] = None if path else feed.token_secret
    if feed.private_key_secret is not None:
        path = _file_path(feed.private_key_secret)
        changes["private_key_file"] = path
        changes["private_key_secret_id"] = None if path else feed.private_key_secret
    # A named feed's empty allowlist means its own provider's hosts, never the default's list.
    if feed.url_allowed_hosts or not feed.is_default:
        changes["url_allowed_hosts"] = feed.url_allowed_hosts
    for name in _OVERRIDES:
        value = getattr(feed, name)
        if value is not None:
            changes[name] = value
    return replace(settings, **changes)


def _file_path(secret: str) -> str | None:
    return secret[len(FILE_SECRET_PREFIX) :] if secret.startswith(FILE_SECRET_PREFIX) else None


class FileFeeds:
    """The feeds of one feeds file (or of none: the default feed alone). With `path`, a feed
    it does not know makes it read the file again (at most once every `reread_s`); a file
    that no longer reads or validates keeps the feeds it had (logged, one line)."""

    def __init__(
        self,
        feeds: Mapping[str, Feed],
        where: str = "",
        *,
        path: str | None = None,
        reread_s: float = REREAD_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._feeds = dict(feeds)
        self._where = where
        self._path, self._reread_s, self._clock = path, reread_s, clock
        self._lock = threading.Lock()
        self._read_at: float | None = None  # the last re-read; the first miss always re-reads

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> FileFeeds:
        """The feeds DLPIPE_FEEDS_FILE names (FeedError, one line, if it is invalid)."""
        env = os.environ if env is None else env
        path = env.get(ENV_FEEDS_FILE) or None
        return cls(feeds_from_env(env), " in the feeds file", path=path)

    def feed(self, name: str) -> Feed:
        """The feed called `name`; the default feed is always known."""
        found = self._feeds.get(name)
        if found is None:
            found = self._reread(name)
        if found is None and name == DEFAULT_FEED.name:
            return DEFAULT_FEED
        if found is None:
            raise UnknownFeedError(name, self._where)
        return found

    def _reread(self, name: str) -> Feed | None:
        if self._path is None or name == DEFAULT_FEED.name:
            return None
        with self._lock:  # one thread reads; the others then look in what it read
            found = self._feeds.get(name)
            now = self._clock()
            if found is not None or (
                self._read_at is not None and now - self._read_at < self._reread_s
            ):
                return found
            self._read_at = now
            try:
                self._feeds = load_feeds_file(self._path)
            except FeedError as exc:
                log.warning("feeds.reread_failed", error=str(exc))
                return None
            return self._feeds.get(name)


class ChainedFeeds:
    """Each source in turn: the first that knows the feed answers; unknown to all of them,
    one UnknownFeedError naming the feed. Any other error (a bad parameter) stops the search."""

    def __init__(self, *sources: FeedSource) -> None:
        self._sources = sources

    def feed(self, name: str) -> Feed:
        """The feed called `name` from the first source that has it."""
        for source in self._sources:
            try:
                return source.feed(name)
            except UnknownFeedError:
                continue
        raise UnknownFeedError(name)

"""The local feeds file (TOML, DLPIPE_FEEDS_FILE): read once, each feed validated by the
domain's one rule (dlpipe/domain/feeds.py), errors one line naming the file, feed and field.
A feeds file is a local-development source: its providers may be on plain http and its
secrets `file:PATH` (on AWS, feeds come from SSM parameters: adapters/feed_parameters.py)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from dlpipe.config import ENV_FEEDS_FILE
from dlpipe.domain.feeds import (
    DEFAULT_FEED,
    Feed,
    FeedError,
    feed_from_mapping,
    overlapping_feeds,
    shown_name,
)


def load_feeds_file(path: str | Path) -> dict[str, Feed]:
    """Every feed of the TOML file at `path` (`[feeds.NAME]` tables), validated; FeedError."""
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise FeedError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise FeedError(f"{path}: not a TOML file: {_one_line(exc)}") from exc
    try:
        return feeds_from_document(document)
    except FeedError as exc:
        raise FeedError(f"{path}: {exc}") from exc


def feeds_from_document(document: Mapping[str, object]) -> dict[str, Feed]:
    """The feeds of a parsed document: one `feeds` table of tables, at least one feed."""
    extra = sorted(set(document) - {"feeds"})
    if extra:
        raise FeedError(f"{extra[0]!a}: unknown top-level key (feeds go in [feeds.NAME] tables)")
    tables = document.get("feeds")
    if not isinstance(tables, Mapping) or not tables:
        raise FeedError("feeds: no [feeds.NAME] table")
    loaded: dict[str, Feed] = {}
    for name, values in tables.items():
        if not isinstance(values, Mapping):
            raise FeedError(f"feeds.{shown_name(name)}: must be a table of fields")
        loaded[name] = feed_from_mapping(name, values, local=True)
    # Two feeds publishing under one prefix, or one inside the other, could not be told apart
    # by a consumer listing either.
    overlap = overlapping_feeds(loaded)
    if overlap is not None:
        first, second = (loaded[name] for name in overlap)
        raise FeedError(
            f"feeds.{second.name}.destination_prefix: {second.destination_prefix!r} overlaps"
            f" feed {first.name}'s {first.destination_prefix!r} (no prefix may equal, contain"
            f" or lie inside another)"
        )
    return loaded


def feeds_from_env(env: Mapping[str, str] | None = None) -> dict[str, Feed]:
    """The feeds DLPIPE_FEEDS_FILE names; without it, the default feed alone."""
    env = os.environ if env is None else env
    path = env.get(ENV_FEEDS_FILE)
    if not path:
        return {DEFAULT_FEED.name: DEFAULT_FEED}
    return load_feeds_file(path)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())

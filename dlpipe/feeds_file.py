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
    FILE_SECRET_PREFIX,
    PEM_MAX_BYTES,
    Feed,
    FeedError,
    check_prefixes,
    feed_from_mapping,
    is_bearer_token,
    is_pem_private_key,
    shown_name,
)
from dlpipe.secret_files import SecretFileError, read_secret_text


def load_feeds_file(path: str | Path) -> dict[str, Feed]:
    """Every feed of the TOML file at `path` (`[feeds.NAME]` tables), validated; FeedError."""
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise FeedError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise FeedError(f"{path}: not a TOML file: {_one_line(exc)}") from exc
    try:
        feeds = feeds_from_document(document)
        for feed in feeds.values():
            check_secret_files(feed)
    except FeedError as exc:
        raise FeedError(f"{path}: {exc}") from exc
    return feeds


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
    check_prefixes(loaded)
    return loaded


def check_secret_files(feed: Feed) -> None:
    """A feed's `file:` secrets exist and are what they claim, checked when the file is read,
    before anything starts: each a regular file of at most PEM_MAX_BYTES (secret_files.py),
    the token one line of visible ASCII, the key one PEM private key.
    FeedError in one line naming the feed, field and path; what a file holds is never shown
    (a token file pointing at the wrong file would otherwise be echoed)."""
    for field, fits, what in (
        ("token_secret", is_bearer_token, "one token (one line of visible ASCII)"),
        ("private_key_secret", is_pem_private_key, "one PEM private key"),
    ):
        secret = getattr(feed, field)
        if secret is None or not secret.startswith(FILE_SECRET_PREFIX):
            continue
        path = secret[len(FILE_SECRET_PREFIX) :]
        where = f"feeds.{feed.name}.{field}: file {path!a}"
        try:
            text = read_secret_text(path, PEM_MAX_BYTES)
        except SecretFileError as exc:
            raise FeedError(f"{where} {exc}") from None
        if not fits(text.strip()):
            raise FeedError(f"{where} does not hold {what}; what it holds is not shown here")


def feeds_from_env(env: Mapping[str, str] | None = None) -> dict[str, Feed]:
    """The feeds DLPIPE_FEEDS_FILE names; without it, the default feed alone."""
    env = os.environ if env is None else env
    path = env.get(ENV_FEEDS_FILE)
    if not path:
        return {DEFAULT_FEED.name: DEFAULT_FEED}
    return load_feeds_file(path)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())

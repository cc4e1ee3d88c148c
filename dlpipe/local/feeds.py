"""The local stack's feeds: one stub provider per feed, each with its own key pair and token.

A feeds template (`dlpipe/local/feeds.local.toml`, or `local up --feeds N`'s numbered feeds)
names the feeds and their own fields; the stack adds what only it knows - each named feed's
stub URL, token and key files, and the emulator's host as its URL allowlist - and writes the
effective feeds file every process reads (DLPIPE_FEEDS_FILE), validated by the one rule
(dlpipe/feeds_config.py). The default feed keeps reading the process's settings, as before.
"""

from __future__ import annotations

import json
import os
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlpipe.domain.feeds import DEFAULT_FEED_NAME, FILE_SECRET_PREFIX, Feed, FeedError
from dlpipe.feeds_config import feeds_from_document, load_feeds_file
from dlpipe.local.stub.crypto import generate_rsa_keypair

LOCAL_FEEDS_TEMPLATE = Path(__file__).with_name("feeds.local.toml")
MAX_LOCAL_FEEDS = 8  # stub servers, key pairs and days on one laptop: a handful is the point
PRIVATE_KEY_NAME = "provider-rsa-private.pem"
PUBLIC_KEY_NAME = "provider-rsa-public.pem"
TOKEN_NAME = "token"  # noqa: S105 (a file name, not a secret)
# Only the running stack knows these: a template that sets one would be silently overridden.
STACK_FIELDS = ("provider_base_url", "token_secret", "private_key_secret", "url_allowed_hosts")
# A numbered feed's own fields (`local up --feeds N`); the default feed's are DEFAULT_FEED's.
_NUMBERED = {"schedule": "cron(30 6 * * ? *)", "time_zone": "UTC"}

FeedTables = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class FeedKeys:
    """A feed's secrets as its stub and its downloaders hold them."""

    public_key_pem: bytes
    private_key_path: Path
    token: str
    token_path: Path | None = None  # None: the default feed's token lives in the settings


def write_key_pair(folder: Path) -> tuple[Path, bytes]:
    """A fresh RSA key pair in `folder`: the private PEM readable by its owner only (0600),
    and the public PEM; returns the private key's path and the public PEM."""
    folder.mkdir(parents=True, exist_ok=True)
    private_pem, public_pem = generate_rsa_keypair()
    private_path = folder / PRIVATE_KEY_NAME
    _write_private(private_path, private_pem)
    (folder / PUBLIC_KEY_NAME).write_bytes(public_pem)
    return private_path, public_pem


def named_feed_keys(folder: Path) -> FeedKeys:
    """A named feed's fresh key pair and token, as files in `folder` (both 0600)."""
    private_path, public_pem = write_key_pair(folder)
    token = secrets.token_urlsafe(32)
    token_path = folder / TOKEN_NAME
    _write_private(token_path, token.encode())
    return FeedKeys(public_pem, private_path, token, token_path)


def _write_private(path: Path, data: bytes) -> None:
    path.unlink(missing_ok=True)
    # Created with 0600, never readable by others even for an instant.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(data)


def numbered_feeds(count: int) -> FeedTables:
    """`count` feeds: the default, then feed-2 .. feed-N, each under its own prefix."""
    if not 1 <= count <= MAX_LOCAL_FEEDS:
        raise FeedError(f"--feeds must be 1 to {MAX_LOCAL_FEEDS}, got {count}")
    tables: FeedTables = {DEFAULT_FEED_NAME: {}}
    for number in range(2, count + 1):
        name = f"feed-{number}"
        tables[name] = {**_NUMBERED, "destination_prefix": name}
    return tables


def read_template(path: Path = LOCAL_FEEDS_TEMPLATE) -> FeedTables:
    """The feeds of a local template: a feeds file without the fields the stack fills in."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FeedError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise FeedError(f"{path}: not a TOML file: {' '.join(str(exc).split())}") from exc
    tables = document.get("feeds")
    if set(document) != {"feeds"} or not isinstance(tables, Mapping) or not tables:
        raise FeedError(f"{path}: a local feeds template holds [feeds.NAME] tables only")
    for name, values in tables.items():
        taken = sorted(set(values) & set(STACK_FIELDS)) if isinstance(values, Mapping) else []
        if taken:
            raise FeedError(
                f"{path}: feeds.{name}.{taken[0]}: set by the local stack, leave it out"
            )
    try:  # the same checks as the effective file, with placeholders for the stack's fields
        feeds_from_document({"feeds": _filled(tables, _placeholders(tables))})
    except FeedError as exc:
        raise FeedError(f"{path}: {exc}") from exc
    if len(tables) > MAX_LOCAL_FEEDS:
        raise FeedError(f"{path}: at most {MAX_LOCAL_FEEDS} feeds run locally")
    return {name: dict(values) for name, values in tables.items()}


def write_feeds_file(
    path: Path,
    tables: FeedTables,
    keys: Mapping[str, FeedKeys],
    urls: Mapping[str, str],
    allowed_hosts: tuple[str, ...],
) -> dict[str, Feed]:
    """Write the effective feeds file (each named feed with its stub's URL, its key and token
    files and `allowed_hosts`) at `path`, and return its feeds as every process will read them."""
    stack_fields = {
        name: {
            "provider_base_url": urls[name],
            # Absolute: a process started in another folder (a second shell) reads them too.
            "token_secret": f"{FILE_SECRET_PREFIX}{Path(str(keys[name].token_path)).resolve()}",
            "private_key_secret": f"{FILE_SECRET_PREFIX}{keys[name].private_key_path.resolve()}",
            "url_allowed_hosts": list(allowed_hosts),
        }
        for name in tables
        if name != DEFAULT_FEED_NAME
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_toml(_filled(tables, stack_fields)), encoding="utf-8")
    return load_feeds_file(path)


def _placeholders(tables: Mapping[str, object]) -> FeedTables:
    fake = {
        "provider_base_url": "http://127.0.0.1:1/",
        "token_secret": "file:token",
        "private_key_secret": "file:key",
    }
    return {name: dict(fake) for name in tables if name != DEFAULT_FEED_NAME}


def _filled(tables: Mapping[str, Any], extra: Mapping[str, Mapping[str, Any]]) -> FeedTables:
    return {
        name: {**values, **extra.get(name, {})} if isinstance(values, Mapping) else values
        for name, values in tables.items()
    }


def _toml(tables: FeedTables) -> str:
    """The feeds as TOML (strings, whole numbers and lists of strings: a JSON string is a
    valid TOML basic string)."""
    lines = ["# Written by the local stack: the feeds every local process reads.", ""]
    for name, values in tables.items():
        lines.append(f"[feeds.{json.dumps(name)}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
        lines.append("")
    return "\n".join(lines)

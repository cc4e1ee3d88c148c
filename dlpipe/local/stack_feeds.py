"""The local stack's feeds: one stub provider per feed, each with its own key pair and token.

A feeds template (`dlpipe/local/feeds.local.toml`, or `local up --feeds N`'s numbered feeds)
names the feeds and their own fields; the stack adds what only it knows - each named feed's
stub URL, token and key files, the emulator's host as its URL allowlist and its own download
queue (created as terraform/ defines it) - validates the
result by the one rule (dlpipe/feeds_file.py), and writes each named feed as an SSM
parameter in the emulator, as Terraform does on AWS (adapters/feed_parameters.publish_feeds):
every process reads it from there through DLPIPE_FEEDS_PARAMETER_PATH, the production path.
The default feed reads the process's settings, as on AWS.
"""

from __future__ import annotations

import os
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlpipe.domain.feeds import DEFAULT_FEED_NAME, Feed, FeedError
from dlpipe.feeds_file import feeds_from_document

if TYPE_CHECKING:
    from dlpipe.adapters.aws import AwsClients

# botocore and cryptography are imported where they are used: `dlpipe local up --help` and
# `dlpipe run --help` read this module's constants without loading them.

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
    from dlpipe.local.stub.crypto import generate_rsa_keypair  # noqa: PLC0415

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


def store_feed_secrets(
    clients: AwsClients, name: str, keys: FeedKeys, name_prefix: str = ""
) -> tuple[str, str]:
    """(token ARN, private key ARN): feed `name`'s token and key in the emulator's Secrets
    Manager, under the names terraform/feeds.tf gives the secrets it creates for a feed."""
    where = f"{name_prefix}dlpipe/feeds/{name}"
    client = clients.secretsmanager
    token = _put_secret(client, f"{where}/provider-token", keys.token)
    key = _put_secret(client, f"{where}/rsa-private-key", keys.private_key_path.read_text())
    return token, key


def _put_secret(client: Any, name: str, value: str) -> str:
    from botocore.exceptions import ClientError  # noqa: PLC0415

    try:
        return str(client.create_secret(Name=name, SecretString=value)["ARN"])
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceExistsException":
            raise
    return str(client.put_secret_value(SecretId=name, SecretString=value)["ARN"])


def effective_feeds(
    tables: FeedTables,
    secrets: Mapping[str, tuple[str, str]],
    urls: Mapping[str, str],
    allowed_hosts: tuple[str, ...],
    queues: Mapping[str, str] | None = None,
) -> dict[str, Feed]:
    """The template's feeds with what the stack adds (each named feed's stub URL, its token
    and key secrets as `secrets` names them, `allowed_hosts`, its own download queue as
    `queues` names it), validated as a feeds file is."""
    stack_fields = {
        name: {
            "provider_base_url": urls[name],
            "token_secret": secrets[name][0],
            "private_key_secret": secrets[name][1],
            "url_allowed_hosts": list(allowed_hosts),
            **({"queue_url": queues[name]} if queues and name in queues else {}),
        }
        for name in tables
        if name != DEFAULT_FEED_NAME
    }
    return feeds_from_document({"feeds": _filled(tables, stack_fields)})


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

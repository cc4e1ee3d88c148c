"""A feed: one provider's daily delivery, and the one validation every loader of feeds calls.

Plain data, no I/O (zoneinfo reads the system's time zone database, nothing else). The
default feed is the deployment's own provider: it reads the provider URL, token and key
from the process's settings (DLPIPE_PROVIDER_URL, ...), so it may leave them unset here; a
named feed must set them.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from dlpipe.domain.url_settings import feed_url_problem

DEFAULT_FEED_NAME = "default"
# The patterns below are terraform/variables.tf's feed validations, character for character
# where Terraform can check the same thing (tests/infra/test_feed_rule_parity.py holds the
# two together): a feed Terraform accepts is a feed the functions load, and no other.
# Never a '.': keys carry the feed before a '.' (dlpipe/domain/model.py), entities have none.
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,30}")
# cron(min hour day-of-month month day-of-week year) or rate(N unit), as EventBridge
# Scheduler takes them; the fields' values are checked by AWS when the schedule is made.
_CRON_FIELD = r"[0-9A-Za-z*?,/#-]+"
_SCHEDULE = re.compile(
    rf"cron\({_CRON_FIELD}( {_CRON_FIELD}){{5}}\)"
    r"|rate\([1-9][0-9]* (minute|minutes|hour|hours|day|days)\)"
)
# The shape of an IANA name (Terraform checks no more); zoneinfo then says whether it exists.
_TIME_ZONE = re.compile(r"[A-Za-z_][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*")
_TIME_ZONE_MAX = 50
_DEADLINE = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")
# The URL fields' pattern is in domain/url_settings.py (FEED_URL), with the one URL rule.
# S3 key segments joined by '/', no leading '/', no '.' or '..' segment; one trailing '/'
# (as Terraform's examples write it) is dropped where a feed is read, in feed_from_mapping.
_PREFIX = re.compile(r"[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*")
_PREFIX_MAX = 200
# dlpipe's own keys (the day manifests, _dlpipe/manifests/...) live under this first segment.
RESERVED_PREFIX = "_dlpipe"
# A Secrets Manager ARN; locally also a secret's name or `file:PATH`.
_SECRET_NAME = re.compile(r"[A-Za-z0-9/_+=.@-]{1,512}")
_SECRET_ARN = re.compile(
    r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+"
)
_HOST_PATTERN = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:([0-9]{1,5}|\*))?")
# Every duration, count and size field of a feed: the whole numbers it loads, from..to (None:
# the deployment's value). Each lies inside the range of the setting it overrides (config.py's
# INT_SETTINGS, which the domain may not import); tests/unit/test_feed_ranges.py holds both,
# and fails for a numeric Feed field missing here.
FEED_INT_RANGES: Mapping[str, tuple[int, int]] = {
    "poll_interval_seconds": (10, 86_400),
    "max_polls": (1, 1000),
    # S3's largest object is 5 TiB (DLPIPE_LARGE_FILE_THRESHOLD_BYTES's maximum).
    "large_file_threshold_bytes": (0, 5 * 2**40),
    "stall_floor_bytes": (0, 2**40),  # DLPIPE_STALL_FLOOR_BYTES's maximum
    "stall_window_seconds": (5, 3600),
    "max_share_percent": (1, 100),
    "restatement_window_days": (0, 31),
}
FILE_SECRET_PREFIX = "file:"  # noqa: S105 (a scheme, not a secret)
# One header value's worth of visible ASCII: a bearer token (RFC 6750's b64token and the opaque
# tokens providers issue) has no space, line break or control character.
_BEARER_TOKEN = re.compile(r"[\x21-\x7e]{1,4096}")


def is_bearer_token(text: str) -> bool:
    """True if `text` can be sent as one bearer token (visible ASCII, one line, <= 4096)."""
    return _BEARER_TOKEN.fullmatch(text) is not None


# A PEM private key as OpenSSL writes one (PKCS#1 "RSA PRIVATE KEY", PKCS#8 "PRIVATE KEY",
# "ENCRYPTED PRIVATE KEY"): a BEGIN line, base64 lines (and PKCS#1's encryption headers), the
# matching END line. The shape only: loading it is the downloader's (adapters/crypto.py).
_PEM_PRIVATE_KEY = re.compile(
    r"\s*-----BEGIN (?P<kind>(RSA |ENCRYPTED )?PRIVATE KEY)-----\r?\n"
    r"([A-Za-z0-9-]+: [^\r\n]*\r?\n)*(\r?\n)?"
    r"([A-Za-z0-9+/=]{1,76}\r?\n)+"
    r"-----END (?P=kind)-----\s*"
)
PEM_MAX_BYTES = 65536


def is_pem_private_key(text: str) -> bool:
    """True if `text` is one PEM private key block (nothing before or after but white space)."""
    return len(text) <= PEM_MAX_BYTES and _PEM_PRIVATE_KEY.fullmatch(text) is not None


class FeedError(ValueError):
    """A feed's configuration is invalid; the message is one line naming the feed and field."""


@dataclass(frozen=True)
class Feed:
    """One provider's daily delivery. None in an override: the deployment's default."""

    name: str
    schedule: str
    time_zone: str
    # None only for the default feed, which takes the process's settings.
    provider_base_url: str | None = None
    # A Secrets Manager name or ARN, or locally `file:PATH` (a key may be shared by feeds).
    token_secret: str | None = None
    private_key_secret: str | None = None
    # "" publishes at the bucket's root (the default feed's place: existing readers look there).
    destination_prefix: str = ""
    # Host patterns as DLPIPE_URL_ALLOWED_HOSTS takes them; empty: the provider's defaults.
    url_allowed_hosts: tuple[str, ...] = ()
    deadline: str | None = None  # "HH:MM" local time in time_zone: the day is late after it
    poll_interval_seconds: int | None = None
    max_polls: int | None = None
    large_file_threshold_bytes: int | None = None
    # The downloads' stall floor (dlpipe/domain/stall.py) for this feed's files.
    stall_floor_bytes: int | None = None
    stall_window_seconds: int | None = None
    # The share of the downloaders this feed may hold at once (dlpipe/domain/lanes.py).
    max_share_percent: int | None = None
    # How many earlier days its scheduled run re-lists for restatements (0: none).
    restatement_window_days: int | None = None
    # The feed's own download queue, set by the deployment (Terraform, the local stack), never
    # by hand; None: the deployment's queue (DLPIPE_QUEUE_URL), shared with the default feed.
    queue_url: str | None = None

    @property
    def is_default(self) -> bool:
        """True for the feed whose keys and items have no feed in them (`{entity}-{date}`, no `Feed`)."""
        return self.name == DEFAULT_FEED_NAME


# The deployment's own provider, scheduled as terraform/variables.tf's defaults schedule it.
DEFAULT_FEED = Feed(name=DEFAULT_FEED_NAME, schedule="cron(30 6 * * ? *)", time_zone="UTC")

FEED_FIELDS = tuple(f.name for f in fields(Feed))


def is_feed_name(value: object) -> bool:
    """True if `value` is a feed name: `[a-z0-9][a-z0-9-]{0,30}`."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def shown_name(name: object) -> str:
    """`name` as an error message shows it: as is if valid, else quoted (one line, always)."""
    return name if isinstance(name, str) and is_feed_name(name) else ascii(name)


def feed_from_mapping(name: str, values: Mapping[str, Any], *, local: bool = False) -> Feed:
    """A validated Feed from one config table (TOML, or a feed's SSM parameter); FeedError.

    `local` is the local-development switch: a provider on plain http, a secret as a name
    or `file:PATH`. A trailing '/' of destination_prefix is dropped here, once.
    """
    # "name" too: the table's key names the feed, a second spelling could disagree with it.
    unknown = sorted(set(values) - set(FEED_FIELDS) | ({"name"} & set(values)))
    if unknown:
        raise FeedError(f"feeds.{shown_name(name)}.{shown_name(unknown[0])}: unknown field")
    kwargs = dict(values)
    kwargs["name"] = name
    if isinstance(kwargs.get("url_allowed_hosts"), list):
        kwargs["url_allowed_hosts"] = tuple(kwargs["url_allowed_hosts"])
    prefix = kwargs.get("destination_prefix")
    if isinstance(prefix, str) and prefix.endswith("/") and prefix != "/":
        kwargs["destination_prefix"] = prefix[:-1]
    for required in ("schedule", "time_zone"):
        kwargs.setdefault(
            required, getattr(DEFAULT_FEED, required) if name == DEFAULT_FEED_NAME else None
        )
    return validate_feed(Feed(**kwargs), local=local)


def feed_fields(feed: Feed) -> dict[str, Any]:
    """`feed`'s fields but its name, as JSON holds them: `feed_from_fields(feed.name, ...)`
    gives the same feed back (the orchestrator checkpoints a looked-up feed this way)."""
    values = {name: getattr(feed, name) for name in FEED_FIELDS if name != "name"}
    values["url_allowed_hosts"] = list(feed.url_allowed_hosts)
    return values


def feed_from_fields(name: str, fields: Mapping[str, Any]) -> Feed:
    """The feed `feed_fields` gave, as it was: not validated again, since the source that
    produced it validated it under its own rule (a feeds file's http provider, a run's
    --poll-interval override); FeedError only for fields that are not a Feed's."""
    values = dict(fields)
    values["url_allowed_hosts"] = tuple(values.get("url_allowed_hosts") or ())
    try:
        return Feed(name=name, **values)
    except TypeError as exc:
        raise FeedError(f"feeds.{shown_name(name)}: not a feed's fields") from exc


def prefixes_overlap(first: str, second: str) -> bool:
    """True if two feeds publishing under these prefixes could meet: one equals, contains or
    lies inside the other, segment by segment and in any letter case ('vendor' and
    'Vendor/daily' do; 'vendor' and 'vendor-b' do not): a consumer copying the bucket to a
    case-insensitive disk, or matching keys without case, would merge them."""
    first, second = first.lower(), second.lower()
    return f"{first}/".startswith(f"{second}/") or f"{second}/".startswith(f"{first}/")


def overlapping_feeds(feeds: Mapping[str, Feed]) -> tuple[str, str] | None:
    """Two feeds whose destination prefixes overlap (the first pair by name), or None: a
    consumer listing one feed's prefix must find that feed's files only. Every feed with a
    prefix counts, the default feed too when it is given one; at the bucket's root ('') the
    default feed is kept from the named feeds' prefixes by the orchestrator's root guard."""
    placed = sorted((f.name, f.destination_prefix) for f in feeds.values() if f.destination_prefix)
    for index, (name, prefix) in enumerate(placed):
        for other, other_prefix in placed[index + 1 :]:
            if prefixes_overlap(prefix, other_prefix):
                return name, other
    return None


def check_prefixes(feeds: Mapping[str, Feed]) -> None:
    """FeedError, one line naming both feeds and their prefixes, if two of `feeds` have
    overlapping destination prefixes, whatever source each came from."""
    overlap = overlapping_feeds(feeds)
    if overlap is None:
        return
    first, second = (feeds[name] for name in overlap)
    raise FeedError(
        f"feeds.{second.name}.destination_prefix: {second.destination_prefix!r} overlaps"
        f" feed {first.name}'s {first.destination_prefix!r} (no prefix may equal, contain or"
        f" lie inside another, in any letter case)"
    )


def validate_feed(feed: Feed, *, local: bool = False) -> Feed:
    """Return `feed` if every field is valid, else FeedError naming the first bad field."""
    name = shown_name(feed.name)
    for field_name, check in _CHECKS:
        problem = check(getattr(feed, field_name), feed, local)
        if problem:
            raise FeedError(f"feeds.{name}.{field_name}: {problem}")
    return feed


def _name(value: object, _: Feed, __: bool) -> str | None:
    if is_feed_name(value):
        return None
    return f"{value!r} is not a feed name ([a-z0-9][a-z0-9-], 1-31 characters)"


def _schedule(value: object, _: Feed, __: bool) -> str | None:
    if value is None:
        return "is required"
    if isinstance(value, str) and _SCHEDULE.fullmatch(value):
        return None
    return f"{value!a} is not a cron(6 fields) or rate(N unit) expression"


def _time_zone(value: object, _: Feed, __: bool) -> str | None:
    if value is None:
        return "is required"
    if isinstance(value, str) and len(value) <= _TIME_ZONE_MAX and _TIME_ZONE.fullmatch(value):
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
        else:
            return None
    return f"{value!a} is not an IANA time zone"


def _provider_base_url(value: object, feed: Feed, local: bool) -> str | None:
    if value is None:
        return None if feed.is_default else "is required for a named feed"
    # The URL itself is never shown: it may hold a token.
    if problem := feed_url_problem(value, local):
        what = "an https or http URL" if local else "an https URL"
        return f"must be {what} with a host, no credentials, query or fragment: it {problem}"
    return None


def _queue_url(value: object, _: Feed, local: bool) -> str | None:
    problem = None if value is None else feed_url_problem(value, local)
    return f"is not an SQS queue URL: it {problem}" if problem else None


def _secret(value: object, feed: Feed, local: bool) -> str | None:
    if value is None:
        return None if feed.is_default else "is required for a named feed"
    if isinstance(value, str):
        if _SECRET_ARN.fullmatch(value):
            return None
        if local and value.startswith(FILE_SECRET_PREFIX) and len(value) > len(FILE_SECRET_PREFIX):
            return None
        if local and ":" not in value and _SECRET_NAME.fullmatch(value):
            return None
    if local:
        return f"{value!a} is not a Secrets Manager name or ARN, or file:PATH"
    return f"{value!a} is not a Secrets Manager secret's ARN"


def _prefix(value: object, feed: Feed, _: bool) -> str | None:
    if value == "":
        return None if feed.is_default else "is required for a named feed"
    if isinstance(value, str) and len(value) <= _PREFIX_MAX and _PREFIX.fullmatch(value):
        # In any letter case, as overlaps are (prefixes_overlap).
        if value.split("/", 1)[0].lower() == RESERVED_PREFIX:
            return f"{value!a} lies in {RESERVED_PREFIX}/, where dlpipe keeps its own keys"
        return None
    return (
        f"{value!a} is not a key prefix (segments of letters, digits, '_', '-' joined by"
        f" '/', at most {_PREFIX_MAX} characters)"
    )


def _hosts(value: object, _: Feed, __: bool) -> str | None:
    if not isinstance(value, tuple):
        return f"{value!a} is not a list of host patterns"
    for host in value:
        if not isinstance(host, str) or not _HOST_PATTERN.fullmatch(host):
            return f"{host!a} is not a host pattern (host, *.domain, host:port)"
    return None


def _deadline(value: object, _: Feed, __: bool) -> str | None:
    if value is None or (isinstance(value, str) and _DEADLINE.fullmatch(value)):
        return None
    return f"{value!a} is not a local time HH:MM"


def _whole(minimum: int, maximum: int) -> Callable[[object, Feed, bool], str | None]:
    def check(value: object, _: Feed, __: bool) -> str | None:
        if value is None or (type(value) is int and minimum <= value <= maximum):
            return None
        return f"{value!a} is not a whole number >= {minimum} and <= {maximum}"

    return check


# Each field's check in Feed's order (the first bad one is named): its own, or its range's.
_OWN_CHECKS: Mapping[str, Callable[[object, Feed, bool], str | None]] = {
    "name": _name,
    "schedule": _schedule,
    "time_zone": _time_zone,
    "provider_base_url": _provider_base_url,
    "token_secret": _secret,
    "private_key_secret": _secret,
    "destination_prefix": _prefix,
    "url_allowed_hosts": _hosts,
    "deadline": _deadline,
    "queue_url": _queue_url,
}
_CHECKS = tuple(
    (name, _OWN_CHECKS.get(name) or _whole(*FEED_INT_RANGES[name]))
    for name in FEED_FIELDS
    if name in _OWN_CHECKS or name in FEED_INT_RANGES
)

"""Which URLs from the provider dlpipe may request: the rule, in plain Python (no boto3).

A URL passes only when it is `https`, carries no userinfo, names an allowed host (and port),
is not an IP literal and resolves to public addresses only (NON_GLOBAL_BLOCKS and
EMBEDDING_BLOCKS below; plain `http`, IP literals and internal addresses only where the
settings allow them). `approve` returns the addresses it checked, and the download
connects to those (adapters/pinned_http.py). Why (SSRF, DNS rebinding): docs/ARCHITECTURE.md, "Why provider
URLs are checked in the domain".
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

from dlpipe.domain.download_errors import UrlNotAllowedError
from dlpipe.domain.text import escape_invisible

Resolver = Callable[[str, int], Sequence[str]]
_DEFAULT_PORTS = {"https": 443, "http": 80}
MAX_REDIRECTS = 3
_SHOWN_LIMIT = 100  # characters of a host in a message (a DNS name may have 253)


class UrlRefused(ValueError):
    """A URL the policy refuses; `reason` is short, `host` is the only part of the URL kept.
    The message shows the host through `printable`: it is provider text, bound for a terminal."""

    def __init__(self, reason: str, host: str) -> None:
        super().__init__(f"{reason} (host {printable(host)})")
        self.reason, self.host = reason, host


@dataclass(frozen=True)
class Approved:
    """A URL the policy let through: its host, port and the addresses it was checked at."""

    host: str
    port: int
    addresses: tuple[str, ...]


def printable(text: str, limit: int = _SHOWN_LIMIT) -> str:
    """`text` with each invisible character written as its escape (ESC as `\\x1b`: the one
    escape set, domain/text.py's), cut to `limit` characters: what a message may show of a
    provider's value."""
    shown = escape_invisible(text)
    return shown if len(shown) <= limit else f"{shown[: limit - 3]}..."


def resolve_addresses(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, in the system resolver's order of preference."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UrlRefused("the host does not resolve", host) from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def default_allowed_hosts(region: str, provider_base_url: str | None) -> tuple[str, ...]:
    """The provider's S3 hosts for `region` (virtual-hosted and path style) and its API host."""
    hosts = [
        f"*.s3.{region}.amazonaws.com",
        f"s3.{region}.amazonaws.com",
        "*.s3.amazonaws.com",
        "s3.amazonaws.com",
    ]
    if provider_base_url and (api := urlsplit(provider_base_url)).hostname:
        hosts.append(api.netloc.rsplit("@", 1)[-1].lower())
    return tuple(hosts)


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


# Where a connection would land that is not the public Internet: IANA's IPv4 and IPv6
# special-purpose registries ("globally reachable: false"), multicast and the blocks Python's
# `is_global` of some versions misses. An address passes only when it is in none of these
# and `is_global` (whatever the running Python knows more) agrees.
NON_GLOBAL_BLOCKS: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "this network"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared address space, carrier-grade NAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local, the metadata service's"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/29", "IETF protocol assignments"),
    ("192.0.0.8/32", "IETF protocol assignments"),
    ("192.0.0.11/32", "IETF protocol assignments"),
    ("192.0.0.12/30", "IETF protocol assignments"),
    ("192.0.0.16/28", "IETF protocol assignments"),
    ("192.0.0.32/27", "IETF protocol assignments"),
    ("192.0.0.64/26", "IETF protocol assignments"),
    ("192.0.0.128/25", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast, deprecated"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "local-use NAT64, never global whatever it embeds"),
    ("100::/64", "discard-only"),
    ("2001::/32", "Teredo, never global whatever it embeds"),
    ("2001::/23", "IETF protocol assignments"),
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "SRv6 segment identifiers"),
    ("fc00::/7", "unique local, private"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local, deprecated"),
    ("ff00::/8", "multicast"),
)
_NON_GLOBAL = tuple((ipaddress.ip_network(net), name) for net, name in NON_GLOBAL_BLOCKS)
_IP = ipaddress.IPv4Address | ipaddress.IPv6Address


def _low_32(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def _sixtofour(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF)


# IPv6 forms that carry an IPv4 address, which a translator, a relay or the dual-stack socket
# delivers the connection to: judged by that address. Teredo (2001::/32) and local-use NAT64
# (64:ff9b:1::/48) are in NON_GLOBAL_BLOCKS whole instead: no public host is addressed there.
# `judged_alone`: the IPv4 address decides (Python calls ::/8 "reserved", which says nothing
# of where the connection lands); else the IPv6 address must be global too.
_Carried = Callable[[ipaddress.IPv6Address], ipaddress.IPv4Address]
EMBEDDING_BLOCKS: tuple[tuple[str, str, _Carried, bool], ...] = (
    ("::ffff:0:0/96", "IPv4-mapped", _low_32, True),
    ("::/96", "IPv4-compatible", _low_32, True),
    ("64:ff9b::/96", "NAT64", _low_32, True),
    ("2002::/16", "6to4", _sixtofour, False),
)
_EMBEDDING = tuple(
    (ipaddress.IPv6Network(net), form, carried, alone)
    for net, form, carried, alone in EMBEDDING_BLOCKS
)


def non_global_block(address: str) -> str | None:
    """What `address` is if it is not a public Internet address (e.g. "loopback", "6to4 of
    shared address space"), else None."""
    ip: _IP = ipaddress.ip_address(address.split("%", 1)[0])
    for network, name in _NON_GLOBAL:
        if ip.version == network.version and ip in network:
            return name
    if isinstance(ip, ipaddress.IPv6Address):
        for v6_block, form, embedded, judged_alone in _EMBEDDING:
            if ip in v6_block:
                if (block := non_global_block(str(embedded(ip)))) is not None:
                    return f"{form} of {block}"
                if judged_alone:
                    return None
                break
    return None if ip.is_global else "not global"


def _first_internal(addresses: Iterable[str]) -> str | None:
    """The first of `addresses` that is not global, with what it is; None if all are."""
    for address in addresses:
        if (block := non_global_block(address)) is not None:
            return f"{address} ({block})"
    return None


def _split_pattern(pattern: str) -> tuple[str, str]:
    """`host`, `host:port`, `host:*`, `[v6]:port` -> (host, port or "")."""
    if pattern.startswith("["):
        name, _, rest = pattern[1:].partition("]")
        return name, rest.removeprefix(":")
    name, sep, port = pattern.rpartition(":")
    return (name, port) if sep else (pattern, "")


def _matches(pattern: str, host: str, port: int, default_port: int) -> bool:
    name, want_port = _split_pattern(pattern)
    if want_port == "*":
        port_ok = True
    elif want_port:
        port_ok = want_port.isdigit() and int(want_port) == port
    else:
        port_ok = port == default_port
    if not port_ok:
        return False
    if name.startswith("*."):
        suffix = name[1:]  # ".s3.amazonaws.com": one or more labels before it
        return host.endswith(suffix) and len(host) > len(suffix)
    return host == name


@dataclass(frozen=True)
class UrlPolicy:
    """The allowlist and the local-stack exemptions; `check` raises UrlRefused or returns."""

    allowed_hosts: tuple[str, ...]
    allow_http: bool = False
    allow_private: bool = False  # IP literals and loopback/private resolution: local stack only
    resolver: Resolver = field(default=resolve_addresses, compare=False, repr=False)

    @classmethod
    def from_patterns(
        cls, patterns: Iterable[str], *, allow_http: bool = False, allow_private: bool = False
    ) -> UrlPolicy:
        """A policy from host patterns (`host`, `*.suffix`, optionally `:port` or `:*`)."""
        cleaned = tuple(p.strip().lower() for p in patterns if p.strip())
        return cls(cleaned, allow_http=allow_http, allow_private=allow_private)

    def check(self, url: str) -> None:
        """Return if `url` may be requested; raise UrlRefused naming the reason and host."""
        self.approve(url)

    def approve(self, url: str) -> Approved:
        """The addresses `url` may be requested at (resolved once); else raise UrlRefused."""
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").lower()
            port = parts.port
        except ValueError as exc:
            raise UrlRefused("the URL cannot be parsed", "?") from exc
        self._check_form(parts, host)
        default_port = _DEFAULT_PORTS[parts.scheme]
        port = port if port is not None else default_port
        if not any(_matches(p, host, port, default_port) for p in self.allowed_hosts):
            raise UrlRefused("the host is not in the allowlist", _shown(host, parts))
        if _is_ip_literal(host):
            if not self.allow_private:
                raise UrlRefused("IP literal hosts are not allowed", host)
            return Approved(host, port, (host,))
        addresses = tuple(self.resolver(host, port))
        if not addresses:
            raise UrlRefused("the host does not resolve", host)
        if not self.allow_private and (internal := _first_internal(addresses)):
            raise UrlRefused(f"the host resolves to internal address {internal}", host)
        return Approved(host, port, addresses)

    def _check_form(self, parts: SplitResult, host: str) -> None:
        shown = host or "?"
        if parts.scheme not in _DEFAULT_PORTS:
            raise UrlRefused(f"scheme {parts.scheme or '(none)'!r} is not allowed", shown)
        if parts.scheme == "http" and not self.allow_http:
            raise UrlRefused("plain http is not allowed", shown)
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            raise UrlRefused("credentials (userinfo) in the URL are not allowed", shown)
        if not host:
            raise UrlRefused("the URL has no host", shown)


def _shown(host: str, parts: SplitResult) -> str:
    return f"{host}:{parts.port}" if parts.port is not None else host


def url_host(url: str) -> str:
    """The host of a URL, control characters escaped: the only part of a presigned URL that
    may be logged or shown."""
    return printable(urlsplit(url).hostname or "?")


def approve_api(
    url: str, *, allow_private: bool = False, resolver: Resolver = resolve_addresses
) -> Approved:
    """The addresses the provider's API at `url` may be called at, resolved now: its host was
    checked when the feed was loaded, so what is left is where it points. An address that is
    not global (`non_global_block`), by name or as a literal, is refused (UrlRefused) unless
    `allow_private` (the local stack); the
    bearer token then goes to the addresses checked and to no later DNS answer."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 443)
    addresses = (host,) if _is_ip_literal(host) else tuple(resolver(host, port))
    if not addresses:
        raise UrlRefused("the host does not resolve", host)
    if not allow_private and (internal := _first_internal(addresses)):
        raise UrlRefused(f"the provider API resolves to internal address {internal}", host)
    return Approved(host, port, addresses)


def check_url(policy: UrlPolicy, url: str) -> Approved:
    """The addresses `url` may be requested at; UrlNotAllowedError (permanent) if none."""
    try:
        return policy.approve(url)
    except UrlRefused as exc:
        raise UrlNotAllowedError(str(exc)) from None

"""The one rule for a URL read from the settings (an environment variable, a feed's field in
the feeds file or an SSM parameter): what makes one unusable, said in a short phrase that
never repeats the URL, since a URL may carry a password or a token.

Checked where the setting is loaded, so a bad value is one line at start, not a traceback
when the first request is made (urllib3 raises ValueError on port 99999 only then).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

PORT_RANGE = (1, 65535)
# A feed's URL fields (provider_base_url, queue_url), as terraform/variables.tf's feed
# validation writes it, character for character (tests/infra/test_feed_rule_parity.py):
# a host name or address, an optional port, an optional path; no credentials, query or
# fragment (the client appends its own), nothing a URL parser could read two ways.
FEED_URL = re.compile(
    r"(?P<scheme>https?)://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?"
)


def url_problem(url: str, schemes: tuple[str, ...], *, query: bool = True) -> str | None:  # noqa: PLR0911 - a reason each
    """What is wrong with `url` as a URL of one of `schemes` ("has no host"), or None.
    `query=False` refuses a query string or fragment too (a base URL the client appends its
    paths to)."""
    if not url:
        return "is empty"
    if any(c.isspace() or not c.isprintable() for c in url):
        return "has spaces or control characters"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "is not a URL"
    try:
        port = parts.port
    except ValueError:
        port = -1  # not a number, or past 65535
    if parts.scheme.lower() not in schemes:
        return "has another scheme" if parts.scheme else "has no scheme"
    if "@" in parts.netloc:
        # requests would send user:password as Basic auth in place of the bearer token.
        return "carries credentials (user:password@ before the host)"
    if not parts.hostname:
        return "has no host"
    if port is not None and not PORT_RANGE[0] <= port <= PORT_RANGE[1]:
        return f"has a port that is not a number from {PORT_RANGE[0]} to {PORT_RANGE[1]}"
    if not query and (parts.query or parts.fragment or url.endswith(("?", "#"))):
        return "has a query string or fragment"
    return None


def provider_url_problem(url: str, *, allow_http: bool) -> str | None:
    """What is wrong with `url` as a provider's base URL (it receives the bearer token), or
    None: https (http only where allowed, the local stub), a host, no credentials, a port in
    range, no query or fragment."""
    return url_problem(url, ("https", "http") if allow_http else ("https",), query=False)


def feed_url_problem(value: object, local: bool) -> str | None:
    """What is wrong with a feed's URL field, or None: the rule above (http only `local`,
    a feeds file), then Terraform's pattern, which a feed from either loader meets alike."""
    if not isinstance(value, str):
        return "is not text"
    problem = provider_url_problem(value, allow_http=local)
    if problem is None and not FEED_URL.fullmatch(value):
        return "has a character outside [A-Za-z0-9.-] in its host, or outside a URL's in its path"
    return problem

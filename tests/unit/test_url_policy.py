"""The URL policy: which provider URLs may be requested, and how each refusal is worded."""

from __future__ import annotations

import socket
from collections.abc import Sequence

import pytest

from dlpipe.domain.url_policy import UrlPolicy, UrlRefused, default_allowed_hosts

SIGNED = "?X-Amz-Signature=deadbeefcafe&X-Amz-Credential=secretcred"
PUBLIC = ["52.216.1.1"]


def resolver_to(addresses: Sequence[str]) -> object:
    """A resolver that answers `addresses` for every host (no DNS in unit tests)."""
    return lambda _host, _port: list(addresses)


def aws(resolves_to: Sequence[str] = PUBLIC, **kwargs: bool) -> UrlPolicy:
    """The AWS default for us-east-1 with the provider API at api.provider.example."""
    hosts = default_allowed_hosts("us-east-1", "https://api.provider.example/v1")
    return UrlPolicy(hosts, resolver=resolver_to(resolves_to), **kwargs)  # type: ignore[arg-type]


def local(**kwargs: bool) -> UrlPolicy:
    """The local stack's explicit exemption: http to the emulator at 127.0.0.1:4566."""
    return UrlPolicy.from_patterns(["127.0.0.1:4566"], **kwargs)


ALLOWED = {
    "virtual-hosted": "https://bucket.s3.us-east-1.amazonaws.com/k",
    "virtual-hosted, dotted bucket": "https://my.bucket.s3.us-east-1.amazonaws.com/k",
    "path-style": "https://s3.us-east-1.amazonaws.com/bucket/k",
    "global virtual-hosted": "https://bucket.s3.amazonaws.com/k",
    "explicit default port": "https://bucket.s3.us-east-1.amazonaws.com:443/k",
    "upper-case host": "https://BUCKET.S3.US-EAST-1.AMAZONAWS.COM/k",
    "provider API host": "https://api.provider.example/files/x",
}


@pytest.mark.parametrize("name", list(ALLOWED))
def test_https_to_an_allowed_public_host_passes(name: str) -> None:
    """Every default S3 host form and the API host pass when they resolve publicly."""
    aws().check(ALLOWED[name] + SIGNED)


REFUSED = {
    "plain http": ("http://bucket.s3.us-east-1.amazonaws.com/k", "plain http is not allowed"),
    "ftp": ("ftp://bucket.s3.us-east-1.amazonaws.com/k", "scheme 'ftp' is not allowed"),
    "file": ("file:///etc/passwd", "scheme 'file' is not allowed"),
    "no scheme": ("//bucket.s3.us-east-1.amazonaws.com/k", r"scheme '\(none\)' is not allowed"),
    "userinfo": ("https://u:p@bucket.s3.us-east-1.amazonaws.com/k", "userinfo"),
    "user only": ("https://u@bucket.s3.us-east-1.amazonaws.com/k", "userinfo"),
    "other region": ("https://bucket.s3.eu-west-1.amazonaws.com/k", "not in the allowlist"),
    "lookalike suffix": ("https://s3.us-east-1.amazonaws.com.evil.example/k", "not in the allowlist"),
    "suffix without label": ("https://.s3.amazonaws.com/k", "not in the allowlist"),
    "other port": ("https://bucket.s3.us-east-1.amazonaws.com:8443/k", "not in the allowlist"),
    "metadata IP": ("https://169.254.169.254/latest/meta-data/", "not in the allowlist"),
    "no host": ("https:///k", "the URL has no host"),
    "bad port": ("https://bucket.s3.amazonaws.com:99999/k", "cannot be parsed"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(REFUSED))
def test_each_malformed_or_foreign_url_is_refused_with_its_reason(name: str) -> None:
    """Scheme, userinfo, host, port and form each have their own named refusal."""
    url, reason = REFUSED[name]
    with pytest.raises(UrlRefused, match=reason) as refused:
        aws().check(url + SIGNED)
    assert "Signature" not in str(refused.value)
    assert "secretcred" not in str(refused.value)


INTERNAL = ["127.0.0.1", "169.254.169.254", "10.0.0.5", "172.16.0.1", "192.168.1.1", "::1"]
INTERNAL += ["fe80::1", "fd00::1", "0.0.0.0", "::ffff:127.0.0.1", "fe80::1%eth0"]


@pytest.mark.parametrize("address", INTERNAL)  # fmt: skip
def test_an_allowed_host_that_resolves_internally_is_refused_on_aws(address: str) -> None:
    """DNS pointing an allowed name at loopback, link-local or private space is refused."""
    policy = aws(resolves_to=["52.216.1.1", address])
    with pytest.raises(UrlRefused, match="resolves to internal address") as refused:
        policy.check(ALLOWED["virtual-hosted"])
    assert refused.value.host == "bucket.s3.us-east-1.amazonaws.com"


def test_internal_resolution_passes_only_where_private_hosts_are_allowed() -> None:
    """The local-stack exemption skips the resolution check."""
    aws(resolves_to=["127.0.0.1"], allow_private=True).check(ALLOWED["path-style"])


def test_the_refusal_names_the_host_and_never_the_query_string() -> None:
    """str(refusal) is `<reason> (host <host>)`."""
    with pytest.raises(UrlRefused) as refused:
        aws().check("http://bucket.s3.us-east-1.amazonaws.com/k" + SIGNED)
    assert (
        str(refused.value) == "plain http is not allowed (host bucket.s3.us-east-1.amazonaws.com)"
    )


def test_the_local_stack_allows_http_to_the_emulator_only_when_told() -> None:
    """http and an IP literal pass only with both exemptions set, and only at the listed port."""
    url = "http://127.0.0.1:4566/bucket/k" + SIGNED
    local(allow_http=True, allow_private=True).check(url)
    with pytest.raises(UrlRefused, match="plain http"):
        local(allow_private=True).check(url)
    with pytest.raises(UrlRefused, match="IP literal hosts are not allowed"):
        local(allow_http=True).check(url)
    with pytest.raises(UrlRefused, match=r"not in the allowlist \(host 127.0.0.1:4567\)"):
        local(allow_http=True, allow_private=True).check("http://127.0.0.1:4567/bucket/k")


def test_patterns_match_any_port_only_when_they_say_so() -> None:
    """`host:*` allows every port; a bare host allows only the scheme's default port."""
    anyport = UrlPolicy.from_patterns(["127.0.0.1:*"], allow_http=True, allow_private=True)
    anyport.check("http://127.0.0.1:1234/x")
    bare = UrlPolicy.from_patterns(["localhost"], allow_http=True, allow_private=True)
    bare.check("http://localhost/x")
    with pytest.raises(UrlRefused, match="not in the allowlist"):
        bare.check("http://localhost:8080/x")


def test_ipv6_literals_follow_the_same_rules() -> None:
    """A bracketed pattern allows an IPv6 literal; without the exemption it is refused."""
    url = "http://[::1]:9000/x"
    UrlPolicy.from_patterns(["[::1]:9000"], allow_http=True, allow_private=True).check(url)
    with pytest.raises(UrlRefused, match="IP literal"):
        UrlPolicy.from_patterns(["[::1]:9000"], allow_http=True).check(url)


def test_the_default_allowlist_is_the_regions_s3_hosts_and_the_api_host() -> None:
    """Region-specific and global S3 forms, and the provider's API host with its port."""
    assert default_allowed_hosts("eu-west-1", "https://api.example:8443/v1") == (
        "*.s3.eu-west-1.amazonaws.com",
        "s3.eu-west-1.amazonaws.com",
        "*.s3.amazonaws.com",
        "s3.amazonaws.com",
        "api.example:8443",
    )
    assert default_allowed_hosts("eu-west-1", None)[-1] == "s3.amazonaws.com"


def test_an_unresolvable_host_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name the system resolver cannot resolve is refused before any request."""

    def fail(*_args: object, **_kwargs: object) -> None:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    policy = UrlPolicy.from_patterns(["nonexistent.invalid"])
    with pytest.raises(UrlRefused, match="does not resolve"):
        policy.check("https://nonexistent.invalid/x")


def test_approve_returns_the_addresses_it_checked_resolving_once() -> None:
    """The download connects to these: one resolution, in the resolver's order, every time."""
    calls: list[str] = []

    def resolver(host: str, _port: int) -> list[str]:
        calls.append(host)
        return ["52.216.1.2", "52.216.1.1"]

    policy = UrlPolicy(("bucket.s3.amazonaws.com",), resolver=resolver)
    approved = policy.approve("https://bucket.s3.amazonaws.com/k" + SIGNED)
    assert (approved.host, approved.port, approved.addresses, calls) == (
        "bucket.s3.amazonaws.com", 443, ("52.216.1.2", "52.216.1.1"), ["bucket.s3.amazonaws.com"],
    )  # fmt: skip
    local_stack = aws(resolves_to=["127.0.0.1"], allow_private=True)
    assert local_stack.approve(ALLOWED["path-style"]).addresses == ("127.0.0.1",)
    assert local(allow_http=True, allow_private=True).approve(
        "http://127.0.0.1:4566/b/k"
    ).addresses == ("127.0.0.1",)
    with pytest.raises(UrlRefused, match="does not resolve"):
        aws(resolves_to=[], allow_private=True).approve(ALLOWED["path-style"])


def test_a_refusal_shows_the_host_escaped_and_bounded() -> None:
    """Control characters in a provider's host become `\\x..` text; a long host is cut."""
    with pytest.raises(UrlRefused) as refused:
        aws().check("https://evil\x1bc\x9b\u202e.example/k")
    assert str(refused.value) == (
        "the host is not in the allowlist (host evil\\x1bc\\x9b\\u202e.example)"
    )
    with pytest.raises(UrlRefused, match="does not resolve") as unresolvable:
        UrlPolicy(("*.s3.amazonaws.com",)).check("https://b\x07.s3.amazonaws.com/k")
    assert "\x07" not in str(unresolvable.value)
    with pytest.raises(UrlRefused) as long:
        aws().check(f"https://{'a' * 5000}.example/k")
    assert len(str(long.value)) < 200
    assert str(long.value).endswith("...)")

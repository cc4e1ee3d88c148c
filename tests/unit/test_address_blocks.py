"""The internal-address rule, block by block, for downloads (UrlPolicy.approve) and the
provider API (approve_api). Names are answered by a fake resolver: nothing is resolved or
connected to here."""

from __future__ import annotations

import ipaddress

import pytest

from dlpipe.domain.url_policy import (
    EMBEDDING_BLOCKS,
    NON_GLOBAL_BLOCKS,
    UrlPolicy,
    UrlRefused,
    approve_api,
    non_global_block,
)

_PUBLIC_V4 = "93.184.216.34"
_PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"


def _refused_everywhere(address: str) -> tuple[str, str]:
    """The refusals of a download URL and of the provider API whose host resolves to
    `address` (a fake resolver), on AWS (no private hosts allowed)."""
    policy = UrlPolicy(("files.vendor.example",), resolver=lambda host, port: [address])
    with pytest.raises(UrlRefused) as download:
        policy.approve("https://files.vendor.example/a.enc?X-Amz-Signature=s")
    with pytest.raises(UrlRefused) as api:
        approve_api("https://api.vendor.example/v1", resolver=lambda host, port: [address])
    return str(download.value), str(api.value)


def _passes_everywhere(address: str) -> None:
    policy = UrlPolicy(("files.vendor.example",), resolver=lambda host, port: [address])
    assert policy.approve("https://files.vendor.example/a.enc").addresses == (address,)
    assert approve_api("https://api.vendor.example/v1", resolver=lambda h, p: [address])


# The addresses the internal-address rule once let through, and their neighbours.
@pytest.mark.parametrize(
    "address",
    [
        "100.64.0.1",  # shared address space (carrier-grade NAT)
        "100.127.255.254",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:a9fe:a9fe::",  # 6to4 of the metadata service
        "2002:a00:1::",  # 6to4 of 10.0.0.1
        "2002:6440:1::",  # 6to4 of 100.64.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata service
        "64:ff9b::6440:1",  # NAT64 of 100.64.0.1
        "64:ff9b:1::5db8:d822",  # local-use NAT64, whatever it embeds
        "2001:0:5db8:d822::1",  # Teredo
        "::ffff:100.64.0.1",  # IPv4-mapped
        "::100.64.0.1",  # IPv4-compatible
        "::ffff:7f00:1",
        "192.0.0.100",  # IETF protocol assignments
        "fec0::1",  # site-local
        "224.0.0.251",  # multicast
        "ff0e::1",
    ],
)
def test_every_non_global_and_embedded_internal_address_is_refused(address: str) -> None:
    download, api = _refused_everywhere(address)
    assert f"internal address {address}" in download
    assert f"internal address {address}" in api


def _inside(network: str) -> str:
    """An address near the end of `network` (past 2001::/23's Teredo part at its start)."""
    net = ipaddress.ip_network(network)
    return str(net[-2] if net.num_addresses > 1 else net[0])


@pytest.mark.parametrize(("network", "name"), NON_GLOBAL_BLOCKS)
def test_each_non_global_block_is_refused_by_name(network: str, name: str) -> None:
    address = _inside(network)
    download, api = _refused_everywhere(address)
    assert f"{address} ({name})" in download
    assert f"{address} ({name})" in api


def _embed(network: str, v4: str) -> str:
    """The address of `network`'s form that carries `v4`."""
    base = int(ipaddress.ip_network(network).network_address)
    carried = int(ipaddress.IPv4Address(v4))
    shift = 80 if network == "2002::/16" else 0  # 6to4 carries it after its 16-bit prefix
    return str(ipaddress.IPv6Address(base | carried << shift))


@pytest.mark.parametrize(("network", "form"), [(row[0], row[1]) for row in EMBEDDING_BLOCKS])
@pytest.mark.parametrize(("v4", "block"), [("127.0.0.1", "loopback"), ("10.1.2.3", "private"),
                                           ("100.64.0.1", "shared address space"),
                                           ("169.254.169.254", "link-local")])  # fmt: skip
def test_each_embedding_block_is_judged_by_the_address_it_carries(
    network: str, form: str, v4: str, block: str
) -> None:
    address = _embed(network, v4)
    download, api = _refused_everywhere(address)
    assert f"({form} of {block}" in download
    assert f"({form} of {block}" in api


@pytest.mark.parametrize(("network", "form"), [(row[0], row[1]) for row in EMBEDDING_BLOCKS])
def test_an_embedding_block_carrying_a_public_address_passes(network: str, form: str) -> None:
    _passes_everywhere(_embed(network, _PUBLIC_V4))


@pytest.mark.parametrize("address", [_PUBLIC_V4, _PUBLIC_V6, "52.216.8.1", "3.5.140.2"])
def test_public_addresses_pass(address: str) -> None:
    _passes_everywhere(address)


def test_the_table_refuses_at_least_what_python_calls_non_global() -> None:
    """Whatever the running Python's `is_global` knows, the rule refuses: one address of
    each block of Python's own tables (and the neighbours of each table row)."""
    samples = [_inside(net) for net, _ in NON_GLOBAL_BLOCKS]
    for constants in ("_IPv4Constants", "_IPv6Constants"):
        networks = getattr(getattr(ipaddress, constants), "_private_networks", [])
        samples += [_inside(str(net)) for net in networks]
    assert len(samples) > len(NON_GLOBAL_BLOCKS)
    for address in samples:
        if not ipaddress.ip_address(address).is_global:
            assert non_global_block(address) is not None, address


def test_a_mixed_answer_is_refused_by_its_internal_address() -> None:
    """One internal address among public ones is enough: the connection may land on it."""
    policy = UrlPolicy(
        ("files.vendor.example",), resolver=lambda host, port: [_PUBLIC_V4, "100.64.1.1"]
    )
    with pytest.raises(
        UrlRefused, match=r"100\.64\.1\.1 \(shared address space, carrier-grade NAT\)"
    ):
        policy.approve("https://files.vendor.example/a.enc")


def test_the_local_stack_exemption_still_allows_internal_addresses() -> None:
    policy = UrlPolicy(
        ("files.vendor.example",), allow_private=True, resolver=lambda host, port: ["100.64.0.1"]
    )
    assert policy.approve("https://files.vendor.example/a.enc").addresses == ("100.64.0.1",)
    approved = approve_api(
        "https://api.vendor.example", allow_private=True, resolver=lambda h, p: ["2002:7f00:1::"]
    )
    assert approved.addresses == ("2002:7f00:1::",)

"""The provider API is called only at addresses checked for that attempt (no request leaves
this process here: a fake resolver answers, and a session that records instead of sending
stands where the connection would be)."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from dlpipe.adapters.pinned_http import PinnedAdapter
from dlpipe.adapters.provider_client import ProviderClient
from dlpipe.domain.provider_errors import ProviderRefusedError, ProviderUnavailableError


class Reached(Exception):
    """A request would have been sent now (with the bearer token)."""


class RecordingSession(requests.Session):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def get(self, url: str | bytes, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.calls.append(str(url))
        raise Reached(url)


def _client(answers: list[list[str]], url: str = "https://api.vendor.example", **kw: Any) -> tuple[ProviderClient, RecordingSession]:  # fmt: skip
    session = RecordingSession()
    pending = list(answers)

    def resolver(host: str, port: int) -> list[str]:
        return pending.pop(0) if len(pending) > 1 else pending[0]

    client = ProviderClient(
        url, "the-token", session=session, resolver=resolver, max_attempts=2,
        initial_wait_s=0.001, max_wait_s=0.002, **kw,
    )  # fmt: skip
    return client, session


@pytest.mark.parametrize(
    "address", ["169.254.169.254", "127.0.0.1", "10.0.0.5", "192.168.1.1", "::1", "fd00::1"]
)
def test_a_provider_host_resolving_to_an_internal_address_gets_no_request(address: str) -> None:
    client, session = _client([[address]])
    with pytest.raises(ProviderRefusedError, match="internal address"):
        client.get_file("accounts", "2026-03-07")
    assert session.calls == []


def test_a_provider_url_on_the_metadata_address_gets_no_request() -> None:
    client, session = _client([["93.184.216.34"]], url="https://169.254.169.254/latest")
    with pytest.raises(ProviderRefusedError, match=r"169\.254\.169\.254"):
        client.list_files("2026-03-07")
    assert session.calls == []


def test_a_public_address_is_pinned_and_called() -> None:
    client, session = _client([["93.184.216.34"]])
    with pytest.raises(Reached):
        client.get_file("accounts", "2026-03-07")
    adapter = session.get_adapter("https://api.vendor.example/")
    assert isinstance(adapter, PinnedAdapter)
    assert adapter._pins == {("api.vendor.example", 443): ("93.184.216.34",)}


def test_a_rebound_name_is_checked_again_on_the_next_attempt() -> None:
    """First attempt public (the call goes out and fails in transport), the retry's answer
    127.0.0.1: refused before the second request, the token never sent there."""
    session = RecordingSession()
    answers = [["93.184.216.34"], ["127.0.0.1"]]

    def get(url: str | bytes, **kwargs: Any) -> requests.Response:
        session.calls.append(str(url))
        raise requests.ConnectionError("reset")

    session.get = get  # type: ignore[method-assign]
    client = ProviderClient(
        "https://api.vendor.example", "the-token", session=session,
        resolver=lambda host, port: answers.pop(0), max_attempts=3,
        initial_wait_s=0.001, max_wait_s=0.002,
    )  # fmt: skip
    with pytest.raises(ProviderRefusedError, match=r"127\.0\.0\.1"):
        client.get_file("accounts", "2026-03-07")
    assert len(session.calls) == 1


def test_a_name_that_does_not_resolve_is_retried_then_unavailable() -> None:
    client, session = _client([[]])
    with pytest.raises(ProviderUnavailableError):
        client.get_file("accounts", "2026-03-07")
    assert session.calls == []


def test_the_local_stack_may_call_a_loopback_provider() -> None:
    client, _ = _client([["127.0.0.1"]], allow_private=True)
    with pytest.raises(Reached):
        client.get_file("accounts", "2026-03-07")

"""Helpers for tests that use the stub provider (fixtures: tests/provider_fixtures.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import requests

from dlpipe.adapters.crypto import PlaintextVerifier, open_decryptor
from dlpipe.adapters.provider_client import ProviderClient

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    from dlpipe.domain.listing import FileDescriptor
    from dlpipe.local.stub.server import StubProvider

# stub_factory's type: (files, faults=None, **StubProvider kwargs) -> a started StubProvider.
StubFactory = Callable[..., "StubProvider"]
TEST_PROVIDER_TOKEN = "test-provider-token-0f9e8d7c6b5a"


def fast_client(
    stub: StubProvider, token: str = TEST_PROVIDER_TOKEN, **kwargs: Any
) -> ProviderClient:
    """A client of `stub` whose retries wait milliseconds, not seconds."""
    kwargs.setdefault("timeout", (2.0, 5.0))
    kwargs.setdefault("initial_wait_s", 0.01)
    kwargs.setdefault("max_wait_s", 0.05)
    kwargs.setdefault("allow_http", True)  # the stub serves plain http on loopback
    kwargs.setdefault("allow_private", True)
    return ProviderClient(stub.base_url, token, **kwargs)


@dataclass(frozen=True)
class Decrypted:
    """Digest and size of a verified plaintext."""

    sha256: str
    size: int


def fetch_and_decrypt(descriptor: FileDescriptor, key: RSAPrivateKey) -> Decrypted:
    """GET the presigned URL and decrypt+verify it; raises the downloader's errors, or HTTPError."""
    decryptor = open_decryptor(key, descriptor.cipher, descriptor.encrypted_key, descriptor.iv)
    verifier = PlaintextVerifier(descriptor.size, descriptor.sha256)
    with requests.get(descriptor.url, stream=True, timeout=30) as response:
        response.raise_for_status()
        for chunk in response.iter_content(chunk_size=1 << 20):
            verifier.update(decryptor.update(chunk))
    verifier.update(decryptor.finalize())
    verifier.verify()
    return Decrypted(verifier.sha256_hex, verifier.byte_count)


def back_after(stub: StubProvider, calls: int, stop: threading.Event) -> threading.Event:
    """A thread that ends the stub's outage once it has answered `calls` calls, every one of
    them a 5xx (the stub counts a call and draws its fault under one lock): the provider comes
    back only after the run has seen it down that often, however slowly the run started.
    Returns the event set when it is back."""
    back = threading.Event()

    def watch() -> None:
        while not stop.wait(0.05):
            if stub.request_count >= calls:
                stub.faults.set(error_rate=0.0)
                back.set()
                return

    threading.Thread(target=watch, daemon=True).start()
    return back

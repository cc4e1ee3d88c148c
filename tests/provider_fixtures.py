"""Reusable provider fixtures: an RSA key pair, a bearer token, running stub providers.

Load them in a test module with `pytest_plugins = ["tests.provider_fixtures"]` (tests/conftest.py
belongs to the session's lead); helpers to use with them are in tests/provider_support.py.

`stub_factory(files, faults=None, **StubProvider kwargs)` starts a StubProvider on 127.0.0.1
against the session emulator, under a key prefix of its own, and stops and purges it after
the test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.crypto import load_private_key
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from dlpipe.local.stub.server import StubProvider
from tests.provider_support import TEST_PROVIDER_TOKEN, StubFactory

__all__ = ["StubFactory", "private_key", "provider_token", "rsa_keypair", "stub_factory"]


@pytest.fixture(scope="session")
def rsa_keypair() -> tuple[bytes, bytes]:
    """(private PEM, public PEM) shared by the session: the stub wraps keys with the public half."""
    return generate_rsa_keypair()


@pytest.fixture(scope="session")
def private_key(rsa_keypair: tuple[bytes, bytes]) -> RSAPrivateKey:
    """The private half, loaded the way the downloader loads it."""
    return load_private_key(rsa_keypair[0])


@pytest.fixture(scope="session")
def provider_token() -> str:
    """The bearer token every stub expects."""
    return TEST_PROVIDER_TOKEN


@pytest.fixture
def stub_factory(
    clients: AwsClients, rsa_keypair: tuple[bytes, bytes], provider_token: str
) -> Iterator[StubFactory]:
    """Start stubs with given specs and faults; each is stopped and its objects deleted after."""
    started: list[StubProvider] = []

    def make(
        files: Sequence[StubFileSpec], faults: Faults | None = None, **kwargs: Any
    ) -> StubProvider:
        kwargs.setdefault("key_prefix", f"{uuid.uuid4().hex[:12]}/")
        stub = StubProvider(clients, rsa_keypair[1], provider_token, files, faults=faults, **kwargs)
        stub.start()
        started.append(stub)
        return stub

    yield make
    for stub in started:
        stub.stop()
        stub.purge()

"""On AWS the downloader takes the provider's bearer token from Secrets Manager, on first use."""

from __future__ import annotations

import uuid

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.bootstrap.download import provider_factory
from dlpipe.config import Settings
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.provider_errors import ProviderAuthError
from dlpipe.local.stub.publish import StubFileSpec
from tests.integration.test_downloader_kit import DAY, StubFactory
from tests.provider_support import TEST_PROVIDER_TOKEN

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # stub_factory


def test_the_downloaders_provider_client_authenticates_with_the_secrets_token(
    clients: AwsClients, stub_factory: StubFactory, entity: str
) -> None:
    """With DLPIPE_PROVIDER_TOKEN_SECRET set, a URL refresh is authorized by the secret's token."""
    stub = stub_factory([StubFileSpec(entity, 1024, CIPHER_GCM)])
    name = f"dlpipe-test/provider-token-{uuid.uuid4().hex[:8]}"
    clients.secretsmanager.create_secret(Name=name, SecretString=TEST_PROVIDER_TOKEN)
    settings = Settings(
        provider_base_url=stub.base_url,
        provider_token_secret_id=name,
        allow_http_urls=True,
        allow_private_url_hosts=True,  # the stub on 127.0.0.1, as the local stack allows it
    )
    build = provider_factory(settings, clients)
    assert build is not None
    assert build().get_file(entity, DAY).entity == entity


def test_a_token_rotated_in_its_secret_is_read_again_after_the_provider_refuses_the_old_one(
    clients: AwsClients, stub_factory: StubFactory, entity: str
) -> None:
    """A 401 on a URL refresh reads the secret again (bounded: here every time) and retries
    once; until the secret changes the refusal stands, one line naming no token."""
    stub = stub_factory([StubFileSpec(entity, 1024, CIPHER_GCM)])
    name = f"dlpipe-test/provider-token-{uuid.uuid4().hex[:8]}"
    clients.secretsmanager.create_secret(Name=name, SecretString="revoked-token")
    settings = Settings(
        provider_base_url=stub.base_url,
        provider_token_secret_id=name,
        allow_http_urls=True,
        allow_private_url_hosts=True,
        secret_reread_seconds=0,
    )
    build = provider_factory(settings, clients)
    assert build is not None
    signer = build()
    with pytest.raises(ProviderAuthError) as refused:
        signer.get_file(entity, DAY)
    assert "revoked-token" not in str(refused.value)
    clients.secretsmanager.put_secret_value(SecretId=name, SecretString=TEST_PROVIDER_TOKEN)
    assert signer.get_file(entity, DAY).entity == entity  # the same signer, the new token

"""Our RSA private key from Secrets Manager (on the emulator) or a file, loaded once per process."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlpipe.adapters import keys
from dlpipe.adapters.aws import AwsClients
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.download_errors import InvalidPrivateKeyError
from dlpipe.local.stub.crypto import load_public_key

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.provider_fixtures"]  # rsa_keypair


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    """Each test starts (and leaves) with no key cached."""
    keys.clear_cache()
    yield
    keys.clear_cache()


def test_the_secret_string_pem_is_loaded_and_cached(
    clients: AwsClients, rsa_keypair: tuple[bytes, bytes]
) -> None:
    """A PEM SecretString becomes the key; a second call does not read the secret again."""
    name = f"dlpipe-test-key-{uuid.uuid4().hex[:8]}"
    clients.secretsmanager.create_secret(Name=name, SecretString=rsa_keypair[0].decode())
    settings = Settings(private_key_secret_id=name)
    key = keys.private_key_from_settings(settings, clients)
    clients.secretsmanager.delete_secret(SecretId=name, ForceDeleteWithoutRecovery=True)
    assert keys.private_key_from_settings(settings, clients) is key
    public = key.public_key().public_numbers()
    assert public == load_public_key(rsa_keypair[1]).public_numbers()


def test_a_pem_file_is_loaded_when_no_secret_is_configured(
    clients: AwsClients, rsa_keypair: tuple[bytes, bytes], tmp_path: Path
) -> None:
    """DLPIPE_PRIVATE_KEY_FILE serves local runs."""
    path = tmp_path / "key.pem"
    path.write_bytes(rsa_keypair[0])
    key = keys.private_key_from_settings(Settings(private_key_file=str(path)), clients)
    assert key.key_size == 2048


def test_no_key_configured_is_a_config_error(clients: AwsClients) -> None:
    """Neither a secret nor a file: ConfigError naming both variables."""
    with pytest.raises(ConfigError, match="DLPIPE_PRIVATE_KEY_SECRET"):
        keys.private_key_from_settings(Settings(), clients)


def test_a_file_that_is_not_a_key_is_refused(clients: AwsClients, tmp_path: Path) -> None:
    """Garbage in the key file: InvalidPrivateKeyError, whose message echoes none of it."""
    path = tmp_path / "key.pem"
    path.write_text("not a key at all")
    with pytest.raises(InvalidPrivateKeyError) as refused:
        keys.private_key_from_settings(Settings(private_key_file=str(path)), clients)
    assert "not a key at all" not in str(refused.value)

"""The whole local stack for one run: emulator, provisioned resources, keys and secrets."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.keys import clear_cache as clear_key_cache
from dlpipe.config import Settings
from dlpipe.local.emulator import LocalAws
from dlpipe.local.provision import Provisioned, provision
from dlpipe.local.stub.crypto import generate_rsa_keypair


@dataclass(frozen=True)
class LocalStack:
    """A running, provisioned emulator and the settings every component uses against it."""

    emulator: LocalAws
    clients: AwsClients
    provisioned: Provisioned
    settings: Settings
    public_key_pem: bytes
    provider_token: str


def settings_for(provisioned: Provisioned, base: Settings) -> Settings:
    """`base` pointed at what `provision` created."""
    return replace(
        base,
        jobs_table=provisioned.jobs_table,
        batches_table=provisioned.batches_table,
        queue_url=provisioned.queue_url,
        dlq_url=provisioned.dlq_url,
        destination_bucket=provisioned.destination_bucket,
        private_key_secret_id=provisioned.private_key_secret,
        provider_token_secret_id=provisioned.provider_token_secret,
        large_queue_url=provisioned.large_queue_url,
    )


@contextmanager
def local_stack(port: int = 0, log_dir: str | None = None) -> Iterator[LocalStack]:
    """Start and provision the local AWS (moto + DynamoDB Local), store a fresh RSA key pair and
    provider token in its Secrets Manager, and stop both children (by PID) on exit."""
    emulator = LocalAws(port=port, log_dir=log_dir)
    emulator.start()
    saved = {k: os.environ.get(k) for k in emulator.environment()}
    try:
        os.environ.update(emulator.environment())
        clients = AwsClients(Settings.from_env())
        provisioned = provision(clients)
        private_pem, public_pem = generate_rsa_keypair()
        token = secrets.token_urlsafe(32)
        for secret_id, value in (
            (provisioned.private_key_secret, private_pem.decode()),
            (provisioned.provider_token_secret, token),
        ):
            if secret_id:
                clients.secretsmanager.put_secret_value(SecretId=secret_id, SecretString=value)
        # A new key under the secret ID an earlier stack of this process used: forget what the
        # key cache read then, or this stack's workers would decrypt with that key.
        clear_key_cache()
        settings = settings_for(provisioned, Settings.from_env())
        yield LocalStack(emulator, clients, provisioned, settings, public_pem, token)
    finally:
        emulator.stop()
        for key, previous in saved.items():
            if previous is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = previous

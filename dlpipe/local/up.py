"""`dlpipe local up`'s stack: the emulator, provisioned, and a stub provider with its own key
pair and token, plus every variable another shell needs to run workers and days against it."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from dlpipe.adapters.aws import AwsClients
from dlpipe.config import (
    ENV_BATCHES_TABLE,
    ENV_DEST_BUCKET,
    ENV_DLQ_URL,
    ENV_JOBS_TABLE,
    ENV_LARGE_QUEUE_URL,
    ENV_LEASE_SECONDS,
    ENV_MAX_POLLS,
    ENV_POLL_INTERVAL_SECONDS,
    ENV_PRIVATE_KEY_FILE,
    ENV_PROVIDER_TOKEN,
    ENV_PROVIDER_URL,
    ENV_QUEUE_URL,
    ENV_RESEND_AFTER_SECONDS,
    Settings,
)
from dlpipe.local.emulator import LocalAws
from dlpipe.local.provision import Provisioned, provision
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.local.stub.publish import default_day
from dlpipe.local.stub.server import StubProvider

# A day on the local stack lasts minutes: checks every 5 s, and recovery scaled to fit the
# polling window (build_flow refuses a window shorter than the recovery bound + one lease).
LOCAL_POLLING = {
    ENV_POLL_INTERVAL_SECONDS: "5",
    ENV_MAX_POLLS: "120",
    ENV_LEASE_SECONDS: "30",
    ENV_RESEND_AFTER_SECONDS: "30",
}
PRIVATE_KEY_NAME = "provider-rsa-private.pem"
PUBLIC_KEY_NAME = "provider-rsa-public.pem"


@dataclass(frozen=True)
class StubOptions:
    """The stub provider of `local up`: its port, the day it publishes, where its keys go."""

    date: str
    files: int = 20
    port: int = 0
    key_dir: Path = field(default_factory=lambda: Path(".dlpipe") / "local-up")


@dataclass(frozen=True)
class LocalUp:
    """What is running, and the environment that uses it."""

    emulator: LocalAws
    clients: AwsClients
    provisioned: Provisioned
    environment: dict[str, str]
    stub_url: str | None = None


def write_key_pair(folder: Path) -> tuple[Path, bytes]:
    """A fresh RSA key pair in `folder`: the private PEM readable by its owner only (0600),
    and the public PEM; returns the private key's path and the public PEM."""
    folder.mkdir(parents=True, exist_ok=True)
    private_pem, public_pem = generate_rsa_keypair()
    private_path = folder / PRIVATE_KEY_NAME
    private_path.unlink(missing_ok=True)
    # Created with 0600, never readable by others even for an instant.
    descriptor = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as private_file:
        private_file.write(private_pem)
    (folder / PUBLIC_KEY_NAME).write_bytes(public_pem)
    return private_path, public_pem


def provisioned_environment(emulator: LocalAws, provisioned: Provisioned) -> dict[str, str]:
    """The variables a second shell sets to use the provisioned emulator."""
    env = emulator.environment()
    for key, value in (
        (ENV_JOBS_TABLE, provisioned.jobs_table),
        (ENV_BATCHES_TABLE, provisioned.batches_table),
        (ENV_QUEUE_URL, provisioned.queue_url),
        (ENV_DLQ_URL, provisioned.dlq_url),
        (ENV_DEST_BUCKET, provisioned.destination_bucket),
        (ENV_LARGE_QUEUE_URL, provisioned.large_queue_url),
    ):
        if value:
            env[key] = value
    return env


@contextmanager
def local_up(
    port: int, dynamodb_port: int, stub: StubOptions | None, log_dir: str | None = None
) -> Iterator[LocalUp]:
    """Start and provision the emulator and, unless `stub` is None, a stub provider that has
    published `stub.date`; stop all of it (children by PID) on exit."""
    with ExitStack() as stack:
        emulator = stack.enter_context(
            LocalAws(port=port, dynamodb_port=dynamodb_port, log_dir=log_dir)
        )
        os.environ.update(emulator.environment())
        clients = AwsClients(Settings.from_env())
        provisioned = provision(clients)
        env = provisioned_environment(emulator, provisioned)
        stub_url = None
        if stub is not None:
            key_path, public_pem = write_key_pair(stub.key_dir)
            token = secrets.token_urlsafe(32)
            provider = StubProvider(
                clients, public_pem, token, default_day(stub.files), port=stub.port
            )
            stub_url = stack.enter_context(provider).base_url
            provider.publish(stub.date)
            env.update(
                {
                    ENV_PROVIDER_URL: stub_url,
                    ENV_PROVIDER_TOKEN: token,
                    ENV_PRIVATE_KEY_FILE: str(key_path.resolve()),
                    **LOCAL_POLLING,
                }
            )
        yield LocalUp(emulator, clients, provisioned, env, stub_url)

"""`dlpipe local up`'s stack: the emulator, provisioned, and a stub provider per feed, each with
its own key pair and token, plus every variable another shell needs to run workers and days
against it (each named feed's stub URL, key and token in its SSM parameter in the emulator,
under DLPIPE_FEEDS_PARAMETER_PATH, as on AWS)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.feed_parameters import publish_feeds
from dlpipe.config import (
    ENV_BATCHES_TABLE,
    ENV_DEST_BUCKET,
    ENV_DLQ_URL,
    ENV_FEEDS_PARAMETER_PATH,
    ENV_JOBS_TABLE,
    ENV_LARGE_QUEUE_URL,
    ENV_LEASE_SECONDS,
    ENV_LOG_LEVEL,
    ENV_MAX_POLLS,
    ENV_POLL_INTERVAL_SECONDS,
    ENV_PRIVATE_KEY_FILE,
    ENV_PROVIDER_TOKEN,
    ENV_PROVIDER_URL,
    ENV_QUEUE_URL,
    ENV_RESEND_AFTER_SECONDS,
    Settings,
)
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.local.emulator import EmulatorError, LocalAws
from dlpipe.local.provision import Provisioned, provision, provision_feed_queue
from dlpipe.local.stack_feeds import (
    FeedKeys,
    FeedTables,
    effective_feeds,
    named_feed_keys,
    numbered_feeds,
    store_feed_secrets,
    write_key_pair,
)
from dlpipe.local.stub.publish import default_day
from dlpipe.local.stub.server import StubProvider
from dlpipe.log import configure_logging, logging_config, restore_logging

# A day on the local stack lasts minutes: checks every 5 s, and recovery scaled to fit the
# polling window (build_flow refuses a window shorter than the recovery bound + one lease).
LOCAL_POLLING = {
    ENV_POLL_INTERVAL_SECONDS: "5",
    ENV_MAX_POLLS: "120",
    ENV_LEASE_SECONDS: "30",
    ENV_RESEND_AFTER_SECONDS: "30",
}
# In the stack's folder (StubOptions.key_dir): the JSON log lines of this process, the stub
# providers' (started, published, each request at DEBUG, stopped), kept off local up's terminal.
STUB_LOG = "stub.log"


@dataclass(frozen=True)
class StubOptions:
    """The stub provider of `local up`: its port, the day it publishes, where its keys go."""

    date: str
    files: int = 20
    port: int = 0  # the default feed's stub; the others' are free ports
    key_dir: Path = field(default_factory=lambda: Path(".dlpipe") / "local-up")
    feeds: int = 1  # the default feed, then feed-2 .. feed-N (dlpipe/local/stack_feeds.py)
    # A hand-written feeds template (`local up --feeds-file`, read_template's): its feeds
    # instead of the numbered ones; the default feed is served whether it names it or not.
    tables: FeedTables | None = None

    def feed_tables(self) -> FeedTables:
        """The feeds served, the default feed first."""
        if self.tables is None:
            return numbered_feeds(self.feeds)
        return {DEFAULT_FEED_NAME: self.tables.get(DEFAULT_FEED_NAME, {}), **self.tables}


@dataclass(frozen=True)
class LocalUp:
    """What is running, and the environment that uses it."""

    emulator: LocalAws
    clients: AwsClients
    provisioned: Provisioned
    environment: dict[str, str]
    stub_url: str | None = None
    stub_urls: dict[str, str] = field(default_factory=dict)  # per feed
    stub_log: Path | None = None  # where the stub providers log (STUB_LOG), with a stub


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


class StackInUseError(EmulatorError):
    """Another `local up` of this checkout is running: its key files must not be rewritten."""


_PID_FILE = "stack.pid"


@contextmanager
def holding(key_dir: Path) -> Iterator[None]:
    """`key_dir` for this process alone while the stack runs: a second `local up` would write
    fresh key pairs over the first's, and every file of the first stack's next day would fail
    `wrong_key`. A PID file left by a process that is gone (killed) is taken over."""
    key_dir.mkdir(parents=True, exist_ok=True)
    pid_file = key_dir / _PID_FILE
    for _ in range(2):
        try:
            with pid_file.open("x") as handle:
                handle.write(str(os.getpid()))
            break
        except FileExistsError:
            holder = _live_holder(pid_file)
            if holder is not None:
                raise StackInUseError(
                    f"another `dlpipe local up` (PID {holder}) holds {key_dir}: stop it first"
                    " (its key files would be rewritten and its days fail wrong_key)"
                ) from None
            pid_file.unlink(missing_ok=True)
    else:
        raise StackInUseError(f"{pid_file} could not be created")
    try:
        yield
    finally:
        pid_file.unlink(missing_ok=True)


def _live_holder(pid_file: Path) -> int | None:
    """The PID in `pid_file` if that process still runs; None for a stale or unreadable file."""
    try:
        pid = int(pid_file.read_text(encoding="ascii").strip())
        os.kill(pid, 0)
    except PermissionError:
        return pid  # alive, another user's
    except (ValueError, OSError):
        return None  # no such process (or not a PID): stale
    return pid


@contextmanager
def local_up(
    port: int, dynamodb_port: int, stub: StubOptions | None, log_dir: str | None = None
) -> Iterator[LocalUp]:
    """Start and provision the emulator and, unless `stub` is None, a stub provider that has
    published `stub.date`; stop all of it (children by PID) on exit."""
    with ExitStack() as stack:
        stub_log = None
        if stub is not None:
            stack.enter_context(holding(stub.key_dir))
            # Entered before the stubs start, so left after they stopped: their last line too.
            stub_log = stack.enter_context(_logging_to(stub.key_dir / STUB_LOG))
        emulator = stack.enter_context(
            LocalAws(port=port, dynamodb_port=dynamodb_port, log_dir=log_dir)
        )
        os.environ.update(emulator.environment())
        clients = AwsClients(Settings.from_env())
        provisioned = provision(clients)
        env = provisioned_environment(emulator, provisioned)
        stub_urls: dict[str, str] = {}
        if stub is not None:
            stub_urls = _serve_stubs(stack, clients, stub, env, emulator.endpoint_url, provisioned)
        yield LocalUp(
            emulator,
            clients,
            provisioned,
            env,
            stub_urls.get(DEFAULT_FEED_NAME),
            stub_urls,
            stub_log,
        )


@contextmanager
def _logging_to(path: Path) -> Iterator[Path]:
    """This process's JSON log lines go to `path` (written afresh by each stack; opened only
    once `holding` has the folder, so a second stack refused never touches the first's), at
    DLPIPE_LOG_LEVEL; the logging configuration before is put back on exit."""
    before = logging_config()
    with path.open("w", encoding="utf-8") as stream:
        configure_logging(os.environ.get(ENV_LOG_LEVEL) or "INFO", stream=stream)
        try:
            yield path
        finally:
            restore_logging(before)


def _serve_stubs(  # noqa: PLR0917 (one private helper of local_up, called once)
    stack: ExitStack,
    clients: AwsClients,
    stub: StubOptions,
    env: dict[str, str],
    aws_url: str,
    provisioned: Provisioned,
) -> dict[str, str]:
    """One stub per feed, each with its own key pair and token, having published `stub.date`;
    the default feed's provider in `env`, the others in their SSM parameters."""
    tables = stub.feed_tables()
    key_path, public_pem = write_key_pair(stub.key_dir)
    keys = {DEFAULT_FEED_NAME: FeedKeys(public_pem, key_path, secrets.token_urlsafe(32))}
    keys |= {name: named_feed_keys(stub.key_dir / "feeds" / name) for name in list(tables)[1:]}
    urls: dict[str, str] = {}
    for seed, (name, feed_keys) in enumerate(keys.items()):
        provider = StubProvider(
            clients,
            feed_keys.public_key_pem,
            feed_keys.token,
            default_day(stub.files),
            port=stub.port if name == DEFAULT_FEED_NAME else 0,
            seed=seed,
            key_prefix="" if name == DEFAULT_FEED_NAME else f"{name}/",
            feed=name,
        )
        urls[name] = stack.enter_context(provider).base_url
        provider.publish(stub.date)
    env.update(
        {
            ENV_PROVIDER_URL: urls[DEFAULT_FEED_NAME],
            ENV_PROVIDER_TOKEN: keys[DEFAULT_FEED_NAME].token,
            ENV_PRIVATE_KEY_FILE: str(key_path.resolve()),
            **LOCAL_POLLING,
        }
    )
    if len(tables) > 1:
        # Each named feed as an SSM parameter in the emulator, as Terraform writes it on AWS.
        path = str(provisioned.feeds_parameter_path)
        stored = {name: store_feed_secrets(clients, name, keys[name]) for name in list(tables)[1:]}
        queues = {name: provision_feed_queue(clients, name) for name in list(tables)[1:]}
        feeds = effective_feeds(tables, stored, urls, (urlsplit(aws_url).netloc,), queues)
        publish_feeds(clients.ssm, path, feeds)
        env[ENV_FEEDS_PARAMETER_PATH] = path
    return urls

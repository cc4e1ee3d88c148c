"""What the download service needs, injected: stores, clients, decryption and the tuning."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.url_policy import UrlPolicy
from dlpipe.services.download.ports import Decryption, Destination, JobLeases, Source, UrlSigner
from dlpipe.services.download.transfer import TransferTuning


def no_pause(point: str, file_id: str) -> None:
    """The production pause hook: nothing happens at a named point."""


def key_at_hand() -> None:
    """A key given as it is (tests, benchmarks): always at hand."""


def default_owner_prefix() -> str:
    """host:pid, the stable part of every claim owner id this process writes."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class ServiceDeps:
    """Everything DownloadService uses (wired by dlpipe.bootstrap.download); `stop` set means:
    release current work and return."""

    jobs: JobLeases
    destination: Destination
    source: Source
    decryption: Decryption  # our private key at work
    provider: Callable[[], UrlSigner] | None
    lease_seconds: int
    # Checked before every request to a provider URL, redirects and refreshed URLs included.
    url_policy: UrlPolicy
    tuning: TransferTuning = field(default_factory=TransferTuning)
    stop: threading.Event = field(default_factory=threading.Event)
    owner_prefix: str = field(default_factory=default_owner_prefix)
    clock: Clock = field(default_factory=SystemClock)
    # Called at named points of a file's processing (`received`, `claimed`, `published`); the
    # chaos tests' workers get a pauser there from the dev kit (dlpipe.local.testpoints).
    pause: Callable[[str, str], None] = no_pause
    # The feed whose jobs these parts serve: its key (decryption), provider, allowlist and
    # destination prefix ("" for the default feed: the bucket's root).
    feed: str = DEFAULT_FEED_NAME
    destination_prefix: str = ""
    # Called before this feed's job is looked at: DependencyUnavailableError while its key
    # cannot be read yet (Secrets Manager down when the process started: adapters/keys.py),
    # so the job is not claimed; a PermanentError when the key read is not one.
    key_ready: Callable[[], object] = key_at_hand

"""What the download service needs, injected: stores, clients, the key and the tuning."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import requests
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.adapters.url_policy import UrlPolicy
from dlpipe.domain.clock import Clock, SystemClock
from dlpipe.services.download.transfer import TransferTuning

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from dlpipe.domain.listing import FileDescriptor


class UrlSigner(Protocol):
    """The provider, as far as the downloader needs it: a freshly signed URL for one file."""

    def get_file(self, entity: str, date: str) -> FileDescriptor:
        """The file's descriptor with a fresh presigned URL."""
        ...


def default_owner_prefix() -> str:
    """host:pid, the stable part of every claim owner id this process writes."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class ServiceDeps:
    """Everything DownloadService uses; `stop` set means: release current work and return."""

    jobs: JobsTable
    s3: S3Client
    bucket: str
    private_key: RSAPrivateKey = field(repr=False)
    provider: Callable[[], UrlSigner] | None
    lease_seconds: int
    # Checked before every request to a provider URL, redirects and refreshed URLs included.
    url_policy: UrlPolicy
    tuning: TransferTuning = field(default_factory=TransferTuning)
    stop: threading.Event = field(default_factory=threading.Event)
    owner_prefix: str = field(default_factory=default_owner_prefix)
    clock: Clock = field(default_factory=SystemClock)
    # One session per file: requests does not promise that a Session is thread-safe.
    http_session: Callable[[], requests.Session] = requests.Session

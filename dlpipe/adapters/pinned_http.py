"""HTTP connections to the addresses the URL policy approved, never to a second DNS answer.

requests resolves a URL's host again when it connects. Between the policy's check and that
connection the name's answer can change (DNS rebinding: a public address to the check,
127.0.0.1 to the connection). The adapter here connects to the addresses the policy checked
instead, while the URL, the Host header, TLS SNI and certificate verification keep the host
name. A host nobody pinned is not connected to at all.

A pinned session ignores the environment's proxies (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY):
asked for the provider's host, a proxy would resolve the name itself and connect wherever
its answer points, past the check. It ignores ~/.netrc as well (requests would send its
password as Basic auth); REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE still name the CA bundle.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.exceptions import ConnectTimeoutError, LocationValueError, NewConnectionError
from urllib3.poolmanager import PoolManager
from urllib3.util.connection import create_connection

from dlpipe.domain.url_policy import Approved
from dlpipe.log import get_logger

_PROXY_VARIABLES = ("https_proxy", "http_proxy", "all_proxy")
_told_lock = threading.Lock()
_told: list[str] = []  # the proxy variables already logged as ignored, once per process

_Pins = dict[tuple[str, int], tuple[str, ...]]


def _key(host: str, port: int) -> tuple[str, int]:
    return host.strip("[]").lower(), port  # urllib3 keeps an IPv6 literal's brackets


def _connect(conn: HTTPConnection, addresses: tuple[str, ...]) -> socket.socket:
    """A socket to the first of `addresses` that answers; urllib3's own errors otherwise."""
    error: Exception = NewConnectionError(conn, "no approved address to connect to")
    for address in addresses:
        try:
            return create_connection(
                (address, conn.port),
                conn.timeout,
                source_address=conn.source_address,
                socket_options=conn.socket_options,
            )
        except TimeoutError:
            error = ConnectTimeoutError(
                conn, f"Connection to {conn.host} timed out. (connect timeout={conn.timeout})"
            )
        except OSError as exc:
            error = NewConnectionError(conn, f"Failed to establish a new connection: {exc}")
    raise error


class _PinnedHTTPConnection(HTTPConnection):
    def __init__(self, *args: Any, pinned: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pinned = pinned

    def _new_conn(self) -> socket.socket:
        return _connect(self, self._pinned)


class _PinnedHTTPSConnection(HTTPSConnection):
    # `host` stays the name: the TLS handshake sends it as SNI and checks the certificate for it.
    def __init__(self, *args: Any, pinned: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pinned = pinned

    def _new_conn(self) -> socket.socket:
        return _connect(self, self._pinned)


class _PinnedPoolManager(PoolManager):
    def __init__(self, pins: _Pins, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._pins = pins

    def _new_pool(
        self, scheme: str, host: str, port: int, request_context: dict[str, Any] | None = None
    ) -> HTTPConnectionPool:
        addresses = self._pins.get(_key(host, port))
        if not addresses:
            raise LocationValueError(f"{host}:{port} was not approved by the URL policy")
        pool = super()._new_pool(scheme, host, port, request_context)
        pool.ConnectionCls = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
        pool.conn_kw["pinned"] = addresses
        return pool


class PinnedAdapter(HTTPAdapter):
    """requests' adapter, connecting each host:port only to the addresses `pin` gave it."""

    def __init__(self) -> None:
        self._pins: _Pins = {}
        super().__init__()

    def pin(self, approved: Approved) -> None:
        """Connect `approved.host:port` to `approved.addresses` from now on."""
        key = _key(approved.host, approved.port)
        if self._pins.get(key) != approved.addresses:
            self._pins[key] = approved.addresses
            self.poolmanager.clear()  # a pool made for older addresses is not reused

    def init_poolmanager(
        self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any
    ) -> None:
        """requests' pool manager, with pinned connections (called by HTTPAdapter.__init__)."""
        self._pool_connections, self._pool_maxsize, self._pool_block = connections, maxsize, block
        self.poolmanager = _PinnedPoolManager(
            self._pins, num_pools=connections, maxsize=maxsize, block=block, **pool_kwargs
        )


def pinning(session: requests.Session) -> PinnedAdapter:
    """The session's pinning adapter for http and https, mounted on first use; the session
    then reads no proxy or netrc from the environment."""
    session.trust_env = False
    adapter = session.get_adapter("https://")
    if isinstance(adapter, PinnedAdapter):
        return adapter
    if session.verify is True:  # what trust_env would have read, the CA bundle only
        session.verify = (
            os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        )
    _say_proxy_ignored()
    adapter = PinnedAdapter()
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return adapter


def _say_proxy_ignored() -> None:
    """One log line per process when the environment names a proxy this traffic ignores."""
    names = sorted(n for n, v in os.environ.items() if n.lower() in _PROXY_VARIABLES and v)
    with _told_lock:
        if not names or _told:
            return
        _told.extend(names)
    get_logger(component="dlpipe.adapters.pinned_http").warning(
        "http.environment_proxy_ignored",
        variables=names,
        detail="provider and download traffic connects directly to the addresses the URL"
        " policy checked; AWS SDK traffic may still use the proxy",
    )

"""A download connects to the address the URL policy approved, never to a second DNS answer.

The resolver seam is socket.getaddrinfo itself, the call both the policy and urllib3 make: a
name that answers a public address first and 127.0.0.1 next (DNS rebinding) must not let the
request reach the real server listening on 127.0.0.1.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from dlpipe.adapters.source import HttpSource
from dlpipe.domain.download_errors import SourceUnavailableError
from dlpipe.domain.url_policy import UrlPolicy

PUBLIC = "52.216.1.1"
NAME = "bucket.rebind.example"
BODY = b"the object"
_real_getaddrinfo = socket.getaddrinfo


class Server:
    """A plain-HTTP server on 127.0.0.1 recording each request's path and Host header."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((self.path, self.headers.get("Host", "")))
                self.send_response(200)
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                self.wfile.write(BODY)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class Dns:
    """getaddrinfo answering `answers[name]` in turn (the last one repeats); every call is
    recorded, and connecting to `unreachable` fails at once (no packet leaves the machine)."""

    def __init__(self, answers: dict[str, list[str]], unreachable: str = PUBLIC) -> None:
        self.answers, self.unreachable = answers, unreachable
        self.calls: list[str] = []

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(str(host))
        if host == self.unreachable:
            raise OSError(101, "Network is unreachable (test)")
        if host in self.answers:
            queue = self.answers[host]
            address = queue.pop(0) if len(queue) > 1 else queue[0]
            return _real_getaddrinfo(address, port, *args, **kwargs)
        return _real_getaddrinfo(host, port, *args, **kwargs)


@pytest.fixture
def server() -> Iterator[Server]:
    """The loopback server a rebinding name points to on its second answer."""
    with Server() as running:
        yield running


def fetch(url: str, policy: UrlPolicy, session: Callable[[], requests.Session]) -> bytes:
    """The object at `url` through the downloader's source."""
    with HttpSource(session).open(url, chunk_bytes=100, timeout_s=(2, 2), policy=policy) as body:
        return b"".join(body)


def test_a_name_that_rebinds_to_loopback_after_the_check_is_never_requested(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Public to the check, 127.0.0.1 to the connection: the loopback server gets no request."""
    dns = Dns({NAME: [PUBLIC, "127.0.0.1"]})
    monkeypatch.setattr(socket, "getaddrinfo", dns)
    policy = UrlPolicy.from_patterns([f"{NAME}:*"], allow_http=True)
    with pytest.raises(SourceUnavailableError, match=f"contacting {NAME}"):
        fetch(f"http://{NAME}:{server.port}/key?X-Amz-Signature=abc", policy, requests.Session)
    assert server.requests == [], f"the rebound address was contacted: {server.requests}"
    assert dns.calls == [NAME, PUBLIC], "the name is resolved once; the approved address is used"


def test_the_pinned_request_keeps_the_host_name_in_its_host_header(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connecting to the approved address, the request still names the host (virtual hosting)."""
    dns = Dns({NAME: ["127.0.0.1", PUBLIC]})
    monkeypatch.setattr(socket, "getaddrinfo", dns)
    policy = UrlPolicy.from_patterns([f"{NAME}:*"], allow_http=True, allow_private=True)
    assert fetch(f"http://{NAME}:{server.port}/key", policy, requests.Session) == BODY
    assert server.requests == [("/key", f"{NAME}:{server.port}")]
    assert dns.calls.count(NAME) == 1


TLS_NAME = "bucket.tls.example"


def _certificate(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, signer: Any
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), False
        )
    )


@dataclass
class Tls:
    """A test CA (its PEM file) and a server certificate it signed for `names`."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def make_tls(directory: Path, names: list[x509.GeneralName]) -> Tls:
    """A CA and a leaf certificate for `names`, written to `directory`."""
    ca_key, leaf_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dlpipe test CA")])
    ca = (
        _certificate(ca_name, ca_name, ca_key, ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), True
        )
        .sign(ca_key, hashes.SHA256())
    )
    leaf_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dlpipe test server")])
    leaf = (
        _certificate(leaf_name, ca_name, leaf_key, ca_key)
        .add_extension(x509.SubjectAlternativeName(names), False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .sign(ca_key, hashes.SHA256())
    )
    tls = Tls(directory / "ca.pem", directory / "leaf.pem", directory / "leaf.key")
    tls.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    tls.cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    tls.key_file.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return tls


@contextmanager
def tls_server(tls: Tls) -> Iterator[tuple[Server, list[str | None]]]:
    """`Server` behind TLS with `tls`'s certificate; the list collects each handshake's SNI."""
    sni: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.cert_file, tls.key_file)
    context.sni_callback = lambda _sock, name, _ctx: sni.append(name)  # type: ignore[assignment,misc,return-value]
    with Server() as server:
        raw = server._server.socket
        server._server.socket = context.wrap_socket(raw, server_side=True)
        yield server, sni


def verifying(ca_file: Path | bool) -> Callable[[], requests.Session]:
    """Sessions that verify certificates against `ca_file` (True: the default bundle)."""

    def session() -> requests.Session:
        made = requests.Session()
        made.trust_env = False  # else REQUESTS_CA_BUNDLE from the environment overrides `verify`
        made.verify = str(ca_file) if isinstance(ca_file, Path) else ca_file
        return made

    return session


@pytest.fixture
def tls_policy(monkeypatch: pytest.MonkeyPatch) -> UrlPolicy:
    """TLS_NAME resolves (once) to 127.0.0.1, allowed as on the local stack."""
    monkeypatch.setattr(socket, "getaddrinfo", Dns({TLS_NAME: ["127.0.0.1"]}))
    return UrlPolicy.from_patterns([f"{TLS_NAME}:*"], allow_private=True)


def test_a_pinned_https_download_verifies_the_certificate_for_the_host_name(
    tmp_path: Path, tls_policy: UrlPolicy
) -> None:
    """Connected to 127.0.0.1, the handshake sends the name as SNI and checks the certificate
    for the name: accepted with the test CA trusted, refused with the default bundle."""
    tls = make_tls(tmp_path, [x509.DNSName(TLS_NAME)])
    with tls_server(tls) as (server, sni):
        url = f"https://{TLS_NAME}:{server.port}/key"
        with pytest.raises(SourceUnavailableError, match=f"SSLError contacting {TLS_NAME}"):
            fetch(url, tls_policy, verifying(True))
        assert fetch(url, tls_policy, verifying(tls.ca_file)) == BODY
    assert server.requests == [("/key", f"{TLS_NAME}:{server.port}")]
    assert sni == [TLS_NAME, TLS_NAME]


def test_a_certificate_for_the_pinned_address_but_not_the_name_is_refused(
    tmp_path: Path, tls_policy: UrlPolicy
) -> None:
    """A trusted certificate naming only 127.0.0.1: the name is what is checked, so refused."""
    tls = make_tls(tmp_path, [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    refused = pytest.raises(SourceUnavailableError, match=f"SSLError contacting {TLS_NAME}")
    with tls_server(tls) as (server, _sni), refused:
        fetch(f"https://{TLS_NAME}:{server.port}/key", tls_policy, verifying(tls.ca_file))
    assert server.requests == []

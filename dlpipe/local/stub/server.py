"""The stub provider: a real HTTP server on 127.0.0.1 that speaks the provider contract.

Files are really encrypted (fresh AES-256 key per file, wrapped with the configured RSA key),
stored in the emulator's S3 under `{key_prefix}{date}/{entity}.bin`, and handed out as
SigV4 presigned URLs. A date is published on its first listing (or `publish`). Faults are
switched with `Faults` (dlpipe/local/stub/faults.py), at construction or while it runs.
With `page_size` the listing is served in pages linked by `next` cursors; `synthetic_files`
adds listing-only entries of objects that do not exist (dlpipe/local/stub/listing.py), so a
100,000-file day can be listed without storing 100,000 files. Listings are streamed.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING, Any

from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.model import make_file_id
from dlpipe.local.provision import ensure_bucket
from dlpipe.local.stub import DEFAULT_BUCKET
from dlpipe.local.stub.crypto import (
    generate_rsa_keypair,
    load_public_key,
    new_aes_key,
    wrap_aes_key,
)
from dlpipe.local.stub.faults import (
    CallFault,
    Descriptor,
    Faults,
    draw_call_fault,
    falsify_descriptor,
)
from dlpipe.local.stub.http import Reply, Route, StubHttpServer, bearer_matches, route
from dlpipe.local.stub.listing import (
    decode_cursor,
    encode_cursor,
    listing_entry,
    page_chunks,
    synthetic_descriptor,
    synthetic_entity,
)
from dlpipe.local.stub.presign import BatchSigner, Presigner
from dlpipe.local.stub.publish import ExpectedFile, StubFileSpec
from dlpipe.local.stub.store import PublishedDays
from dlpipe.log import get_logger

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

    from dlpipe.adapters.aws import AwsClients

_ERROR_STATUSES = (500, 502, 503)
_BLOB_PATH = "/v1/blob/"  # the file endpoint: /v1/blob/DATE/ENTITY


def _log() -> Any:
    # Bound per call: a logger bound at import would miss configure_logging (stream, level).
    return get_logger(component="dlpipe.local.stub.server")


class StubProvider:
    """The provider API over HTTP, backed by encrypted objects in the emulator's S3."""

    def __init__(
        self,
        clients: AwsClients,
        public_key_pem: bytes,
        token: str,
        files: Sequence[StubFileSpec],
        *,
        bucket: str = DEFAULT_BUCKET,
        seed: int = 0,
        faults: Faults | None = None,
        url_ttl_seconds: int = 3600,
        key_prefix: str = "",
        port: int = 0,
        page_size: int | None = None,
        synthetic_files: int = 0,
        feed: str = DEFAULT_FEED_NAME,
    ) -> None:
        if len({spec.entity for spec in files}) != len(files):
            raise ValueError("stub file specs repeat an entity")
        if (page_size is not None and page_size < 1) or synthetic_files < 0:
            raise ValueError("page_size must be positive and synthetic_files not negative")
        self.page_size = page_size  # may be changed while it runs
        self._synthetic_files = synthetic_files
        self._key_prefix = key_prefix
        self._feed = feed  # whose FileIDs `expected` names: a provider does not know our keys
        self.faults = faults or Faults()
        self._clients, self._token, self._bucket, self._port = clients, token, bucket, port
        self._public_key = load_public_key(public_key_pem)
        self._entities = frozenset(spec.entity for spec in files)
        self._days = PublishedDays(
            clients.s3, bucket, files, seed=seed, key_prefix=key_prefix, faults=self._fault_snapshot
        )
        self._presigner = Presigner(clients.settings)
        self._url_ttl_s = url_ttl_seconds
        self._rng = random.Random(seed)  # noqa: S311 - fault draws, not secrets
        self._lock = threading.Lock()  # guards the counter and the shared Random
        self._requests = 0
        self._http: StubHttpServer | None = None

    def start(self) -> str:
        """Create the bucket, start serving on 127.0.0.1, and return the base URL."""
        ensure_bucket(self._clients, self._bucket)
        self._http = StubHttpServer(self._serve, port=self._port)
        _log().info(
            "dlpipe.local.stub.server.started", base_url=self.base_url, files=len(self._entities)
        )
        return self.base_url

    def stop(self) -> None:
        """Stop serving (stalled calls are woken) and wait for the server thread."""
        http, self._http = self._http, None
        if http is not None:
            http.close()
            _log().info("dlpipe.local.stub.server.stopped", requests=self.request_count)

    def __enter__(self) -> StubProvider:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:port of the running stub."""
        if self._http is None:
            raise RuntimeError("the stub provider is not running")
        return self._http.base_url

    @property
    def request_count(self) -> int:
        """API calls received so far, faulted ones included."""
        with self._lock:
            return self._requests

    @property
    def bucket(self) -> str:
        """The bucket holding the published ciphertext."""
        return self._bucket

    def object_key(self, date: str, entity: str) -> str:
        """Where the ciphertext of `entity` for `date` is stored."""
        return self._days.object_key(date, entity)

    def publish(self, date: str) -> dict[str, ExpectedFile]:
        """Publish the date's files now (unless done already); returns `expected(date)`."""
        return self.expected(date)

    def expected(self, date: str) -> dict[str, ExpectedFile]:
        """Per FileID, what a correct download yields (publishing the date if needed)."""
        days = self._days.get(date).items()
        return {make_file_id(e, date, self._feed): p.expected for e, p in days}

    def purge(self) -> None:
        """Delete every object this stub stored (keeps a test session's emulator small)."""
        self._days.purge()

    def _fault_snapshot(self) -> Faults:
        return self.faults.snapshot()  # `faults` may be replaced whole, not only `set`

    def _serve(self, path: str, authorization: str | None) -> Reply:
        faults = self._fault_snapshot()
        if path.startswith(_BLOB_PATH):
            return self._blob(path[len(_BLOB_PATH) :], faults)  # a file URL: no bearer token
        if fault_reply := self._call_fault(faults):
            return fault_reply
        if not bearer_matches(authorization, self._token):
            return Reply.json(
                401, {"error": "invalid bearer token"}, [("WWW-Authenticate", "Bearer")]
            )
        return self._answer(path, faults)

    def _answer(self, path: str, faults: Faults) -> Reply:
        call = route(path)
        if call is None or (call.entity is not None and call.entity not in self._entities):
            return Reply.json(404, {"error": "no such endpoint or file"})
        if call.date is None:
            return Reply.json(400, {"error": "date must be YYYY-MM-DD"})
        if faults.malformed_json:
            return Reply(200, b'{"date": "' + call.date.encode() + b'", "files": [{"entity": ')
        if call.entity is None:
            return self._listing_page(call, faults)
        descriptor = self._descriptor(call.date, call.entity, faults, refresh=True)
        return Reply.json(200, {"date": call.date, **descriptor})

    def _blob(self, rest: str, faults: Faults) -> Reply:
        """A file's ciphertext from the stub itself (trickle_bytes_per_s), streamed slowly to
        the first `trickle_downloads` downloads; `faults.streams` counts them."""
        date, _, entity = rest.partition("/")
        published = self._days.get(date).get(entity) if entity in self._entities else None
        if published is None:
            return Reply.json(404, {"error": "no such file"})
        body = self._clients.s3.get_object(Bucket=self._bucket, Key=published.object_key)
        data = body["Body"].read()
        return Reply.streamed(200, self._trickled(data, faults))

    def _trickled(self, data: bytes, faults: Faults) -> Iterator[bytes]:
        number = faults.streams.started()
        limit = faults.trickle_downloads
        bytes_per_s = faults.trickle_bytes_per_s if limit is None or number <= limit else 0
        try:
            if not bytes_per_s:
                yield data
                return
            # Small steps: a client that gave up is noticed at the next writes, within ~0.2 s.
            step = max(1, bytes_per_s // 10)
            for start in range(0, len(data), step):
                http = self._http
                if http is None:
                    return
                http.pause(step / bytes_per_s)
                yield data[start : start + step]
        finally:
            faults.streams.ended()

    def _call_fault(self, faults: Faults) -> Reply | None:
        http = self._http
        if http is None:  # a call that raced stop()
            return Reply.json(503, {"error": "stopping"})
        with self._lock:
            self._requests += 1
            fault, status = draw_call_fault(faults, self._rng), self._rng.choice(_ERROR_STATUSES)
        http.pause(faults.latency_s)
        if fault is CallFault.ERROR:
            return Reply.json(status, {"error": "injected failure"})
        if fault is CallFault.THROTTLE:
            return Reply.json(429, {"error": "slow down"}, [("Retry-After", "1")])
        if fault is CallFault.STALL:
            http.pause(faults.stall_seconds)  # answered after the client gave up
        return None

    def _listing_page(self, call: Route, faults: Faults) -> Reply:
        date = call.date
        assert date is not None
        offset = 0 if call.cursor is None else decode_cursor(call.cursor, date)
        if offset is None:
            return Reply.json(400, {"error": "unknown cursor"})
        entities, extras = self._listing_parts(date, faults)
        total = len(entities) + self._synthetic_files + len(extras)
        size = self.page_size or max(1, total)
        end = min(offset + size, total)
        cursor = encode_cursor(date, end) if end < total else None
        entries = self._entries(date, faults, entities, extras, range(offset, end))
        page = offset // size + 1
        return Reply.streamed(200, page_chunks(date, entries, cursor, page=page, faults=faults))

    def _listing_parts(
        self, date: str, faults: Faults
    ) -> tuple[list[str], list[dict[str, object]]]:
        if faults.empty_listing:
            return [], []
        entities = list(self._days.get(date)) if self._entities else []
        entities += [e for e in entities if e in faults.duplicate_entities]
        return entities, [dict(e) for e in faults.extra_listing_entries]

    def _entries(
        self,
        date: str,
        faults: Faults,
        entities: list[str],
        extras: list[dict[str, object]],
        indexes: range,
    ) -> Iterator[dict[str, object]]:
        signer = self._presigner.batch(self._bucket, self._url_ttl_s)
        synthetic_end = len(entities) + self._synthetic_files
        for index in indexes:
            if index < len(entities):
                yield self._descriptor(date, entities[index], faults, refresh=False)
            elif index < synthetic_end:
                yield self._synthetic(date, synthetic_entity(index - len(entities)), signer)
            else:
                yield extras[index - synthetic_end]

    def _synthetic(self, date: str, entity: str, signer: BatchSigner) -> dict[str, object]:
        key = f"{self._key_prefix}{date}/synthetic/{entity}.bin"  # never stored
        return synthetic_descriptor(
            entity, signer.url(key), self._synthetic_key, signer.expires_at_iso
        )

    @cached_property
    def _synthetic_key(self) -> str:
        # One real wrap of a random AES key, shared by every synthetic entry.
        return wrap_aes_key(self._public_key, new_aes_key())

    def _descriptor(self, date: str, entity: str, faults: Faults, *, refresh: bool) -> Descriptor:
        published = self._days.get(date)[entity]
        missing = entity in faults.missing_object_entities
        expired = entity in faults.always_expired_entities or (
            not refresh and entity in faults.expired_url_entities
        )
        sign = self._presigner.expired_url if expired else self._presigner.url
        signed = sign(
            self._bucket, published.object_key + (".missing" if missing else ""), self._url_ttl_s
        )
        if faults.trickle_bytes_per_s:
            signed = replace(signed, url=f"{self.base_url}{_BLOB_PATH}{date}/{entity}")
        rsa_key = self._wrong_key if entity in faults.wrong_key_entities else self._public_key
        entry = listing_entry(
            entity,
            signed.url,
            wrap_aes_key(rsa_key, published.aes_key),
            published.iv,
            cipher=published.spec.cipher,
            size=published.expected.size,
            sha256=published.expected.sha256,
            expires_at=signed.expires_at_iso,
        )
        return falsify_descriptor(entry, entity, faults)

    @cached_property
    def _wrong_key(self) -> RSAPublicKey:
        # A key pair nobody holds the private half of: the wrap cannot be undone.
        return load_public_key(generate_rsa_keypair()[1])

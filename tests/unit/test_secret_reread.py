"""Keys and tokens follow their secrets: a refused value makes its source be read again, at
most once per interval of a virtual clock, and the use tried once more with a value read since
(dlpipe/adapters/reread.py, keys.py, decryption.py, provider_token.py)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
)

from dlpipe.adapters.decryption import KeyDecryption
from dlpipe.adapters.keys import key_fingerprint, same_key
from dlpipe.adapters.provider_token import RefreshingSigner
from dlpipe.adapters.reread import Rereadable
from dlpipe.domain.cipher_format import CIPHER_GCM
from dlpipe.domain.download_errors import WrongKeyError
from dlpipe.domain.provider_errors import ProviderAuthError
from dlpipe.local.stub.crypto import (
    generate_rsa_keypair,
    load_public_key,
    new_aes_key,
    new_iv,
    wrap_aes_key,
)

INTERVAL_S = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Source:
    """A secret whose value the test changes; counts the reads."""

    def __init__(self, value: object) -> None:
        self.value, self.reads = value, 0
        self.fail: Exception | None = None

    def read(self) -> object:
        self.reads += 1
        if self.fail is not None:
            raise self.fail
        return self.value


def _rereadable(source: Source, clock: Clock) -> Rereadable[object]:
    return Rereadable(
        source.read, where="test", same=lambda a, b: a == b, interval_s=INTERVAL_S, clock=clock
    )


def test_a_refused_value_is_read_again_at_most_once_per_interval() -> None:
    clock, source = Clock(), Source("old")
    value = _rereadable(source, clock)
    assert value.newer_than("old") is None  # read again: still the same
    source.value = "new"
    clock.now += INTERVAL_S - 1
    assert value.newer_than("old") is None  # too soon: not read
    assert (source.reads, value.value) == (2, "old")
    clock.now += 1
    assert value.newer_than("old") == "new"
    assert (source.reads, value.value) == (3, "new")
    # Another use that failed with the old value gets the new one without a read.
    assert value.newer_than("old") == "new"
    assert source.reads == 3


def test_a_source_that_cannot_be_read_again_keeps_the_value_it_had() -> None:
    clock, source = Clock(), Source("old")
    value = _rereadable(source, clock)
    source.fail = RuntimeError("AccessDenied")
    assert value.newer_than("old") is None
    assert value.value == "old"


@pytest.fixture(scope="module")
def two_keys() -> tuple[tuple[RSAPrivateKey, bytes], tuple[RSAPrivateKey, bytes]]:
    pairs = []
    for _ in range(2):
        private_pem, public_pem = generate_rsa_keypair()
        key = load_pem_private_key(private_pem, password=None)
        assert isinstance(key, RSAPrivateKey)
        pairs.append((key, public_pem))
    return pairs[0], pairs[1]


def _wrapped_for(public_pem: bytes) -> tuple[str, str]:
    wrapped = wrap_aes_key(load_public_key(public_pem), new_aes_key())
    return wrapped, base64.b64encode(new_iv(CIPHER_GCM)).decode()


def test_the_fingerprint_is_the_sha256_of_the_public_key_s_der() -> None:
    private_pem, public_pem = generate_rsa_keypair()
    key = load_pem_private_key(private_pem, password=None)
    assert isinstance(key, RSAPrivateKey)
    der = load_public_key(public_pem).public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    assert key_fingerprint(key) == hashlib.sha256(der).hexdigest()[:12]


def test_a_restored_key_unwraps_the_file_after_one_read_of_its_source(
    two_keys: tuple[tuple[RSAPrivateKey, bytes], tuple[RSAPrivateKey, bytes]],
) -> None:
    (wrong, _), (right, right_public) = two_keys
    clock, source = Clock(), Source(wrong)
    keys = Rereadable(source.read, where="t", same=same_key, interval_s=INTERVAL_S, clock=clock)
    decryption = KeyDecryption(keys)  # type: ignore[arg-type]
    wrapped, iv = _wrapped_for(right_public)
    with pytest.raises(WrongKeyError) as failed:
        decryption.open_decryptor(CIPHER_GCM, wrapped, iv)
    # The error names the key that failed by its fingerprint, never the key.
    assert failed.value.error_message.startswith("wrong_key: ")
    assert f"(our key {key_fingerprint(wrong)})" in failed.value.error_message
    source.value = right  # the operator restores the key
    clock.now += INTERVAL_S
    decryption.open_decryptor(CIPHER_GCM, wrapped, iv)  # no error: unwrapped with the new key
    assert source.reads == 3  # the first read, one after each refusal


def test_a_key_that_stays_wrong_fails_naming_the_key_read_last(
    two_keys: tuple[tuple[RSAPrivateKey, bytes], tuple[RSAPrivateKey, bytes]],
) -> None:
    (first, _), (second, _) = two_keys
    _, other_public = generate_rsa_keypair()
    clock, source = Clock(), Source(first)
    keys = Rereadable(source.read, where="t", same=same_key, interval_s=INTERVAL_S, clock=clock)
    source.value = second  # rotated, but the file was wrapped for neither
    wrapped, iv = _wrapped_for(other_public)
    with pytest.raises(WrongKeyError) as failed:
        KeyDecryption(keys).open_decryptor(CIPHER_GCM, wrapped, iv)  # type: ignore[arg-type]
    assert f"(our key {key_fingerprint(second)})" in str(failed.value)


class FakeClient:
    def __init__(self, token: str, good: str, calls: list[str]) -> None:
        self._token, self._good, self._calls = token, good, calls

    def get_file(self, entity: str, date: str) -> str:
        self._calls.append(self._token)
        if self._token != self._good:
            raise ProviderAuthError(401)
        return f"{entity} {date}"


def test_a_refused_token_is_read_again_and_the_refresh_tried_once_more() -> None:
    clock, source, calls = Clock(), Source("old"), list[str]()
    token = Rereadable(
        source.read, where="t", same=lambda a, b: a == b, interval_s=INTERVAL_S, clock=clock
    )
    signer = RefreshingSigner(token, lambda t: FakeClient(t, "new", calls))  # type: ignore[arg-type, return-value]
    with pytest.raises(ProviderAuthError):
        signer.get_file("accounts", "2026-02-28")
    source.value = "new"  # rotated
    with pytest.raises(ProviderAuthError):
        signer.get_file("accounts", "2026-02-28")  # within the interval: not read again
    clock.now += INTERVAL_S
    assert signer.get_file("accounts", "2026-02-28") == "accounts 2026-02-28"  # type: ignore[comparison-overlap]
    assert calls == ["old", "old", "old", "new"]
    assert source.reads == 3

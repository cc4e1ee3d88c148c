"""Key, IV and cipher inputs: what is accepted, and the permanent error for what is not."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from dlpipe.adapters.crypto import (
    decode_iv,
    load_private_key,
    new_decryptor,
    open_decryptor,
    unwrap_aes_key,
)
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM, SUPPORTED_CIPHERS
from dlpipe.domain.download_errors import (
    InvalidIVError,
    InvalidPrivateKeyError,
    MalformedKeyMaterial,
    UnknownCipherError,
    WrongKeyError,
)
from dlpipe.local.stub.crypto import (
    generate_rsa_keypair,
    load_public_key,
    new_aes_key,
    new_iv,
    oaep_sha256,
    wrap_aes_key,
)

PASSWORD = b"test-passphrase"


@pytest.fixture(scope="module")
def ours() -> tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey]:
    private_pem, public_pem = generate_rsa_keypair(2048)
    return load_private_key(private_pem), load_public_key(public_pem)


@pytest.fixture(scope="module")
def theirs() -> rsa.RSAPublicKey:
    return load_public_key(generate_rsa_keypair(2048)[1])


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_wrapped_key_unwraps_to_the_same_aes_key(
    ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey],
) -> None:
    """A key wrapped with our public key unwraps to the original 32 bytes."""
    private_key, public_key = ours
    key = new_aes_key()
    assert unwrap_aes_key(private_key, wrap_aes_key(public_key, key)) == key


def test_key_wrapped_for_another_rsa_key_is_wrong_key(
    ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey], theirs: rsa.RSAPublicKey
) -> None:
    """A key wrapped for someone else's RSA key raises WrongKeyError."""
    with pytest.raises(WrongKeyError):
        unwrap_aes_key(ours[0], wrap_aes_key(theirs, new_aes_key()))


@pytest.mark.parametrize("damage", ["flip", "shorten"])
def test_corrupted_wrapped_key_is_wrong_key(
    damage: str, ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey]
) -> None:
    """A wrapped key with a flipped byte or a missing byte raises WrongKeyError."""
    wrapped = bytearray(base64.b64decode(wrap_aes_key(ours[1], new_aes_key())))
    if damage == "flip":
        wrapped[100] ^= 0x01
    else:
        del wrapped[-1]
    with pytest.raises(WrongKeyError):
        unwrap_aes_key(ours[0], b64(bytes(wrapped)))


@pytest.mark.parametrize("bad", ["not base64!", "abc", "", "é" * 8, "QUJD\nRA=="])
def test_invalid_base64_key_is_malformed(
    bad: str, ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey]
) -> None:
    """A wrapped key that is not strict base64 (or empty) raises MalformedKeyMaterial."""
    with pytest.raises(MalformedKeyMaterial):
        unwrap_aes_key(ours[0], bad)


def test_unwrapped_key_of_the_wrong_length_is_malformed(
    ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey],
) -> None:
    """An RSA-valid wrap of a 16-byte key raises MalformedKeyMaterial (AES-256 needs 32)."""
    wrapped = b64(ours[1].encrypt(bytes(16), oaep_sha256()))
    with pytest.raises(MalformedKeyMaterial, match="16 bytes"):
        unwrap_aes_key(ours[0], wrapped)


def test_surrounding_whitespace_in_base64_is_tolerated(
    ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey],
) -> None:
    """A trailing newline around a base64 key or IV (as copied from a file) is accepted."""
    key, iv = new_aes_key(), new_iv(CIPHER_GCM)
    assert unwrap_aes_key(ours[0], wrap_aes_key(ours[1], key) + "\n") == key
    assert decode_iv(f" {b64(iv)}\n", CIPHER_GCM) == iv


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
def test_iv_of_the_right_length_decodes(cipher: str) -> None:
    """A base64 IV of the cipher's length (CBC 16, GCM 12) decodes to its bytes."""
    iv = new_iv(cipher)
    assert decode_iv(b64(iv), cipher) == iv


@pytest.mark.parametrize(
    ("cipher", "length"), [(CIPHER_CBC, 12), (CIPHER_CBC, 32), (CIPHER_GCM, 16), (CIPHER_GCM, 0)]
)
def test_iv_of_the_wrong_length_is_invalid(cipher: str, length: int) -> None:
    """An IV whose length does not fit the cipher raises InvalidIVError."""
    with pytest.raises(InvalidIVError, match=f"got {length} bytes"):
        decode_iv(b64(bytes(length)), cipher)


@pytest.mark.parametrize("bad", ["%%%", "AAAAAAAAAAAAAAAAAAAAAA", "é"])
def test_iv_that_is_not_base64_is_invalid(bad: str) -> None:
    """An IV that is not strict base64 raises InvalidIVError."""
    with pytest.raises(InvalidIVError, match="base64"):
        decode_iv(bad, CIPHER_CBC)


@pytest.mark.parametrize("cipher", ["AES-128-CBC", "aes-256-gcm", "AES-256-CTR", "", "ROT13"])
def test_unknown_cipher_is_refused_everywhere(cipher: str) -> None:
    """Only the two exact cipher names exist; anything else raises UnknownCipherError."""
    with pytest.raises(UnknownCipherError):
        decode_iv(b64(bytes(16)), cipher)
    with pytest.raises(UnknownCipherError):
        new_decryptor(cipher, bytes(32), bytes(16))


@pytest.mark.parametrize("cipher", SUPPORTED_CIPHERS)
def test_raw_key_and_iv_lengths_are_checked_by_new_decryptor(cipher: str) -> None:
    """new_decryptor refuses a 16-byte key and an IV of the other cipher's length."""
    with pytest.raises(MalformedKeyMaterial):
        new_decryptor(cipher, bytes(16), new_iv(cipher))
    other = CIPHER_GCM if cipher == CIPHER_CBC else CIPHER_CBC
    with pytest.raises(InvalidIVError):
        new_decryptor(cipher, bytes(32), new_iv(other))


def test_open_decryptor_checks_the_iv_before_the_rsa_unwrap(
    ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey],
) -> None:
    """A job with both a bad IV and a bad key reports the IV, found without any RSA work."""
    with pytest.raises(InvalidIVError):
        open_decryptor(ours[0], CIPHER_CBC, "not base64!", b64(bytes(3)))


def test_encrypted_private_key_loads_with_its_password(
    ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey],
) -> None:
    """A password-protected PKCS8 PEM loads with its password, and not without it."""
    pem = ours[0].private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(PASSWORD),
    )
    assert load_private_key(pem, PASSWORD).public_key().public_numbers() == ours[1].public_numbers()
    for password in (None, b"wrong"):
        with pytest.raises(InvalidPrivateKeyError) as caught:
            load_private_key(pem, password)
        assert PASSWORD.decode() not in str(caught.value)


def test_non_rsa_or_non_private_pem_is_refused(
    ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey],
) -> None:
    """An EC private key, a public key or garbage raises InvalidPrivateKeyError."""
    ec_pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = ours[1].public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    for pem in (ec_pem, public_pem, b"-----BEGIN PRIVATE KEY-----\nAAAA\n", b""):
        with pytest.raises(InvalidPrivateKeyError):
            load_private_key(pem)


def test_provider_refuses_non_rsa_public_keys_and_short_aes_keys(
    ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey],
) -> None:
    """The encrypt side refuses an EC public key and a 16-byte AES key to wrap."""
    ec_public = ec.generate_private_key(ec.SECP256R1()).public_key()
    pem = ec_public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with pytest.raises(TypeError):
        load_public_key(pem)
    with pytest.raises(ValueError, match="32-byte key"):
        wrap_aes_key(ours[1], bytes(16))


def test_unwrap_errors_never_reveal_key_material(
    ours: tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey], theirs: rsa.RSAPublicKey
) -> None:
    """Unwrap failures name the problem but not the wrapped key or the AES key, in any form."""
    aes_key = new_aes_key()
    wrapped_for_them = wrap_aes_key(theirs, aes_key)
    short_key = bytes(range(16))
    wrapped_short = b64(ours[1].encrypt(short_key, oaep_sha256()))
    cases = [(wrapped_for_them, aes_key), (wrapped_short, short_key), ("@" + b64(aes_key), aes_key)]
    for wrapped, key in cases:
        with pytest.raises((WrongKeyError, MalformedKeyMaterial)) as caught:
            unwrap_aes_key(ours[0], wrapped)
        message = caught.value.error_message
        for form in (wrapped, wrapped[:24], key.hex(), b64(key), repr(key)):
            assert form not in message

"""The cipher is an enum: a value that names none of its members is refused where it is read
(the provider's listing, a stored job item) and never decrypted as some other cipher."""

from __future__ import annotations

import os

import pytest

from dlpipe.adapters import crypto
from dlpipe.adapters.items import job_from_item, job_to_item
from dlpipe.domain import cipher_format
from dlpipe.domain.cipher_format import Cipher, UnknownCipher, require_cipher
from dlpipe.domain.descriptor import parse_file
from dlpipe.domain.download_errors import UnknownCipherError
from dlpipe.domain.provider_errors import MalformedResponseError
from tests.support import make_job

DAY = "2026-02-28"
UNKNOWN = ["AES-256-CTR", "aes-256-gcm", "AES-256-GCM ", "", "\x00garbage"]


def test_a_cipher_named_in_the_format_but_not_decrypted_is_refused_not_run_as_gcm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cipher added to the format's sizes without its own decrypt branch must not fall
    through to GCM: new_decryptor branches on the enum, CBC and GCM by name, nothing else."""
    monkeypatch.setitem(cipher_format.IV_BYTES, "AES-256-CTR", 12)  # type: ignore[index]
    supported = (*cipher_format.SUPPORTED_CIPHERS, "AES-256-CTR")
    monkeypatch.setattr(crypto, "SUPPORTED_CIPHERS", supported, raising=False)
    with pytest.raises(UnknownCipherError):
        crypto.new_decryptor("AES-256-CTR", os.urandom(32), os.urandom(12))  # type: ignore[arg-type]


@pytest.mark.parametrize("value", UNKNOWN)
def test_a_job_item_with_an_unknown_cipher_reads_as_a_refusal(value: str) -> None:
    """Read from the table, the Cipher stays what was stored, marked unknown: the decrypt
    side refuses it with unknown_cipher, and nothing turns it into a cipher."""
    job = job_from_item(job_to_item(make_job("accounts", cipher=value)))
    assert isinstance(job.cipher, UnknownCipher)
    assert not isinstance(job.cipher, Cipher)
    assert job.cipher == value
    with pytest.raises(UnknownCipherError, match="unsupported cipher"):
        require_cipher(job.cipher)
    with pytest.raises(UnknownCipherError):
        crypto.decode_iv("AAAAAAAAAAAAAAAA", job.cipher)


@pytest.mark.parametrize("cipher", list(Cipher))
def test_a_job_item_with_a_known_cipher_reads_as_its_member_and_writes_the_same_string(
    cipher: Cipher,
) -> None:
    """The stored strings do not change: AES-256-CBC and AES-256-GCM, byte for byte."""
    item = job_to_item(make_job("accounts", cipher=str(cipher)))
    assert item["Cipher"] == {"S": cipher.value}
    job = job_from_item(item)
    assert job.cipher is cipher
    assert job_to_item(job) == item


def test_the_listing_parses_the_cipher_into_the_enum() -> None:
    """A provider entry's cipher becomes the member; an unknown one is refused by name."""
    entry = {
        "entity": "accounts",
        "url": "https://provider.test/f",
        "encrypted_key": "AAAA",
        "iv": "AAAAAAAAAAAAAAAA",
        "cipher": "AES-256-GCM",
        "size": 1,
        "sha256": "0" * 64,
    }
    assert parse_file(entry, DAY, "files[0]").cipher is Cipher.GCM
    with pytest.raises(MalformedResponseError, match=r"files\[0\]\.cipher: expected one of"):
        parse_file({**entry, "cipher": "AES-256-CTR"}, DAY, "files[0]")


def test_an_unknown_cipher_stays_refused_whatever_it_says() -> None:
    """Read as unknown, refused as unknown: no later step turns it into a cipher."""
    with pytest.raises(UnknownCipherError):
        require_cipher(UnknownCipher("AES-256-GCM"))
    assert require_cipher("AES-256-CBC") is Cipher.CBC

"""The stub provider's faults are real: bad entries are rejected, damaged files fail to decrypt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from dlpipe.domain import download_errors as dl
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM, ciphertext_size
from dlpipe.domain.listing import MAX_DECLARED_SIZE_BYTES
from dlpipe.local.stub.faults import DROP, Faults
from dlpipe.local.stub.presign import Presigner
from dlpipe.local.stub.publish import StubFileSpec, default_day
from tests.provider_support import fast_client, fetch_and_decrypt

pytestmark = pytest.mark.integration
pytest_plugins = [
    "tests.provider_fixtures"
]  # rsa_keypair, private_key, provider_token, stub_factory

DAY = "2026-03-01"
VICTIM, BYSTANDER = "victim", "bystander"
PAIR = [StubFileSpec(VICTIM, 100, CIPHER_GCM), StubFileSpec(BYSTANDER, 33, CIPHER_CBC)]
HOSTILE = {
    "entity": "../../etc",
    "url": "http://127.0.0.1/x",
    "encrypted_key": "AA==",
    "iv": "AA==",
    "cipher": CIPHER_CBC,
    "size": 1,
    "sha256": "0" * 64,
}


def _fields(**changes: object) -> Faults:
    return Faults(malformed_fields={VICTIM: changes})


@pytest.mark.parametrize(
    ("faults", "reason"),
    [
        pytest.param(
            _fields(size="abc"),
            "files[0].size: expected a non-negative integer, got 'abc'",
            id="size-string",
        ),
        pytest.param(
            _fields(size=True),
            "files[0].size: expected a non-negative integer, got True",
            id="size-bool",
        ),
        pytest.param(
            _fields(size=-1),
            "files[0].size: expected a non-negative integer, got -1",
            id="size-negative",
        ),
        pytest.param(
            _fields(size=MAX_DECLARED_SIZE_BYTES + 1),
            "files[0].size: huge declared size",
            id="size-huge",
        ),
        pytest.param(_fields(url=DROP), "files[0].url: missing", id="url-missing"),
        pytest.param(
            _fields(url="file:///etc/passwd"),
            "files[0].url: expected an absolute http(s) URL",
            id="url-scheme",
        ),
        pytest.param(
            _fields(sha256="xyz"),
            "files[0].sha256: expected 64 hex digits, got 'xyz'",
            id="sha-not-hex",
        ),
        pytest.param(
            _fields(encrypted_key=DROP), "files[0].encrypted_key: missing", id="key-missing"
        ),
        pytest.param(
            _fields(encrypted_key="%%%"),
            "files[0].encrypted_key: expected base64",
            id="key-not-base64",
        ),
        pytest.param(
            Faults(bad_iv_entities={VICTIM}),
            "files[0].iv: expected 12 bytes for AES-256-GCM, got 5",
            id="iv-length",
        ),
        pytest.param(
            Faults(unknown_cipher_entities={VICTIM}),
            "files[0].cipher: expected one of AES-256-CBC, AES-256-GCM, got 'AES-128-ECB'",
            id="cipher-unknown",
        ),
        pytest.param(
            Faults(duplicate_entities={VICTIM}),
            "duplicate entity 'victim' in the listing (files[0], files[2])",
            id="duplicate",
        ),
    ],
)
def test_a_bad_entry_is_rejected_with_its_reason_and_the_good_one_kept(
    stub_factory, faults: Faults, reason: str
) -> None:
    """One falsified entry becomes a RejectedFile naming the field; the other file still parses."""
    stub = stub_factory(PAIR, faults)
    listing = fast_client(stub).list_files(DAY)
    assert [d.entity for d in listing.files] == [BYSTANDER]
    [rejected] = listing.rejected
    assert (rejected.entity, rejected.entity_or_index) == (VICTIM, VICTIM)
    assert rejected.reason.startswith(reason)


@pytest.mark.parametrize("entity", ["../../etc", "#", "two words", "", "a" * 65])
def test_a_hostile_entity_is_rejected_without_a_usable_entity(stub_factory, entity: str) -> None:
    """An injected entry with an unsafe entity is reported by index, with no entity to key on."""
    stub = stub_factory(PAIR, Faults(extra_listing_entries=[{**HOSTILE, "entity": entity}]))
    listing = fast_client(stub).list_files(DAY)
    assert {d.entity for d in listing.files} == {VICTIM, BYSTANDER}
    [rejected] = listing.rejected
    assert (rejected.entity, rejected.entity_or_index) == (None, "files[2]")
    assert rejected.reason.startswith("files[2].entity:")


def test_an_empty_listing_is_a_valid_day_without_files(stub_factory) -> None:
    """empty_listing serves {"date": ..., "files": []}, which parses to nothing."""
    listing = fast_client(stub_factory(PAIR, Faults(empty_listing=True))).list_files(DAY)
    assert (listing.files, listing.rejected) == ([], [])


@pytest.mark.parametrize(
    ("cipher", "switch", "error"),
    [
        (CIPHER_GCM, "wrong_key_entities", dl.WrongKeyError),
        (CIPHER_GCM, "tampered_entities", dl.AuthenticationError),
        (CIPHER_CBC, "tampered_entities", dl.ChecksumMismatchError),
        (CIPHER_GCM, "truncated_entities", dl.AuthenticationError),
        (CIPHER_CBC, "truncated_entities", dl.PaddingError),
        (CIPHER_GCM, "extra_bytes_entities", dl.AuthenticationError),
        # A whole appended block decrypts to random bytes: invalid padding, except about one
        # time in 256 when it ends in valid padding and the plaintext outgrows its size.
        (CIPHER_CBC, "extra_bytes_entities", (dl.PaddingError, dl.SizeMismatchError)),
        (CIPHER_CBC, "bad_sha_entities", dl.ChecksumMismatchError),
        (CIPHER_GCM, "bad_size_entities", dl.SizeMismatchError),
    ],
)
def test_a_damaged_file_fails_decryption_or_verification(
    stub_factory,
    private_key,
    cipher: str,
    switch: str,
    error: type[Exception] | tuple[type[Exception], ...],
) -> None:
    """Each data fault is caught by the downloader's decrypt-and-verify, as a permanent error."""
    stub = stub_factory([StubFileSpec(VICTIM, 70_000, cipher)], Faults(**{switch: {VICTIM}}))
    [descriptor] = fast_client(stub).list_files(DAY).files
    with pytest.raises(error):
        fetch_and_decrypt(descriptor, private_key)
    errors = error if isinstance(error, tuple) else (error,)
    assert all(issubclass(each, dl.PermanentError) for each in errors)


def test_a_missing_object_gets_404_from_s3(stub_factory) -> None:
    """missing_object_entities hands out a validly signed URL to an object that does not exist."""
    stub = stub_factory(PAIR, Faults(missing_object_entities={VICTIM}))
    descriptor = next(d for d in fast_client(stub).list_files(DAY).files if d.entity == VICTIM)
    assert requests.get(descriptor.url, timeout=10).status_code == 404


def test_an_expired_url_is_signed_like_botocore_signs_it(aws_env: dict[str, str]) -> None:
    """Signing at a given time reproduces botocore's own presigned URL for that second exactly."""
    from dlpipe.config import Settings

    presigner, own = Presigner(Settings.from_env()), None
    for _ in range(5):  # the two signatures must fall in the same second
        now = datetime.now(UTC).replace(microsecond=0)
        own = presigner.signed_at("bucket", "2026-03-01/x.bin", 3600, now)
        reference = presigner.url("bucket", "2026-03-01/x.bin", 3600)
        # The second botocore signed in is the URL's X-Amz-Date: the reference's expires_at
        # comes from another reading of the clock, which may fall in the second before.
        if _signed_second(reference.url) == _signed_second(own.url):
            break
    assert own is not None
    assert own.url == reference.url


def _signed_second(url: str) -> str:
    return parse_qs(urlsplit(url).query)["X-Amz-Date"][0]


def test_default_day_publishes_twenty_files_sized_exactly(stub_factory) -> None:
    """default_day(20) (0 B .. 20 MiB, CBC and GCM) publishes, objects sized exactly (its
    time is bench/stub_publish.py's figure)."""
    specs = default_day(20)
    stub = stub_factory(specs)
    stub.publish(DAY)
    listing = fast_client(stub).list_files(DAY)
    assert (len(listing.files), listing.rejected) == (20, [])
    s3 = stub._clients.s3
    for spec in specs:
        head = s3.head_object(Bucket=stub.bucket, Key=stub.object_key(DAY, spec.entity))
        assert head["ContentLength"] == ciphertext_size(spec.cipher, spec.size)


def test_provider_stub_command_serves_until_sigterm(
    aws_env: dict[str, str], tmp_path, rsa_keypair, provider_token: str
) -> None:
    """`python -m dlpipe.cli.provider_stub` prints its URL, answers the contract, and exits on SIGTERM."""
    key = tmp_path / "public.pem"
    key.write_bytes(rsa_keypair[1])
    cmd = [
        sys.executable,
        "-m",
        "dlpipe.cli.provider_stub",
        "--port",
        "0",
        "--public-key",
        str(key),
        "--files",
        "3",
    ]
    env = {**os.environ, "DLPIPE_PROVIDER_TOKEN": provider_token, "DLPIPE_LOG_LEVEL": "WARNING"}
    process = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        base_url = process.stdout.readline().strip()
        answer = requests.get(
            f"{base_url}/v1/files",
            params={"date": DAY},
            headers={"Authorization": f"Bearer {provider_token}"},
            timeout=30,
        )
        assert answer.status_code == 200
        assert [f["entity"] for f in answer.json()["files"]] == [s.entity for s in default_day(3)]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        process.stdout.close()

"""The downloader's decrypt side against independent vectors (NIST CAVP, pyca's OAEP-SHA2 set).

Every other crypto test encrypts with the stub provider's encryptor, so a mistake common to
both sides passes them all. These vectors come from the `cryptography-vectors` package; the
only ciphertext built here is a CBC padding block, made with raw `cryptography` AES-ECB.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cryptography_vectors
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.padding import MGF1, OAEP
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from dlpipe.adapters.crypto import (
    StreamDecryptor,
    load_private_key,
    new_decryptor,
    open_decryptor,
    unwrap_aes_key,
)
from dlpipe.domain.cipher_format import AES_BLOCK_BYTES, CIPHER_CBC, CIPHER_GCM, GCM_TAG_BYTES
from dlpipe.domain.download_errors import (
    DownloadError,
    MalformedKeyMaterial,
    WrongKeyError,
)

VECTORS = Path(cryptography_vectors.__file__).parent
CBC_FILES = ("CBCGFSbox256", "CBCKeySbox256", "CBCVarKey256", "CBCVarTxt256", "CBCMMT256")
GCM_FILES = ("gcmDecrypt256", "gcmEncryptExtIV256")
# Our GCM format: a 96-bit nonce, a 128-bit tag after the ciphertext, no associated data.
GCM_FORMAT = {"ivlen": "96", "taglen": "128", "aadlen": "0"}
OAEP_DIR = VECTORS / "asymmetric" / "RSA" / "oaep-custom"
MIN_RSA_BITS = 2048  # the smallest key we issue; crypto.py itself accepts any RSA key size


@dataclass(frozen=True)
class AesVector:
    file: str
    name: str
    key: bytes
    iv: bytes
    ciphertext: bytes  # CBC: the vector's blocks; GCM: the ciphertext followed by its tag
    plaintext: bytes | None  # None: the vector says FAIL (the tag must be rejected)


@dataclass(frozen=True)
class OaepVector:
    file: str
    name: str
    private_key: rsa.RSAPrivateKey
    hash_name: str
    mgf1_hash_name: str
    message: bytes
    wrapped: bytes


def read_nist_rsp(path: Path) -> Iterator[dict[str, str]]:
    """CAVP .rsp records: `[SECTION]` and `[name = value]` headers apply to the records below."""
    params: dict[str, str] = {}
    record: dict[str, str] | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            name, _, value = line.strip("[]").partition("=")
            params[name.strip().lower() if value else "section"] = value.strip() or name.strip()
        elif line == "FAIL" and record is not None:
            record["fail"] = "1"
        else:
            name, _, value = line.partition("=")
            if name.strip().lower() == "count":
                if record is not None:
                    yield record
                record = dict(params)
            if record is not None:
                record[name.strip().lower()] = value.strip()
    if record is not None:
        yield record


def cbc_vectors() -> list[AesVector]:
    """Every AES-256-CBC known answer (both ENCRYPT and DECRYPT sections are pairs to decrypt)."""
    vectors = []
    for stem in CBC_FILES:
        for r in read_nist_rsp(VECTORS / "ciphers" / "AES" / "CBC" / f"{stem}.rsp"):
            pt, ct = bytes.fromhex(r["plaintext"]), bytes.fromhex(r["ciphertext"])
            name = f"{stem}-{r['section']}-{r['count']}"
            key, iv = bytes.fromhex(r["key"]), bytes.fromhex(r["iv"])
            vectors.append(AesVector(stem, name, key, iv, ct, pt))
    return vectors


def gcm_vectors() -> list[AesVector]:
    """AES-256-GCM vectors in our format (96-bit IV, 128-bit tag, no AAD), FAIL ones included."""
    vectors = []
    for stem in GCM_FILES:
        for r in read_nist_rsp(VECTORS / "ciphers" / "AES" / "GCM" / f"{stem}.rsp"):
            if any(r[k] != v for k, v in GCM_FORMAT.items()):
                continue
            data = bytes.fromhex(r["ct"]) + bytes.fromhex(r["tag"])
            plaintext = None if "fail" in r else bytes.fromhex(r["pt"])
            name = f"{stem}-pt{r['ptlen']}-{r['count']}"
            key, iv = bytes.fromhex(r["key"]), bytes.fromhex(r["iv"])
            vectors.append(AesVector(stem, name, key, iv, data, plaintext))
    return vectors


def read_oaep_file(path: Path) -> Iterator[OaepVector]:
    """pyca's OAEP-SHA2 vectors: `# Label:` comment lines, each followed by its hex value."""
    values: dict[str, str] = {}
    section, label, hash_names = "", "", ("", "")
    key: rsa.RSAPrivateKey | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("# OAEP Example"):  # "# OAEP Example 1 alg=sha256 mgf1=sha256"
            alg, mgf = (part.partition("=")[2] for part in line.split()[-2:])
            hash_names = (alg, mgf)
        elif line in ("# Public key", "# Private key"):
            section = line[2:]
        elif line.startswith("# ") and line.endswith(":"):
            label = f"{section}/{line[2:-1]}"
        elif line and not line.startswith("#"):
            values[label] = line
            if label == "Private key/Coefficient":
                key = _private_key(values)
            elif label.endswith("/Encryption"):
                assert key is not None
                message = bytes.fromhex(values[f"{section}/Message"])
                name = f"{path.stem}-{key.key_size}b-{len(message)}B-{line[:8]}"
                yield OaepVector(path.stem, name, key, *hash_names, message, bytes.fromhex(line))


def _private_key(values: dict[str, str]) -> rsa.RSAPrivateKey:
    f = {name.removeprefix("Private key/"): int(value, 16) for name, value in values.items()}
    # Published keys need no consistency check, which costs ~50 ms for each of the 240.
    return rsa.RSAPrivateNumbers(
        p=f["Prime 1"],
        q=f["Prime 2"],
        d=f["Exponent"],
        dmp1=f["Prime exponent 1"],
        dmq1=f["Prime exponent 2"],
        iqmp=f["Coefficient"],
        public_numbers=rsa.RSAPublicNumbers(f["Public exponent"], f["Modulus"]),
    ).private_key(unsafe_skip_rsa_key_validation=True)


def oaep_vectors() -> list[OaepVector]:
    """Every OAEP vector of pyca's custom set whose RSA key is one we would accept."""
    vectors = [v for path in sorted(OAEP_DIR.glob("oaep-*.txt")) for v in read_oaep_file(path)]
    return [v for v in vectors if v.private_key.key_size >= MIN_RSA_BITS]


CBC_VECTORS = cbc_vectors()
GCM_VECTORS = gcm_vectors()
OAEP_VECTORS = oaep_vectors()
OURS = [v for v in OAEP_VECTORS if (v.hash_name, v.mgf1_hash_name) == ("sha256", "sha256")]
OTHER_FILES = sorted({v.file for v in OAEP_VECTORS} - {v.file for v in OURS})


def in_file(vectors: list[AesVector], stem: str) -> list[AesVector]:
    return [v for v in vectors if v.file == stem]


def test_the_vector_files_hold_what_this_module_expects() -> None:
    """The parsers found every vector: a parser that silently finds none would prove nothing."""
    assert {stem: len(in_file(CBC_VECTORS, stem)) for stem in CBC_FILES} == {
        "CBCGFSbox256": 10,
        "CBCKeySbox256": 32,
        "CBCVarKey256": 512,
        "CBCVarTxt256": 256,
        "CBCMMT256": 20,
    }
    assert {len(v.ciphertext) for v in in_file(CBC_VECTORS, "CBCMMT256")} == {
        16 * n for n in range(1, 11)
    }
    assert [len(in_file(GCM_VECTORS, stem)) for stem in GCM_FILES] == [75, 75]
    assert sum(v.plaintext is None for v in GCM_VECTORS) == 33
    assert {len(v.ciphertext) - GCM_TAG_BYTES for v in GCM_VECTORS} == {0, 13, 16, 32, 51}
    assert len(OURS) == 60
    assert {v.private_key.key_size for v in OAEP_VECTORS} == {2048}
    assert len(OTHER_FILES) == 23


def pkcs7_block_after(key: bytes, ciphertext: bytes) -> bytes:
    """A full PKCS7 padding block chained after `ciphertext`, encrypted with raw AES-ECB.

    CAVP's CBC vectors are unpadded; this one block, whose plaintext is sixteen 0x10 bytes,
    turns any of them into a valid padded message whose plaintext is the vector's own.
    """
    previous = ciphertext[-AES_BLOCK_BYTES:]
    block = bytes(b ^ AES_BLOCK_BYTES for b in previous)
    # One block of CBC by hand: AES-ECB of the block XOR the previous ciphertext block.
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return encryptor.update(block) + encryptor.finalize()


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *sorted(c for c in set(cuts) if 0 < c < len(data)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def every_n(data: bytes, n: int) -> list[bytes]:
    return [data[i : i + n] for i in range(0, len(data), n)]


def cbc_chunkings(data: bytes) -> dict[str, list[bytes]]:
    """The ways a padded CBC ciphertext can reach the decryptor that exercise its hold-back."""
    last = len(data) - AES_BLOCK_BYTES
    return {
        "whole": [data],
        "1-byte chunks": every_n(data, 1),
        "block-sized chunks": every_n(data, AES_BLOCK_BYTES),
        "7-byte chunks": every_n(data, 7),
        "final block alone": split_at(data, [last]),
        "final block alone, then an empty read": [*split_at(data, [last]), b""],
        **{f"final block split at +{k}": split_at(data, [last, last + k]) for k in (1, 8, 15)},
    }


def gcm_chunkings(data: bytes) -> dict[str, list[bytes]]:
    """Whole, in small pieces, and the tag split across two reads at each of its inner offsets."""
    tag_at = len(data) - GCM_TAG_BYTES
    chunkings = {
        "whole": [data],
        "1-byte chunks": every_n(data, 1),
        "5-byte chunks": every_n(data, 5),
        "tag alone": split_at(data, [tag_at]),
        "empty reads between": [c for chunk in every_n(data, 9) for c in (chunk, b"")],
    }
    for k in range(1, GCM_TAG_BYTES):
        chunkings[f"tag split at +{k}"] = split_at(data, [tag_at + k])
        chunkings[f"tag alone, split at +{k}"] = split_at(data, [tag_at, tag_at + k])
    return chunkings


def outcome(decryptor: StreamDecryptor, chunks: list[bytes]) -> bytes | str:
    """The plaintext, or the name of the error the decryptor raised."""
    try:
        out = [decryptor.update(chunk) for chunk in chunks]
        out.append(decryptor.finalize())
    except DownloadError as exc:
        return type(exc).__name__
    return b"".join(out)


def mismatches(
    cipher: str,
    vector: AesVector,
    data: bytes,
    expected: bytes | str,
    chunkings: dict[str, list[bytes]],
) -> list[str]:
    """`vector chunking: got ...` for every chunking whose outcome is not `expected`."""
    found = []
    for name, chunks in chunkings.items():
        assert b"".join(chunks) == data
        got = outcome(new_decryptor(cipher, vector.key, vector.iv), chunks)
        if got != expected:
            found.append(f"{vector.name} {name}: got {got!r:.60}")
    return found


def valid_pkcs7_length(plaintext: bytes) -> int | None:
    pad = plaintext[-1]
    ok = 1 <= pad <= AES_BLOCK_BYTES and plaintext.endswith(bytes([pad]) * pad)
    return pad if ok else None


@pytest.mark.parametrize("stem", CBC_FILES)
def test_cbc_decrypts_every_nist_vector_in_every_chunking(stem: str) -> None:
    """Each vector's ciphertext plus one padding block decrypts to the vector's plaintext."""
    failures = []
    for vector in in_file(CBC_VECTORS, stem):
        assert vector.plaintext is not None
        data = vector.ciphertext + pkcs7_block_after(vector.key, vector.ciphertext)
        failures += mismatches(CIPHER_CBC, vector, data, vector.plaintext, cbc_chunkings(data))
    assert not failures, f"{len(failures)} failed: {failures[:5]}"


@pytest.mark.parametrize("stem", CBC_FILES)
def test_cbc_takes_the_bare_vectors_last_block_as_padding(stem: str) -> None:
    """Unpadded, a vector's last plaintext block is stripped if it ends in valid PKCS7, else
    PaddingError, whether the final block arrives alone or byte by byte."""
    failures = []
    for vector in in_file(CBC_VECTORS, stem):
        assert vector.plaintext is not None
        pad = valid_pkcs7_length(vector.plaintext)
        expected = "PaddingError" if pad is None else vector.plaintext[:-pad]
        last = len(vector.ciphertext) - AES_BLOCK_BYTES
        chunkings = {
            "final block alone": split_at(vector.ciphertext, [last]),
            "1-byte chunks": every_n(vector.ciphertext, 1),
        }
        failures += mismatches(CIPHER_CBC, vector, vector.ciphertext, expected, chunkings)
    assert not failures, f"{len(failures)} failed: {failures[:5]}"


@pytest.mark.parametrize("stem", GCM_FILES)
def test_gcm_decrypts_or_rejects_every_nist_vector_in_every_chunking(stem: str) -> None:
    """A valid vector decrypts to its plaintext, a FAIL vector raises AuthenticationError,
    whichever reads the tag's bytes arrive in."""
    failures = []
    for vector in in_file(GCM_VECTORS, stem):
        expected = "AuthenticationError" if vector.plaintext is None else vector.plaintext
        chunkings = gcm_chunkings(vector.ciphertext)
        failures += mismatches(CIPHER_GCM, vector, vector.ciphertext, expected, chunkings)
    assert not failures, f"{len(failures)} failed: {failures[:5]}"


@pytest.fixture(scope="module")
def oaep_key() -> rsa.RSAPrivateKey:
    """A 2048-bit key from the OAEP vectors, loaded through the downloader's PEM loader."""
    pem = OURS[0].private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return load_private_key(pem)


@pytest.mark.parametrize("stem", CBC_FILES + GCM_FILES)
def test_open_decryptor_from_job_fields_decrypts_every_vector(
    stem: str, oaep_key: rsa.RSAPrivateKey
) -> None:
    """From base64 job fields (each vector key wrapped with raw OAEP-SHA256) to plaintext."""
    oaep = OAEP(mgf=MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
    cipher = CIPHER_CBC if stem in CBC_FILES else CIPHER_GCM
    failures = []
    for vector in in_file(CBC_VECTORS + GCM_VECTORS, stem):
        wrapped = base64.b64encode(oaep_key.public_key().encrypt(vector.key, oaep)).decode()
        iv_b64 = base64.b64encode(vector.iv).decode()
        data = vector.ciphertext
        if cipher == CIPHER_CBC:
            data += pkcs7_block_after(vector.key, vector.ciphertext)
        expected = "AuthenticationError" if vector.plaintext is None else vector.plaintext
        got = outcome(open_decryptor(oaep_key, cipher, wrapped, iv_b64), [data])
        if got != expected:
            failures.append(f"{vector.name}: got {got!r:.60}")
    assert not failures, f"{len(failures)} failed: {failures[:5]}"


def test_unwrap_opens_every_oaep_sha256_vector() -> None:
    """The key unwrap opens all 60 SHA-256/MGF1-SHA256 vectors. None wraps a 32-byte message,
    so each must get past OAEP (else WrongKeyError) and refuse the length it found."""
    failures = []
    for vector in OURS:
        wrapped = base64.b64encode(vector.wrapped).decode()
        try:
            unwrap_aes_key(vector.private_key, wrapped)
        except MalformedKeyMaterial as exc:
            if f"is {len(vector.message)} bytes, AES-256" not in str(exc):
                failures.append(f"{vector.name}: {exc}")
        except DownloadError as exc:
            failures.append(f"{vector.name}: {type(exc).__name__}")
    assert not failures, f"{len(failures)} failed: {failures[:5]}"


@pytest.mark.parametrize("stem", OTHER_FILES)
def test_unwrap_refuses_oaep_vectors_of_any_other_hash(stem: str) -> None:
    """A wrap made with any other OAEP or MGF1 hash is refused as a wrong key (the first
    message of each of the file's ten keys; the other five add only RSA time)."""
    per_key: dict[int, OaepVector] = {}
    for vector in OAEP_VECTORS:
        if vector.file == stem:
            per_key.setdefault(vector.private_key.public_key().public_numbers().n, vector)
    assert len(per_key) == 10
    for vector in per_key.values():
        with pytest.raises(WrongKeyError):
            unwrap_aes_key(vector.private_key, base64.b64encode(vector.wrapped).decode())

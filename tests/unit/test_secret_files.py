"""Every `file:` secret is read by one reader: regular files only (a symlink to one too),
refused before it is opened otherwise, and never more than the limit whatever the size
says. The /dev/zero and FIFO cases run in a child process under an address-space limit and
a timeout: a reader that is not bounded fails the test instead of filling the machine or
waiting for a writer forever."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from dlpipe.config import ConfigError, Settings
from dlpipe.domain.feeds import FeedError
from dlpipe.secret_files import SECRET_FILE_MAX_BYTES, SecretFileError, read_secret_file

_CHILD_MEMORY_BYTES = 1024 * 2**20
_CHILD_TIMEOUT_S = 60

# Each way a `file:` secret is read: the feeds file's check, the token, the private key.
_READERS = {
    "feeds file": """
from pathlib import Path
from dlpipe.domain.feeds import FeedError
from dlpipe.feeds_file import load_feeds_file
toml = Path(sys.argv[2]).parent / "feeds.toml"
toml.write_text(
    '[feeds.b]\\nprovider_base_url = "https://api.b.example/"\\nschedule = "rate(1 day)"\\n'
    'time_zone = "UTC"\\ndestination_prefix = "b"\\nprivate_key_secret = "k"\\n'
    f'token_secret = "file:{sys.argv[2]}"\\n'
)
try:
    load_feeds_file(toml)
except FeedError as exc:
    print(exc)
""",
    "token": """
from dlpipe.adapters.provider_token import token_from_settings
from dlpipe.config import ConfigError, Settings
try:
    token_from_settings(Settings(provider_token_file=sys.argv[2]), None)
except ConfigError as exc:
    print(exc)
""",
    "private key": """
from dlpipe.adapters.keys import private_key_from_settings
from dlpipe.config import ConfigError, Settings
try:
    private_key_from_settings(Settings(private_key_file=sys.argv[2]), None)
except ConfigError as exc:
    print(exc)
""",
}


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_CHILD_MEMORY_BYTES, _CHILD_MEMORY_BYTES))


def _refusal_in_child(reader: str, path: Path | str) -> str:
    """The one line the reader's caller printed for `path`, run in a bounded child."""
    code = "import sys\n" + _READERS[reader]
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, reader, str(path)],
            capture_output=True,
            text=True,
            timeout=_CHILD_TIMEOUT_S,
            preexec_fn=_limited,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the {reader} reader blocked on {path}")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    return lines[0]


@pytest.mark.parametrize("reader", sorted(_READERS))
def test_a_device_is_refused_unread(reader: str) -> None:
    message = _refusal_in_child(reader, "/dev/zero")
    assert "/dev/zero" in message
    assert "is a device, not a regular file" in message


@pytest.mark.parametrize("reader", sorted(_READERS))
def test_a_fifo_is_refused_without_opening_it(reader: str, tmp_path: Path) -> None:
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    message = _refusal_in_child(reader, fifo)
    assert "is a FIFO, not a regular file" in message
    assert str(fifo) in message


def test_each_reader_names_the_setting_or_field() -> None:
    """The feeds file names feed and field; the token and key name their setting."""
    assert "feeds.b.token_secret: file '/dev/zero'" in _refusal_in_child("feeds file", "/dev/zero")
    assert "provider token file '/dev/zero'" in _refusal_in_child("token", "/dev/zero")
    assert "RSA private key file '/dev/zero'" in _refusal_in_child("private key", "/dev/zero")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    from dlpipe.adapters.provider_token import token_from_settings

    with pytest.raises(ConfigError, match="is a directory, not a regular file"):
        token_from_settings(Settings(provider_token_file=str(tmp_path)), None)  # type: ignore[arg-type]
    with pytest.raises(FeedError):
        _feeds_with_token(tmp_path, f"file:{tmp_path}")


def _feeds_with_token(folder: Path, token_secret: str) -> object:
    from dlpipe.feeds_file import load_feeds_file

    toml = folder / "feeds.toml"
    toml.write_text(
        '[feeds.b]\nprovider_base_url = "https://api.b.example/"\nschedule = "rate(1 day)"\n'
        'time_zone = "UTC"\ndestination_prefix = "b"\nprivate_key_secret = "k"\n'
        f'token_secret = "{token_secret}"\n'
    )
    return load_feeds_file(toml)


def test_a_symlink_to_a_regular_file_is_read(tmp_path: Path) -> None:
    from dlpipe.adapters.provider_token import token_from_settings

    (tmp_path / "real").write_text("tok-123\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    token = token_from_settings(Settings(provider_token_file=str(tmp_path / "link")), None)  # type: ignore[arg-type]
    assert token == "tok-123"
    assert _feeds_with_token(tmp_path, f"file:{tmp_path / 'link'}")


def test_a_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/dev/zero")
    with pytest.raises(SecretFileError, match="is a device"):
        read_secret_file(str(tmp_path / "link"))


def test_a_file_past_the_limit_is_refused_and_its_content_never_shown(tmp_path: Path) -> None:
    big = tmp_path / "key.pem"
    big.write_bytes(b"CANARY" * (SECRET_FILE_MAX_BYTES // 6 + 1))
    with pytest.raises(SecretFileError) as refused:
        read_secret_file(str(big))
    assert f"larger than {SECRET_FILE_MAX_BYTES} bytes" in str(refused.value)
    assert "CANARY" not in str(refused.value)


def test_the_limit_holds_whatever_the_size_says(tmp_path: Path) -> None:
    """A file at the limit reads whole; one byte more is refused, by the bytes read."""
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 10)
    assert read_secret_file(str(exact), limit=10) == b"x" * 10
    with pytest.raises(SecretFileError, match="larger than 9 bytes"):
        read_secret_file(str(exact), limit=9)

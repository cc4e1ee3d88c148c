"""Reading a `file:PATH` secret (a token, a PEM key): the one reader every caller uses.

A secret file is a regular file (a symlink is followed to one); a device, FIFO, socket or
directory is refused before it is opened, since `/dev/zero` reports a size of 0 and then
never ends, and opening a FIFO blocks until a writer comes. The read takes at most
`limit + 1` bytes whatever the file's size says, so a file that grows is still bounded. The
error names the path and what is wrong, never a byte of what the file holds.
"""

from __future__ import annotations

import os
import stat

from dlpipe.domain.feeds import PEM_MAX_BYTES

SECRET_FILE_MAX_BYTES = PEM_MAX_BYTES  # a 4096-bit RSA key in PEM is about 3.3 KB


class SecretFileError(ValueError):
    """The file cannot be a secret; the message says why, in a few words, without the path
    (the caller names the setting and the path)."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_secret_file(path: str, limit: int = SECRET_FILE_MAX_BYTES) -> bytes:
    """The bytes of the regular file at `path` (symlinks followed), at most `limit`;
    SecretFileError for anything else, or a file larger than `limit`."""
    try:
        mode = os.stat(path).st_mode  # follows symlinks: a link to a regular file is accepted
        if not stat.S_ISREG(mode):
            raise SecretFileError(f"is {_kind(mode)}, not a regular file: not a secret")
        # O_NONBLOCK: should the path become a FIFO after the check, opening it does not wait.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise SecretFileError(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    with os.fdopen(descriptor, "rb") as handle:
        opened = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(opened):  # swapped between the check and the open
            raise SecretFileError(f"is {_kind(opened)}, not a regular file: not a secret")
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise SecretFileError(
                f"cannot be read ({exc.strerror or type(exc).__name__})"
            ) from None
    if len(data) > limit:
        raise SecretFileError(f"is larger than {limit} bytes: not a secret")
    return data


def read_secret_text(path: str, limit: int = SECRET_FILE_MAX_BYTES) -> str:
    """`read_secret_file` decoded as UTF-8; SecretFileError if it is not UTF-8 text."""
    try:
        return read_secret_file(path, limit).decode("utf-8")
    except UnicodeDecodeError:
        raise SecretFileError("is not UTF-8 text: not a secret") from None

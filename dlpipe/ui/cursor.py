"""The files table's page cursor: a BatchIndex key (FileID, BatchShard, Status) to go on after,
opaque in the URL (base64 of its JSON), and checked on the way back in, since anyone can edit
a URL."""

from __future__ import annotations

import base64
import binascii
import json

from dlpipe.domain.model import JobStatus
from dlpipe.domain.schema import BATCH_INDEX, JOBS_HASH_KEY, JOBS_INDEXES
from dlpipe.domain.shards import batch_shard_number
from dlpipe.ui.options import BadRequestError

MAX_CURSOR_CHARS = 800  # three short key attributes; anything longer was not made here
_BATCH, _STATUS = JOBS_INDEXES[BATCH_INDEX]
_KEYS = frozenset({JOBS_HASH_KEY, _BATCH, _STATUS})  # the table's key and BatchIndex's


def encode_cursor(key: dict[str, str]) -> str:
    """The URL form of a LastEvaluatedKey."""
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(text: str, batch_id: str, status: JobStatus | None) -> dict[str, str]:
    """The LastEvaluatedKey in `text`, if it is one this page could have given for `batch_id`
    (and `status`); BadRequestError otherwise."""
    refused = BadRequestError("the page cursor is not one this page gave: start from page 1")
    if len(text) > MAX_CURSOR_CHARS:
        raise refused
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        key = json.loads(raw.decode())
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise refused from None
    if not isinstance(key, dict) or set(key) != _KEYS:
        raise refused
    if not all(isinstance(v, str) and v.isprintable() and 0 < len(v) <= 200 for v in key.values()):
        raise refused
    if batch_shard_number(key[_BATCH], batch_id) is None or key[_STATUS] not in set(JobStatus):
        raise refused
    if status is not None and key[_STATUS] != str(status):
        raise refused
    return {str(k): str(v) for k, v in key.items()}

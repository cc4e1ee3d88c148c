"""The SQS message that names one job: what the poller and operators send, what workers read."""

from __future__ import annotations

import json
from dataclasses import dataclass

from dlpipe.domain.model import parse_batch_key, parse_file_key


class MalformedMessageError(ValueError):
    """A message body that is not a job message; it can never succeed."""


@dataclass(frozen=True)
class JobMessage:
    """One FileID to download, and the batch it was queued for."""

    file_id: str
    batch_id: str


def encode_message(message: JobMessage) -> str:
    """The SQS MessageBody for `message`."""
    return json.dumps({"file_id": message.file_id, "batch_id": message.batch_id}, sort_keys=True)


def decode_message(body: str) -> JobMessage:
    """Parse and validate a MessageBody; MalformedMessageError if it is not a job message."""
    try:
        data = json.loads(body)
    except (TypeError, ValueError) as exc:
        raise MalformedMessageError("message body is not JSON") from exc
    if not isinstance(data, dict):
        raise MalformedMessageError("message body is not a JSON object")
    try:
        file_id = data["file_id"]
        batch_id = data["batch_id"]
        # Parsed, not read with a fallback: a key that is not one makes the message malformed.
        of_file, of_batch = parse_file_key(file_id)[0], parse_batch_key(batch_id)[0]
    except (KeyError, ValueError) as exc:
        raise MalformedMessageError(f"not a job message: {exc}") from exc
    # Keys never cross feeds: a job is only ever part of a batch of its own feed.
    if of_file != of_batch:
        raise MalformedMessageError(
            f"not a job message: FileID and BatchID are of different feeds ({of_file}, {of_batch})"
        )
    return JobMessage(file_id=file_id, batch_id=batch_id)

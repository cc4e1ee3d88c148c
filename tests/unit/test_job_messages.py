"""A job message names one FileID and its batch, of one feed: keys never cross feeds."""

from __future__ import annotations

import pytest

from dlpipe.domain.messages import JobMessage, MalformedMessageError, decode_message, encode_message

UID = "0b6c3f4e-8a7d-4c1b-9e2f-3a5b6c7d8e9f"


@pytest.mark.parametrize(
    ("file_id", "batch_id"),
    [
        ("accounts-2026-02-28", f"batch-2026-02-28-{UID}"),
        ("vendor-b.accounts-2026-02-28", f"vendor-b.batch-2026-02-28-{UID}"),
    ],
)
def test_a_feeds_message_round_trips(file_id: str, batch_id: str) -> None:
    """The default feed's messages as before; a named feed's keys as they are."""
    message = JobMessage(file_id=file_id, batch_id=batch_id)
    assert decode_message(encode_message(message)) == message


@pytest.mark.parametrize(
    ("file_id", "batch_id"),
    [
        ("vendor-b.accounts-2026-02-28", f"batch-2026-02-28-{UID}"),
        ("accounts-2026-02-28", f"vendor-b.batch-2026-02-28-{UID}"),
        ("vendor-b.accounts-2026-02-28", f"vendor-c.batch-2026-02-28-{UID}"),
    ],
)
def test_a_message_whose_file_and_batch_are_of_different_feeds_is_malformed(
    file_id: str, batch_id: str
) -> None:
    """A job of one feed is never processed as part of another feed's batch."""
    body = encode_message(JobMessage(file_id=file_id, batch_id=batch_id))
    with pytest.raises(MalformedMessageError, match="of different feeds"):
        decode_message(body)

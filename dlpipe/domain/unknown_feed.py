"""How long a job waits for a feed its downloader does not know: a plain rule on deliveries.

A downloader that meets a job of a feed it cannot find (after re-reading its configuration)
leaves the message for a later delivery, here or at another downloader, hidden a little
longer each time. The job ends `error` (`unknown_feed`) only on the message's LAST_DELIVERY-th
delivery (SQS's ApproximateReceiveCount): the smallest maxReceiveCount terraform/variables.tf
accepts, so the job always ends before the redrive policy could dead-letter its message,
whatever the queue's configured count. docs/ARCHITECTURE.md, "Why a job waits for its feed".
"""

from __future__ import annotations

LAST_DELIVERY = 5  # terraform/variables.tf: max_receive_count >= 5
FIRST_DELAY_S = 30  # longer than the re-read interval of the feed sources (feed_settings.py)


def unknown_feed_delay_s(receive_count: int) -> int | None:
    """Seconds the message stays hidden after its `receive_count`-th delivery found the feed
    unknown: 30, 60, 120, 240; None from the LAST_DELIVERY-th on, when the job ends."""
    if receive_count >= LAST_DELIVERY:
        return None
    return FIRST_DELAY_S << (max(receive_count, 1) - 1)

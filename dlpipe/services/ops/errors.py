"""Errors of the operator use cases (the CLI shows each as one line)."""

from __future__ import annotations


class NoBatchForDateError(LookupError):
    """The polling date has no batch at all (the poller never ran for it)."""


class UnknownFeedError(NoBatchForDateError):
    """The chosen feed is not configured, and the date has no batch of it either: a typo, or
    a feed that was never here (a feed removed since still shows the days it ran)."""


class EndedBatchError(ValueError):
    """Files asked to be requeued belong to a batch that has ended: requeued, they would leave
    the day as it ended; the message names what repairs it (a new run of the day)."""

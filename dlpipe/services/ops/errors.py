"""Errors of the operator use cases (the CLI shows each as one line)."""

from __future__ import annotations


class NoBatchForDateError(LookupError):
    """The polling date has no batch at all (the poller never ran for it)."""

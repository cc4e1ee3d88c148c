"""What the pre-run checks (preflight.py) ask of the dependencies a run needs (ports:
`dlpipe.bootstrap.orchestrator` builds them on the adapters, dlpipe/adapters/readiness.py,
which classify each fault at their edge)."""

from __future__ import annotations

from typing import Protocol


class ReadinessProbe(Protocol):
    """One dependency (a table, the queue, the provider token), asked once if it answers."""

    def check(self) -> None:
        """Return if it answers; DependencyUnavailableError for a fault that may pass,
        NotReadyError (or ConfigError) for one that will not."""


class ListingProbe(Protocol):
    """The provider, asked once for the day's listing."""

    def check_listing(self, date: str) -> None:
        """Return if the provider answers 200 to our token; a ProviderError if not,
        NotReadyError if its URL is not usable."""

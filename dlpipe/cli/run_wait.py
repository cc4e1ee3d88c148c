"""`dlpipe run`'s start through a provider outage: the pre-run checks (check_ready) tried again
while the provider is unavailable (5xx, 429, unreachable), within the feed's provider outage
budget (DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS, the budget the orchestrator waits out at fetch
time), saying so on one line: updated in place on a terminal, else once a minute. Any other
refusal (a bad token, a missing queue) stops the run at once, as before."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console

from dlpipe.config import ENV_PROVIDER_OUTAGE_BUDGET_SECONDS
from dlpipe.domain.errors import NotReadyError
from dlpipe.domain.provider_errors import ProviderUnavailableError

MAX_RETRY_INTERVAL_S = 30  # how often a long outage is asked about again
_LOG_EVERY_S = 60  # off a terminal: one line a minute


def retry_interval(budget_s: int) -> float:
    """Seconds between checks: a tenth of the budget, 1 to MAX_RETRY_INTERVAL_S."""
    return float(min(MAX_RETRY_INTERVAL_S, max(1, budget_s // 10)))


def ready_within_outage(
    check: Callable[[], None],
    budget_s: int,
    err: Console,
    *,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> float:
    """Run `check` until it passes; while it fails because the provider is unavailable, wait
    (at most `budget_s` in all) and say so. Returns the seconds waited; NotReadyError (one
    line) when another check fails or the budget is spent."""
    started: float | None = None
    said_at: float | None = None
    while True:
        try:
            check()
        except NotReadyError as exc:
            if not isinstance(exc.__cause__, ProviderUnavailableError):
                raise
            now = monotonic()
            started = now if started is None else started
            waited = now - started
            pause = min(retry_interval(budget_s), budget_s - waited)
            if pause <= 0:
                _end_line(err, said_at)
                raise NotReadyError(
                    f"{exc}: still unavailable after {waited:.0f} s, the provider outage budget"
                    f" ({budget_s} s, {ENV_PROVIDER_OUTAGE_BUDGET_SECONDS}) is spent"
                ) from exc
            line = (
                f"{exc}: waiting it out, {waited:.0f} s of the {budget_s} s provider outage"
                f" budget ({ENV_PROVIDER_OUTAGE_BUDGET_SECONDS}) so far"
            )
            if err.is_terminal:
                err.print(f"\r{line}\x1b[K", end="", highlight=False, soft_wrap=True)
                said_at = now
            elif said_at is None or now - said_at >= _LOG_EVERY_S:
                err.print(line, highlight=False, soft_wrap=True)
                said_at = now
            sleep(pause)
        else:
            _end_line(err, said_at)
            return 0.0 if started is None else monotonic() - started


def _end_line(err: Console, said_at: float | None) -> None:
    """End the line updated in place (a terminal's), so the next one starts on its own."""
    if said_at is not None and err.is_terminal:
        err.print()

"""`dlpipe run`'s start through an outage: the feed's lookup and the pre-run checks
(check_ready) tried again while what they need is unavailable for now, each outage within the
budget the orchestrator waits the same outage out with during a day. The provider (5xx, 429,
unreachable) within the provider outage budget (DLPIPE_PROVIDER_OUTAGE_BUDGET_SECONDS); SQS,
DynamoDB, SSM or Secrets Manager (throttling, a 5xx, a timeout, a connection reset) within the
AWS outage budget (DLPIPE_AWS_OUTAGE_BUDGET_SECONDS), each budget on a clock of its own from
its first failure. The provider is asked again every tenth of its budget; AWS after 1 s
doubling to that (a blip of a few seconds costs a few seconds). Saying so on one line that
names what is down: updated in place on a terminal, else once a minute, and a line of its own
when another dependency is the one down.

Any other refusal (a bad token; a queue, table or parameter missing; access denied; a
connection refused, which at start is a wrong endpoint or an emulator not running) stops the
run at once, as before; past its budget the run stops with the outage's own line, saying the
budget is spent."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from rich.console import Console
from rich.control import Control
from rich.segment import ControlType

from dlpipe.adapters.readiness import outages_waited_by_caller, waited_at_start
from dlpipe.cli.safe_text import plain
from dlpipe.config import (
    ENV_AWS_OUTAGE_BUDGET_SECONDS,
    ENV_PROVIDER_OUTAGE_BUDGET_SECONDS,
    Settings,
)
from dlpipe.domain.errors import DependencyUnavailableError, NotReadyError
from dlpipe.domain.provider_errors import ProviderUnavailableError

T = TypeVar("T")

MAX_RETRY_INTERVAL_S = 30  # how often a long outage is asked about again
_LOG_EVERY_S = 60  # off a terminal: one line a minute
_OVERWRITE = Control(ControlType.CARRIAGE_RETURN, (ControlType.ERASE_IN_LINE, 2))
# How the waiting line names an AWS dependency (the probes name it by its botocore service).
_NAMES = {
    "dynamodb": "DynamoDB",
    "sqs": "SQS",
    "ssm": "SSM",
    "secretsmanager": "Secrets Manager",
    "s3": "S3",
    "events": "EventBridge",
}


def retry_interval(budget_s: int) -> float:
    """Seconds between checks: a tenth of the budget, 1 to MAX_RETRY_INTERVAL_S."""
    return float(min(MAX_RETRY_INTERVAL_S, max(1, budget_s // 10)))


def aws_retry_interval(failures: int, budget_s: int) -> float:
    """Seconds before checking again after `failures` (1-based) failed checks of an AWS
    dependency: 1 s doubling to retry_interval(budget_s)."""
    return min(2.0 ** min(max(failures, 1) - 1, 5), retry_interval(budget_s))


@dataclass(frozen=True)
class OutageBudgets:
    """The seconds a start waits each kind of outage out: the orchestrator's own budgets."""

    provider_s: int
    aws_s: int

    @classmethod
    def of(cls, settings: Settings) -> OutageBudgets:
        """The settings' budgets (a feed overrides neither: dlpipe/feed_settings.py)."""
        return cls(settings.provider_outage_budget_seconds, settings.aws_outage_budget_seconds)


@dataclass(frozen=True)
class _Outage:
    """What a failed check waits for: which budget, and what is down (for the line)."""

    budget: str  # "provider" or "AWS": the budget's name, and its clock
    down: str  # "the provider", "SQS", ...
    budget_s: int
    variable: str

    def interval(self, failures: int) -> float:
        """Seconds before the next check, after `failures` failed ones of this outage."""
        if self.budget == "provider":
            return retry_interval(self.budget_s)
        return aws_retry_interval(failures, self.budget_s)

    def waiting(self, exc: Exception, waited: float) -> str:
        unavailable = "" if self.budget == "provider" else f" ({self.down} unavailable)"
        return (
            f"{exc}: waiting it out{unavailable}, {waited:.0f} s of the {self.budget_s} s"
            f" {self.budget} outage budget ({self.variable}) so far"
        )

    def spent(self, exc: Exception, waited: float) -> str:
        return (
            f"{exc}: still unavailable after {waited:.0f} s, the {self.budget} outage budget"
            f" ({self.budget_s} s, {self.variable}) is spent"
        )


def _outage(exc: Exception, budgets: OutageBudgets) -> _Outage | None:
    """The outage `exc` says the start is in, None for a fault that will not pass by itself.

    The provider's and the probes' faults come as NotReadyError caused by the outage; the
    feed's lookup raises SSM's DependencyUnavailableError itself."""
    cause = exc.__cause__ if isinstance(exc, NotReadyError) else exc
    if isinstance(exc, NotReadyError) and isinstance(cause, ProviderUnavailableError):
        return _Outage(
            "provider", "the provider", budgets.provider_s, ENV_PROVIDER_OUTAGE_BUDGET_SECONDS
        )
    if isinstance(cause, DependencyUnavailableError) and waited_at_start(cause):
        down = _NAMES.get(cause.dependency.lower(), cause.dependency)
        return _Outage("AWS", down, budgets.aws_s, ENV_AWS_OUTAGE_BUDGET_SECONDS)
    return None


def ready_within_outage(
    check: Callable[[], T],
    budgets: OutageBudgets,
    err: Console,
    *,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> T:
    """Run `check` until it passes and return what it returns; while it fails because the
    provider or an AWS dependency is unavailable, wait (at most that outage's budget in all)
    and say so. The probes' passing faults reach this wait at once (outages_waited_by_caller),
    not after the checks' own short wait. NotReadyError (one line) when a budget is spent;
    any other failure of `check` as it was raised."""
    started: dict[str, float] = {}  # each budget's clock: from its first failure
    failures: dict[str, int] = {}  # and its failed checks
    said: tuple[str, float] | None = None  # what the last line named, and when
    while True:
        try:
            with outages_waited_by_caller():
                value = check()
        except (NotReadyError, DependencyUnavailableError) as exc:
            outage = _outage(exc, budgets)
            if outage is None:
                _end_line(err, said)
                raise
            now = monotonic()
            waited = now - started.setdefault(outage.budget, now)
            failures[outage.budget] = failures.get(outage.budget, 0) + 1
            pause = min(outage.interval(failures[outage.budget]), outage.budget_s - waited)
            if pause <= 0:
                _end_line(err, said)
                raise NotReadyError(outage.spent(exc, waited)) from exc
            said = _say(err, outage.waiting(exc, waited), outage.down, now, said)
            sleep(pause)
        else:
            _end_line(err, said)
            return value


def _say(
    err: Console, line: str, down: str, now: float, said: tuple[str, float] | None
) -> tuple[str, float] | None:
    """Show the waiting line (its text escaped: it quotes AWS's and the provider's): in place
    on a terminal (a new line when another dependency is down), else when it names another
    dependency or a minute after the last. Returns what was said last."""
    if err.is_terminal:
        if said is not None and said[0] != down:
            err.print()  # the earlier dependency's line stays on screen
        # As controls: rich drops a carriage return written in the text.
        err.control(_OVERWRITE)
        err.print(plain(line), end="", soft_wrap=True)
        return down, now
    if said is None or said[0] != down or now - said[1] >= _LOG_EVERY_S:
        err.print(plain(line), soft_wrap=True)
        return down, now
    return said


def _end_line(err: Console, said: tuple[str, float] | None) -> None:
    """End the line updated in place (a terminal's), so the next one starts on its own."""
    if said is not None and err.is_terminal:
        err.print()

"""Backfill: start the poller for every date in a range that has no completed batch yet."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.model import Batch, BatchStatus
from dlpipe.domain.transitions import batch_to_attach
from dlpipe.log import get_logger

MAX_BACKFILL_DAYS = 92


class Starter(Protocol):
    """Starts the poller for one date (the orchestrator Lambda, or a local runner)."""

    def start(self, polling_date: str, rerun: bool) -> str:
        """Start the run; return a short note on what was started."""
        ...


class LambdaInvoker(Protocol):
    """The part of a boto3 Lambda client the starter uses."""

    def invoke(self, **request: Any) -> Mapping[str, Any]:
        """Lambda Invoke."""
        ...


class LambdaStarter:
    """Invokes the durable orchestrator asynchronously through its qualified (alias) ARN."""

    def __init__(self, client: LambdaInvoker, function_arn: str) -> None:
        # Durable functions only run from a qualified ARN: arn:aws:lambda:r:acct:function:name:alias
        if function_arn.count(":") != 7:
            raise ConfigError(
                f"orchestrator_arn must be a qualified (alias) ARN, got {function_arn!r}"
            )
        self._client = client
        self.function_arn = function_arn

    def start(self, polling_date: str, rerun: bool) -> str:
        """Invoke with `{"date": D, "rerun": bool}` as an Event (fire and forget)."""
        response = self._client.invoke(
            FunctionName=self.function_arn,
            InvocationType="Event",
            Payload=json.dumps({"date": polling_date, "rerun": rerun}).encode(),
        )
        return f"invoked (HTTP {response.get('StatusCode')})"


def lambda_starter(settings: Settings, clients: AwsClients) -> LambdaStarter:
    """The starter for AWS, from DLPIPE_ORCHESTRATOR_ARN (ConfigError if unset)."""
    # A config error before any client is built, naming what works without an orchestrator.
    if not settings.orchestrator_arn:
        raise ConfigError(
            "DLPIPE_ORCHESTRATOR_ARN is not set: backfill starts the deployed orchestrator;"
            " without one, `dlpipe run --date D` runs a date's poller in this shell"
        )
    arn = settings.orchestrator_arn
    return LambdaStarter(clients.lambda_, arn)


@dataclass(frozen=True)
class DayPlan:
    """What backfill does for one date, and why."""

    polling_date: str
    start: bool
    reason: str
    result: str = ""


def decide(polling_date: str, batches: Sequence[Batch], rerun: bool) -> DayPlan:
    """Start unless a batch is running or completed; `rerun` starts those days too."""
    joined = batch_to_attach(batches, rerun=rerun)  # what the poller's run would attach to
    if joined is not None and not joined.is_terminal:
        # The flow attaches to a running batch: a rerun only adds a poller (for an orphan).
        return DayPlan(polling_date, rerun, f"running: {joined.batch_id}")
    if joined is not None:
        return DayPlan(polling_date, False, f"completed: {joined.batch_id}")
    if any(b.status is BatchStatus.COMPLETED for b in batches):
        return DayPlan(polling_date, True, "rerun of a completed day")
    last = f"last batch {batches[-1].status}" if batches else "no batch"
    return DayPlan(polling_date, True, last)


def backfill(
    batches: BatchesTable,
    dates: Sequence[str],
    *,
    rerun: bool,
    starter: Starter | None,
    advance: Callable[[str], None] = lambda _day: None,
) -> list[DayPlan]:
    """Decide each date from PollingDateIndex and start the poller where due (no starter: dry run)."""
    plans = []
    for day in dates:
        plan = decide(day, batches.query_by_date(day), rerun)
        if plan.start and starter is not None:
            plan = DayPlan(day, True, plan.reason, starter.start(day, rerun))
            get_logger(component="ops").info(
                "dlpipe.services.ops.backfill.started", date=day, rerun=rerun, result=plan.result
            )
        plans.append(plan)
        advance(day)
    return plans

"""Starting the deployed orchestrator for one date: an asynchronous Lambda Invoke.

A refused Invoke (no such function, access denied) raises AwsRequestError, one line."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from dlpipe.adapters.aws import AwsClients
from dlpipe.adapters.aws_errors import raise_request_error
from dlpipe.config import ConfigError, Settings
from dlpipe.domain.feeds import DEFAULT_FEED_NAME


class LambdaInvoker(Protocol):
    """The part of a boto3 Lambda client the starter uses."""

    def invoke(self, **request: Any) -> Mapping[str, Any]:
        """Lambda Invoke."""
        ...


class LambdaStarter:
    """Invokes the durable orchestrator asynchronously through its qualified (alias) ARN."""

    def __init__(
        self,
        client: LambdaInvoker,
        function_arn: str,
        *,
        new_suffix: Callable[[], str] = lambda: uuid.uuid4().hex[:8],
    ) -> None:
        # Durable functions only run from a qualified ARN: arn:aws:lambda:r:acct:function:name:alias
        if function_arn.count(":") != 7:
            raise ConfigError(
                f"orchestrator_arn must be a qualified (alias) ARN, got {function_arn!r}"
            )
        self._client = client
        self.function_arn = function_arn
        self._new_suffix = new_suffix

    def start(self, polling_date: str, rerun: bool, feed: str = DEFAULT_FEED_NAME) -> str:
        """Invoke with `{"date": D, "rerun": bool}` as an Event (fire and forget); a named
        feed's day also says `"feed"` (the default feed's event names none).

        The durable execution is named `{feed}-{date}-{8 hex}`: an operator finds a feed's day
        among the executions by its name, and two feeds' days never share one. The suffix is
        new on every start: a name is an idempotency key to Lambda, and an existing one (the
        day's earlier, failed execution) would hand back that execution instead of a new run;
        starting a day twice is made harmless by the tables' conditional writes instead."""
        event: dict[str, object] = {"date": polling_date, "rerun": rerun}
        if feed != DEFAULT_FEED_NAME:
            event["feed"] = feed
        try:
            response = self._client.invoke(
                FunctionName=self.function_arn,
                InvocationType="Event",
                Payload=json.dumps(event).encode(),
                DurableExecutionName=f"{feed}-{polling_date}-{self._new_suffix()}",
            )
        except (ClientError, BotoCoreError) as exc:
            raise_request_error(exc, "Lambda", "Invoke", self.function_arn.split(":")[6])
        return f"invoked (HTTP {response.get('StatusCode')})"


def lambda_starter(settings: Settings, clients: AwsClients) -> LambdaStarter:
    """The starter for AWS, from DLPIPE_ORCHESTRATOR_ARN (ConfigError if unset)."""
    # A config error before any client is built, naming what works without an orchestrator.
    if not settings.orchestrator_arn:
        raise ConfigError(
            "DLPIPE_ORCHESTRATOR_ARN is not set: backfill starts the deployed orchestrator;"
            " without one, `dlpipe run --date D` runs a date's poller in this shell"
        )
    return LambdaStarter(clients.lambda_, settings.orchestrator_arn)

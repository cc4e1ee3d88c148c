"""The local AWS behind fault proxies: one proxy in front of DynamoDB Local, one in front of
moto (S3 and SQS), sharing one plan; and the environment that points dlpipe at them through
AWS's standard endpoint variables. Presigned provider URLs name moto directly and stay
unproxied; so does Secrets Manager (AWS_ENDPOINT_URL)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager

from dlpipe.config import (
    ENV_ENDPOINT_URL,
    ENV_ENDPOINT_URL_DYNAMODB,
    ENV_ENDPOINT_URL_S3,
    ENV_ENDPOINT_URL_SQS,
)
from tests.faults.proxy import FaultProxy
from tests.faults.rules import FaultPlan


class FaultyAws:
    """Proxies in front of both emulators of `aws_env` (the session's environment)."""

    def __init__(self, aws_env: Mapping[str, str], plan: FaultPlan) -> None:
        self.plan = plan
        self.base_env = dict(aws_env)
        self.dynamodb = FaultProxy(aws_env[ENV_ENDPOINT_URL_DYNAMODB], plan)
        self.moto = FaultProxy(aws_env[ENV_ENDPOINT_URL], plan)

    def environment(self) -> dict[str, str]:
        """`aws_env` with DynamoDB, S3 and SQS sent through the proxies."""
        return {
            **self.base_env,
            ENV_ENDPOINT_URL_DYNAMODB: self.dynamodb.url,
            ENV_ENDPOINT_URL_S3: self.moto.url,
            ENV_ENDPOINT_URL_SQS: self.moto.url,
        }

    def use(self, plan: FaultPlan) -> None:
        """Both proxies apply `plan` from now on (one clock: its windows start now)."""
        self.plan = plan
        self.dynamodb.use(plan)
        self.moto.use(plan)

    def requests(self) -> dict[str, int]:
        """Requests both proxies saw, by `service.Operation`."""
        return {**self.dynamodb.requests, **self.moto.requests}

    @contextmanager
    def running(self) -> Iterator[FaultyAws]:
        """Both proxies serve while the block runs; stopped on exit."""
        with ExitStack() as stack:
            stack.enter_context(self.dynamodb.running())
            stack.enter_context(self.moto.running())
            yield self

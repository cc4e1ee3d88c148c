"""The pre-run checks on their probe ports: a fault that may pass is waited out, one that will
not is refused at once, and the adapter's probe sorts botocore's faults into the two."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from dlpipe.adapters.readiness import AwsProbe
from dlpipe.domain.errors import DependencyUnavailableError, NotReadyError
from dlpipe.domain.provider_errors import ProviderAuthError
from dlpipe.services.orchestrator import preflight
from dlpipe.services.orchestrator.preflight import check_probes

DAY = "2026-02-28"
URL = "http://127.0.0.1:1"


@dataclass
class Probe:
    """Raises `faults` in turn, then answers; counts the checks."""

    faults: list[Exception] = field(default_factory=list)
    checks: int = 0

    def check(self) -> None:
        self.checks += 1
        if self.faults:
            raise self.faults.pop(0)


@dataclass
class Provider:
    fault: Exception | None = None
    dates: list[str] = field(default_factory=list)

    def check_listing(self, date: str) -> None:
        self.dates.append(date)
        if self.fault is not None:
            raise self.fault


def client_error(code: str, status: int) -> ClientError:
    response = {
        "Error": {"Code": code, "Message": "m"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, "GetQueueAttributes")  # type: ignore[arg-type]


def test_a_passing_fault_is_waited_out_and_the_provider_is_asked_last() -> None:
    queue = Probe([DependencyUnavailableError("sqs busy")] * 2)
    provider = Provider()
    check_probes([Probe(), queue], provider, URL, DAY)
    assert (queue.checks, provider.dates) == (3, [DAY])


def test_a_fault_that_will_not_pass_is_refused_at_once() -> None:
    table, later = Probe([NotReadyError("table 'jobs' does not exist at X")]), Probe()
    with pytest.raises(NotReadyError, match="does not exist"):
        check_probes([table, later], Provider(), URL, DAY)
    assert (table.checks, later.checks) == (1, 0)


def test_a_fault_that_outlasts_the_wait_is_refused_saying_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(preflight, "TRANSIENT_WAIT_S", 0.0)
    with pytest.raises(NotReadyError, match=re.escape("sqs busy (still failing after 0 s)")):
        check_probes([Probe([DependencyUnavailableError("sqs busy")] * 99)], Provider(), URL, DAY)


def test_the_provider_refusing_the_token_names_the_settings() -> None:
    provider = Provider(ProviderAuthError(401))
    with pytest.raises(NotReadyError, match=re.escape("refused the token (HTTP 401)")):
        check_probes([], provider, URL, DAY)


@pytest.mark.parametrize(
    ("fault", "raised", "message"),
    [
        (client_error("InternalError", 500), DependencyUnavailableError, "kept failing"),
        (client_error("ThrottlingException", 400), DependencyUnavailableError, "kept failing"),
        (ReadTimeoutError(endpoint_url=URL), DependencyUnavailableError, "cannot reach sqs"),
        (client_error("QueueDoesNotExist", 400), NotReadyError, "the queue does not exist at"),
        (client_error("AccessDenied", 403), NotReadyError, "refused the check of the queue"),
        (EndpointConnectionError(endpoint_url=URL), NotReadyError, "cannot reach sqs"),
        (ValueError("Invalid endpoint: x"), NotReadyError, "sqs: Invalid endpoint"),
    ],
)
def test_the_aws_probe_sorts_botocores_faults(
    fault: Exception, raised: type[Exception], message: str
) -> None:
    def call() -> None:
        raise fault

    with pytest.raises(raised, match=message) as caught:
        AwsProbe("sqs", URL, "the queue", call).check()
    assert type(caught.value) is raised

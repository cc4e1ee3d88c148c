"""Large files: the routing rule, the time-budget rule, and every send going through them."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dlpipe.adapters.download_queue import MessageVisibility
from dlpipe.adapters.queue import JobQueue
from dlpipe.domain.download_errors import TooLargeForWorkerError, TransientError
from dlpipe.domain.errors import QueueSendError
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import FileJob
from dlpipe.domain.routing import (
    DEFAULT_LARGE_FILE_THRESHOLD_BYTES,
    MIB,
    Budget,
    Route,
    TimeBudget,
    budget_decision,
    large_file_threshold_bytes,
    route_for,
    seconds_needed,
    too_large_message,
)
from dlpipe.entrypoints.dispatch import dispatch
from dlpipe.entrypoints.lambda_batch import DEADLINE_MARGIN_S, invocation_budget
from dlpipe.services.download.service import Outcome, ProcessResult
from tests.support import make_job, new_batch_id

MAIN = "http://127.0.0.1:1/000000000000/main"
LARGE = "http://127.0.0.1:1/000000000000/large"
THRESHOLD = 100 * MIB


def test_default_threshold_is_lambda_timeout_times_minimum_throughput_times_one_half() -> None:
    """900 s x 20 MiB/s x 1/2 = 9000 MiB, and the formula follows the timeout."""
    assert DEFAULT_LARGE_FILE_THRESHOLD_BYTES == 9000 * MIB == 9_437_184_000
    assert large_file_threshold_bytes(600) == 6000 * MIB


@pytest.mark.parametrize(
    ("size", "has_large_queue", "expected"),
    [
        (THRESHOLD + 1, True, Route.LARGE),
        (THRESHOLD, True, Route.MAIN),  # at the threshold it still fits the Lambda
        (0, True, Route.MAIN),
        (None, True, Route.MAIN),  # unknown size: the Lambda's own budget check decides
        (THRESHOLD * 10, False, Route.MAIN),  # no large queue: the threshold is infinite
    ],
)
def test_route_for_sends_only_files_above_the_threshold_to_an_existing_large_queue(
    size: int | None, has_large_queue: bool, expected: Route
) -> None:
    """Above the threshold and a large queue exists: LARGE; anything else: MAIN."""
    assert route_for(size, THRESHOLD, has_large_queue) is expected


@pytest.mark.parametrize(
    ("size", "remaining_s", "full_s", "expected"),
    [
        (20 * MIB * 100, 100, 880, Budget.FITS),  # needs exactly 100 s
        (20 * MIB * 100 + 1, 100, 880, Budget.LATER),  # 101 s: a fresh invocation has it
        (20 * MIB * 881, 880, 880, Budget.TOO_LARGE),  # not even a whole invocation
        (20 * MIB * 10**6, None, None, Budget.FITS),  # unlimited worker
        (None, 1, 1, Budget.FITS),  # unknown size is never refused
    ],
)
def test_budget_decision_compares_the_time_needed_with_now_and_a_whole_invocation(
    size: int | None, remaining_s: float | None, full_s: float | None, expected: Budget
) -> None:
    """Needed = size / 20 MiB/s; more than a whole budget is TOO_LARGE, more than left LATER."""
    assert budget_decision(size, remaining_s, full_s) is expected


def test_too_large_message_names_size_time_needed_and_time_available() -> None:
    """The ErrorMessage says the size, the seconds needed at 20 MiB/s and the worker's budget."""
    error = TooLargeForWorkerError(too_large_message(20 * MIB * 1000, 880.4))
    assert error.error_message == (
        "too_large_for_worker: 20971520000 bytes needs ~1000 s at the minimum throughput, "
        "this worker has 880 s"
    )
    assert isinstance(error, TransientError)  # the job ends `failed`, and can be requeued
    assert seconds_needed(1) == 1


def test_lambda_budget_is_the_remaining_time_less_the_release_margin() -> None:
    """The invocation's whole budget is what was left at its start, minus DEADLINE_MARGIN_S."""
    left = [300_000]
    budget = invocation_budget(SimpleNamespace(get_remaining_time_in_millis=lambda: left[0]))
    assert budget is not None
    left[0] = 100_000
    assert budget.full_s == 300 - DEADLINE_MARGIN_S
    assert budget.remaining_s is not None
    assert budget.remaining_s() == 100 - DEADLINE_MARGIN_S
    assert invocation_budget(None) is None


class FakeSqs:
    """Records every send by queue URL; a URL in `refuse` fails every entry."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.batches: list[tuple[str, list[str]]] = []
        self.single: list[str] = []
        self.visibility: list[int] = []
        self.refuse = refuse

    def send_message_batch(self, QueueUrl: str, Entries: list[Any]) -> dict[str, Any]:
        if QueueUrl in self.refuse:
            return {"Failed": [{"Id": e["Id"], "Code": "Refused"} for e in Entries]}
        self.batches.append((QueueUrl, [e["MessageBody"] for e in Entries]))
        return {"Successful": [], "Failed": []}

    def send_message(self, QueueUrl: str, MessageBody: str, DelaySeconds: int) -> None:
        self.single.append(QueueUrl)

    def change_message_visibility(self, **kwargs: Any) -> None:
        self.visibility.append(kwargs["VisibilityTimeout"])


def job(entity: str, size: int | None) -> FileJob:
    return make_job(entity=entity, expected_size=size)


def queue(sqs: FakeSqs, large: str | None = LARGE) -> JobQueue:
    return JobQueue(
        sqs,  # type: ignore[arg-type]
        MAIN,
        max_attempts=1,
        large_queue_url=large,
        large_file_threshold_bytes=THRESHOLD,
    )


def test_send_jobs_puts_each_job_on_the_queue_its_size_routes_it_to() -> None:
    """One small and one large job: one message on the main queue, one on the large queue."""
    sqs = FakeSqs()
    sent = queue(sqs).send_jobs([job("small", 10), job("big", THRESHOLD + 1)])
    assert sent == 2
    by_queue = {
        url: [b.split('"file_id": "')[1].split("-")[0] for b in bodies]
        for url, bodies in sqs.batches
    }
    assert by_queue == {MAIN: ["small"], LARGE: ["big"]}


def test_send_jobs_without_a_large_queue_sends_everything_to_the_main_queue() -> None:
    """No ECS worker deployed: a huge file still goes to the main queue (the Lambda fails it)."""
    sqs = FakeSqs()
    queue(sqs, large=None).send_jobs([job("big", THRESHOLD * 100)])
    assert [url for url, _ in sqs.batches] == [MAIN]


def test_a_refused_large_queue_reports_only_its_jobs_and_still_sends_the_others() -> None:
    """The large queue refuses: QueueSendError lists the large job; the small one was sent."""
    sqs = FakeSqs(refuse=frozenset({LARGE}))
    with pytest.raises(QueueSendError) as raised:
        queue(sqs).send_jobs([job("small", 10), job("big", THRESHOLD + 1)])
    assert raised.value.failed == [job("big", 1).file_id]
    assert [url for url, _ in sqs.batches] == [MAIN]


class OneResult:
    """A service that answers every message with one result."""

    def __init__(self, result: ProcessResult) -> None:
        self.result = result
        self.budgets: list[TimeBudget | None] = []
        self.deps = SimpleNamespace(stop=threading.Event())

    def process(
        self,
        file_id: str,
        *,
        on_heartbeat: Any = None,
        budget: Any = None,
        receive_count: Any = None,
    ) -> ProcessResult:
        self.budgets.append(budget)
        return self.result


def test_the_delayed_copy_of_a_busy_large_file_goes_to_the_large_queue() -> None:
    """A message received on the main queue for a large file is copied to the large queue."""
    sqs = FakeSqs()
    route = queue(sqs).queue_url_for
    visibility = MessageVisibility(sqs, MAIN, "rh", lambda size, _body: route(size))  # type: ignore[arg-type]
    result = ProcessResult(Outcome.BUSY, retry_after_s=5, size_bytes=THRESHOLD + 1)
    body = encode_message(JobMessage("big-2026-02-28", new_batch_id()))
    assert dispatch(OneResult(result), body, visibility)  # type: ignore[arg-type]
    assert sqs.single == [LARGE]


def test_no_time_left_is_not_acknowledged_and_the_message_comes_back_at_once() -> None:
    """NO_TIME: the message is made visible again for a fresh invocation, never deleted."""
    sqs = FakeSqs()
    service = OneResult(ProcessResult(Outcome.NO_TIME))
    budget = TimeBudget(880, lambda: 5)
    body = encode_message(JobMessage("big-2026-02-28", new_batch_id()))
    acked = dispatch(service, body, MessageVisibility(sqs, MAIN, "rh"), budget)  # type: ignore[arg-type]
    assert not acked
    assert sqs.visibility == [0]
    assert service.budgets == [budget]


SOURCE_PACKAGES = ("dlpipe", "downloader", "orchestrator", "ops", "records", "provider")
# The only places that talk to SQS's send APIs: JobQueue (every job send, routed by size)
# and the delayed copy in dispatch (routed by MessageVisibility's copy_to).
RAW_SEND_ALLOWED = {"dlpipe/adapters/queue.py", "dlpipe/adapters/download_queue.py"}
_RAW_SEND = re.compile(r"\.send_message(_batch)?\(|\bqueue\(\)\.send\(|\.queue\.send\(")


def test_every_job_send_goes_through_the_routing_job_queue() -> None:
    """No module outside JobQueue and the delayed copy calls SQS's send or JobQueue.send."""
    root = Path(__file__).resolve().parents[2]
    offenders = [
        f"{path.relative_to(root)}:{number}"
        for package in SOURCE_PACKAGES
        for path in sorted((root / package).rglob("*.py"))
        if str(path.relative_to(root)) not in RAW_SEND_ALLOWED
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if _RAW_SEND.search(line)
    ]
    assert offenders == []

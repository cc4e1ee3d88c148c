"""The batch sequence, written once against a StepRunner: run inline here, durably in durable.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

from dlpipe.domain.events import PollingRequest
from dlpipe.domain.model import BatchStatus
from dlpipe.domain.outage import exhausted_message
from dlpipe.domain.outcome import OutcomeSummary
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.announce import (
    MANIFEST_FAILED,
    late_if_due,
    publish_outcome,
)
from dlpipe.services.orchestrator.feed_runs import (
    FeedRuns,
    PollingPlan,
    served_request,
    single_feed,
)
from dlpipe.services.orchestrator.ports import (
    BatchFlow,
    BatchRunResult,
    CompletionCheck,
    FetchFailed,
    FlowContractError,
    ProviderOutage,
    QueueResult,
    StepFailed,
    StepRunner,
)
from dlpipe.services.orchestrator.recheck import DayStarter, earlier_date
from dlpipe.services.orchestrator.step_names import (
    STEP_CREATE_BATCH,
    STEP_FAIL_BATCH,
    STEP_RECORD_PROBLEM,
    STEP_WRITE_MANIFEST,
    check_step_name,
    fetch_step_name,
    recheck_step_name,
    wait_name,
)

_T = TypeVar("_T")
log = get_logger(component="orchestrator")


def run_batch(
    steps: StepRunner,
    flow: Callable[[], BatchFlow],
    request: PollingRequest,
    plan: PollingPlan,
    start: DayStarter | None = None,
) -> BatchRunResult:
    """Run the batch to its end (its manifest written), then hand it off: the outcome event
    (announce.py), which names the manifest. `start` starts a run of an earlier day of the
    feed that the restatement window finds restated (recheck.py; None: it is only logged)."""
    result = _run_to_end(steps, flow, request, plan, start)
    if result.handoff_problem is not None:
        return result  # withheld: the batch item and the result say why (announce.py)
    problem = publish_outcome(
        steps, flow, result, feed=request.feed, deadline=plan.deadline, manifest=result.manifest
    )
    return result if problem is None else replace(result, handoff_problem=problem)


def _run_to_end(
    steps: StepRunner,
    flow: Callable[[], BatchFlow],
    request: PollingRequest,
    plan: PollingPlan,
    start: DayStarter | None = None,
) -> BatchRunResult:
    """Create the batch, fetch and queue its files, then poll until it is final.

    A fetch that fails for good (FetchFailed) or a check that fails for good (StepFailed)
    ends the batch failed through the fail-batch step, saying why; the run then returns.
    """
    date = request.polling_date
    batch_id = steps.step(STEP_CREATE_BATCH, lambda: flow().create_batch(date, rerun=request.rerun))
    try:
        _fetch_and_queue(steps, flow, batch_id, date)
    except FetchFailed as exc:
        return _fail(steps, flow, request, batch_id, str(exc) or "provider fetch failed")
    if request.scheduled:
        _recheck_window(steps, flow, date, plan.restatement_window_days, start)
    check = CompletionCheck(None, 0, 0, 0)
    late_sent = plan.deadline is None  # nothing to send without a deadline
    for poll_number in range(1, plan.max_polls + 1):
        steps.wait(wait_name(poll_number), plan.poll_interval_seconds)
        is_last = poll_number == plan.max_polls
        try:
            checked = steps.step(
                check_step_name(poll_number), _checker(flow, batch_id, poll_number, is_last)
            )
        except StepFailed as exc:
            # A DynamoDB throttle that outlasted the step's retries, say: without this the
            # execution would fail and leave the batch queued, with no word of why.
            reason = f"check_failed: {exc}"
            return _fail(steps, flow, request, batch_id, reason, last=check, polls=poll_number)
        check = CompletionCheck.from_dict(checked)
        if check.status is not None:
            counts = (check.completed, check.failed, check.pending)
            ended = BatchRunResult(
                batch_id,
                date,
                check.status,
                *counts,
                poll_number,
                request.rerun,
                error=check.error,
                outcome=check.outcome,
            )
            return _hand_on(steps, flow, ended)
        if not late_sent and plan.deadline is not None:
            day = (request.feed, date, batch_id)
            late_sent = late_if_due(
                steps, flow, check, day=day, poll_number=poll_number, deadline=plan.deadline
            )
    raise FlowContractError(f"batch {batch_id}: no final status after the last poll")


def _recheck_window(
    steps: StepRunner,
    flow: Callable[[], BatchFlow],
    date: str,
    window_days: int,
    start: DayStarter | None,
) -> None:
    """One restatement-check step per earlier day of the window, once the run's own files are
    queued (recheck.py). A step that fails for good is logged: an earlier day's check never
    fails the day this run is for; the next scheduled run checks it again."""
    for days_back in range(1, window_days + 1):
        day = earlier_date(date, days_back)
        try:
            steps.step(recheck_step_name(days_back), _rechecker(flow, day, start))
        except StepFailed as exc:
            log.warning("batch.restatement_check_failed", date=day, cause=str(exc))


def _rechecker(
    flow: Callable[[], BatchFlow], day: str, start: DayStarter | None
) -> Callable[[], dict[str, Any]]:
    # A closure per day, as _checker's per poll.
    return lambda: flow().recheck_day(day, start)


def _fetch_and_queue(
    steps: StepRunner, flow: Callable[[], BatchFlow], batch_id: str, date: str
) -> QueueResult:
    """One step per chunk until the listing ends; a replay returns finished chunks' checkpoints
    and re-runs only the first unfinished one (dlpipe/services/orchestrator/fanout.py)."""
    previous: QueueResult | None = None
    chunk = 1
    while True:
        done = QueueResult.from_dict(
            steps.step(fetch_step_name(chunk), _chunker(flow, batch_id, date, previous))
        )
        if done.done:
            return done
        if done.offset <= (previous.offset if previous else 0):
            raise FlowContractError(f"batch {batch_id}: chunk {chunk} read no listing entry")
        previous, chunk = done, chunk + 1


def _chunker(
    flow: Callable[[], BatchFlow], batch_id: str, date: str, previous: QueueResult | None
) -> Callable[[], dict[str, Any]]:
    # The first chunk is called without `resume` (None: the port's default, the start).
    if previous is None:
        return lambda: flow().fetch_and_queue(batch_id, date).to_dict()
    return lambda: flow().fetch_and_queue(batch_id, date, previous).to_dict()


def _fail(
    steps: StepRunner,
    flow: Callable[[], BatchFlow],
    request: PollingRequest,
    batch_id: str,
    reason: str,
    *,
    last: CompletionCheck | None = None,
    polls: int = 0,
) -> BatchRunResult:
    """End the batch failed with `reason`; the counts are the last check's, if any."""
    steps.step(STEP_FAIL_BATCH, lambda: flow().fail_batch(batch_id, reason))
    counts = (last.completed, last.failed, last.pending) if last else (0, 0, 0)
    # The cause the batch item now carries (its codes are on the item: `dlpipe batch show`).
    ended = BatchRunResult(
        batch_id,
        request.polling_date,
        str(BatchStatus.FAILED),
        *counts,
        polls=polls,
        rerun=request.rerun,
        error=last.error if last else 0,
        outcome=OutcomeSummary(cause=reason).to_dict(),  # masked, then cut
    )
    return _hand_on(steps, flow, ended)


def _hand_on(
    steps: StepRunner, flow: Callable[[], BatchFlow], ended: BatchRunResult
) -> BatchRunResult:
    """The write-manifest step, once the batch's final status is written, on every path that
    ends it. A manifest that cannot be written, or is there with other bytes, leaves the ended
    batch as it is and withholds its hand-off: the reason is recorded on the batch item (the
    record-handoff-problem step) and returned in the result, and no event goes out."""
    try:
        ref = steps.step(STEP_WRITE_MANIFEST, lambda: flow().write_manifest(ended.batch_id))
    except StepFailed as exc:
        log.error(  # noqa: TRY400 (the cause is the message; a traceback says nothing more)
            "batch.manifest_failed", batch_id=ended.batch_id, cause=str(exc)
        )
        ref = {"problem": f"{MANIFEST_FAILED}: {exc}"}
    if ref is not None and "problem" in ref:
        problem = str(ref["problem"])
        steps.step(
            STEP_RECORD_PROBLEM, lambda: flow().record_handoff_problem(ended.batch_id, problem)
        )
        return replace(ended, handoff_problem=problem)
    return replace(ended, manifest=ref)


def _checker(
    flow: Callable[[], BatchFlow], batch_id: str, poll_number: int, is_last: bool
) -> Callable[[], dict[str, Any]]:
    # A closure per poll: a lambda in the loop would see the loop variable's last value.
    return lambda: flow().check_completion(batch_id, poll_number, is_last).to_dict()


@dataclass
class InlineSteps:
    """Runs steps as plain calls, records their names, and sleeps only if given a sleep.

    Nothing is retried: a provider outage ends the day at once (as FetchFailed), and any
    other error propagates as it is.
    """

    sleep: Callable[[float], None] | None = None
    names: list[str] = field(default_factory=list)

    def step(self, name: str, func: Callable[[], _T]) -> _T:
        """Call `func` and pass its result through JSON, as a checkpoint would."""
        self.names.append(name)
        try:
            result = func()
        except ProviderOutage as exc:
            raise FetchFailed(exhausted_message(str(exc), 1, exc.elapsed_seconds)) from exc
        return cast(_T, json.loads(json.dumps(result)))

    def wait(self, name: str, seconds: int) -> None:
        """Record the wait; sleep for real only when a sleep function was given."""
        self.names.append(name)
        if self.sleep is not None:
            self.sleep(seconds)


def run_inline(
    flow: BatchFlow,
    event: Mapping[str, Any],
    plan: PollingPlan,
    *,
    date_offset_days: int = 1,
    steps: InlineSteps | None = None,
    runs: FeedRuns | None = None,
    start: DayStarter | None = None,
) -> dict[str, Any]:
    """Run the same sequence as the durable handler, without the SDK; return the same dict.
    `runs` answers the event's feed (default: the default feed alone, on `flow` and `plan`);
    `start` starts a restated earlier day's run (run_batch)."""
    steps = steps or InlineSteps()
    request, run = served_request(
        steps, event, date_offset_days, runs or single_feed(lambda: flow, plan)
    )
    return run_batch(steps, run.flow, request, run.plan, start).to_dict()

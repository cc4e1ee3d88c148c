"""The chunked fetch-and-queue loop under the SDK's local runner, and the listing position rules."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

import pytest
from aws_durable_execution_sdk_python_testing.executor import Executor

from dlpipe.domain.listing import RejectedFile
from dlpipe.domain.model import SETS_MAX_FILES
from dlpipe.services.orchestrator.durable import build_durable_handler
from dlpipe.services.orchestrator.fanout import (
    REFUSAL_CHARS,
    SHOWN_REFUSALS,
    ExpectedFiles,
    ListingPosition,
    Refusals,
    in_parallel,
)
from dlpipe.services.orchestrator.ports import FlowContractError, ProviderOutage, QueueResult
from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_inline
from tests.support import descriptor
from tests.unit.test_orchestrator_durable import (
    EVENT,
    OUTAGE_CAUSE,
    FakeFlow,
    crash,
    names,
    result_of,
    run,
)

FETCHES = ["fetch-and-queue-files", "fetch-and-queue-files-2", "fetch-and-queue-files-3"]


@dataclass
class ChunkedFlow(FakeFlow):
    """A FakeFlow whose listing is `chunks` chunks of 100 entries; a fault may name a chunk."""

    chunks: int = 3
    chunk_outages: int = 0  # the first n attempts of chunk 2 find the provider unavailable
    stuck: bool = False  # every chunk reports no progress (a broken flow)

    def fetch_and_queue(
        self, batch_id: str, polling_date: str, resume: QueueResult | None = None
    ) -> QueueResult:
        offset = resume.offset if resume else 0
        self._enter("fetch_and_queue", offset)
        if len(self.named("fetch_and_queue")) > 20:
            raise AssertionError("fetch_and_queue called 20 times: the chunk loop never ends")
        if offset == 100 and len([c for c in self.calls if c[1:] == (100,)]) <= self.chunk_outages:
            raise ProviderOutage(OUTAGE_CAUSE, batch_id=batch_id)
        end = offset if self.stuck else offset + 100
        if fault := self.faults.pop(("chunk", str(end // 100)), None):
            raise fault
        return QueueResult(end, end, 0, offset=end, done=end >= 100 * self.chunks)

    def offsets(self) -> list[int]:
        return [call[1] for call in self.named("fetch_and_queue")]


@pytest.fixture
def fast_reinvoke(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local runner re-invokes a crashed handler after 5 real seconds; make it immediate."""
    monkeypatch.setattr(Executor, "RETRY_BACKOFF_SECONDS", 0)


def handler_for(flow: FakeFlow) -> Any:
    return build_durable_handler(lambda: flow, poll_interval_seconds=300, max_polls=4)


def test_each_chunk_is_its_own_step_resumed_from_the_previous_chunks_offset() -> None:
    """Three chunks run as three named steps, each starting where the last one stopped."""
    flow = ChunkedFlow()
    outcome = run(handler_for(flow))
    assert result_of(outcome)["status"] == "completed"
    assert names(outcome)[:5] == ["read-feed", "create-batch", *FETCHES]
    assert flow.offsets() == [0, 100, 200]


@pytest.mark.usefixtures("fast_reinvoke")
def test_a_crash_in_chunk_2_replays_chunk_2_only() -> None:
    """An invocation dying in chunk 2 re-runs chunk 2 on replay; chunk 1 comes from its checkpoint."""
    flow = ChunkedFlow(faults={("chunk", "2"): crash()})
    outcome = run(handler_for(flow))
    assert result_of(outcome)["status"] == "completed"
    assert flow.offsets() == [0, 100, 100, 200]
    assert names(outcome)[:5] == ["read-feed", "create-batch", *FETCHES]


def test_an_outage_in_a_later_chunk_gets_the_fetchs_suspended_retries() -> None:
    """A provider outage in chunk 2 is retried by the outage strategy, not failed at once."""
    flow = ChunkedFlow(chunk_outages=2)
    outcome = run(handler_for(flow))
    assert result_of(outcome)["status"] == "completed"
    assert outcome.get_step("fetch-and-queue-files-2").attempt == 3
    assert flow.offsets() == [0, 100, 100, 100, 200]


def test_a_chunk_that_reads_nothing_without_ending_breaks_the_flow_contract() -> None:
    """A flow that reports no progress and no end raises FlowContractError, not an endless loop."""
    flow = ChunkedFlow(stuck=True)
    with pytest.raises(FlowContractError, match="chunk 1 read no listing entry"):
        run_inline(flow, EVENT, PollingPlan(300, 2), steps=InlineSteps())


def test_skipping_to_an_offset_collects_a_small_days_file_ids_without_writing() -> None:
    """Skipped entries give their FileIDs back to a small day's set (files, error jobs, a later
    copy's FileID once); refusals are not re-derived: they come from the checkpoint."""
    entries = [
        descriptor("alpha"),
        RejectedFile("beta", "size: missing", "beta"),
        RejectedFile("files[2]", "entity: unsafe"),
        descriptor("alpha"),
        descriptor("gamma"),
    ]
    position = ListingPosition("batch-2026-02-28-x", "2026-02-28", iter(entries))
    assert position.skip_to(4)
    assert position.expected.ids == {"alpha-2026-02-28", "beta-2026-02-28"}
    assert position.refusals == Refusals()
    assert [e.entity for e in position.take(10)] == ["gamma"]
    assert (position.offset, position.ended) == (5, True)
    assert not ListingPosition("b", "2026-02-28", iter(entries)).skip_to(6)


def test_a_large_day_resumes_from_its_count_and_keeps_no_file_ids() -> None:
    """Past SETS_MAX_FILES the position holds a number: skipping collects nothing."""
    entries = [descriptor(f"e{n}") for n in range(5)]
    position = ListingPosition(
        "b", "2026-02-28", iter(entries), expected=ExpectedFiles.resumed(SETS_MAX_FILES + 3)
    )
    assert position.skip_to(4)
    assert (position.expected.ids, position.expected.count) == (None, SETS_MAX_FILES + 3)
    position.expected.add("e4-2026-02-28")
    assert position.expected.count == SETS_MAX_FILES + 4


def test_expected_files_drop_their_set_past_the_cap() -> None:
    """A set while the batch item keeps one, then only a count: memory flat in the day's size."""
    expected = ExpectedFiles()
    for n in range(SETS_MAX_FILES):
        expected.add(f"f{n}")
    expected.add("f0")  # a repeat under the cap changes nothing
    assert expected.ids is not None
    assert expected.count == SETS_MAX_FILES
    expected.add("one-more")
    assert (expected.ids, expected.count) == (None, SETS_MAX_FILES + 1)
    for n in range(10_000):
        expected.add(f"g{n}")
    assert (expected.ids, expected.count) == (None, SETS_MAX_FILES + 10_001)


def test_refusals_keep_a_count_and_the_first_few_lines_cut_short() -> None:
    refusals = Refusals()
    for n in range(SHOWN_REFUSALS + 3):
        refusals.add(f"provider entry e{n} rejected: " + "x" * 400)
    assert refusals.count == SHOWN_REFUSALS + 3
    assert len(refusals.shown) == SHOWN_REFUSALS
    assert all(len(line) == REFUSAL_CHARS for line in refusals.shown)
    summary = refusals.summary()
    assert summary is not None
    assert summary.startswith(f"{SHOWN_REFUSALS + 3} provider entries rejected: provider entry e0")
    assert summary.endswith("; and 3 more (each logged as batch.entry_rejected)")
    assert Refusals().summary() is None


LABEL: contextvars.ContextVar[str] = contextvars.ContextVar("label", default="none")


def test_in_parallel_keeps_order_and_the_callers_context() -> None:
    """Results come back in input order, and each thread sees the caller's context variables."""
    LABEL.set("fetch")
    assert in_parallel(lambda n: (n * 2, LABEL.get()), list(range(50))) == [
        (n * 2, "fetch") for n in range(50)
    ]

"""A provider's malformed listing, parsed by the real streaming parser, through the batch flow."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from dlpipe.adapters.listing_stream import ListingParser
from dlpipe.bootstrap.orchestrator import build_flow
from dlpipe.config import Settings
from dlpipe.domain.listing import FileDescriptor, ListingResult, RejectedFile
from dlpipe.services.orchestrator.sequence import InlineSteps, PollingPlan, run_inline
from tests.fakes.events import FakeEventBus
from tests.fakes.provider import FakeLister
from tests.fakes.stores import FakeBatchesTable, FakeJobsTable, FakeQueue
from tests.support import ManualClock
from tests.unit.services.test_batch_flow import DAY, Rig
from tests.unit.test_provider_contract import good


class BytesLister:
    """A provider whose one listing page is `page`, parsed as ProviderClient parses it."""

    def __init__(self, page: bytes) -> None:
        self.page = page

    def iter_listing(self, date: str) -> Iterator[FileDescriptor | RejectedFile]:
        return ListingParser(date).page([self.page])

    def list_files(self, date: str) -> ListingResult:  # pragma: no cover - the flow streams
        raise NotImplementedError


@pytest.fixture
def rig() -> Rig:
    """The batch flow on fakes, in chunks of 2 entries (as tests/unit/services/test_batch_flow.py)."""
    clock = ManualClock()
    jobs, batches, queue, lister = (
        FakeJobsTable(clock),
        FakeBatchesTable(clock),
        FakeQueue(),
        FakeLister(),
    )
    flow = build_flow(
        Settings(),
        jobs=jobs,
        batches=batches,
        provider=lister,
        queue=queue,
        clock=clock,
        events=FakeEventBus(),
    )
    flow.chunk_entries = 2
    return Rig(clock, jobs, batches, queue, lister, flow)


def run_day(rig: Rig, page: bytes) -> tuple[str, str]:
    """Run the day inline on a provider answering `page`: its status and ErrorMessage."""
    rig.flow.provider = BytesLister(page)
    result = run_inline(rig.flow, {"date": DAY}, PollingPlan(60, 1), steps=InlineSteps())
    return result["status"], rig.batches.require(result["batch_id"]).error_message or ""


def five_files() -> str:
    return ", ".join(json.dumps(good(e)) for e in ["a1", "a2", "a3", "a4", "a5"])


def test_files_before_another_days_date_queue_nothing(rig: Rig) -> None:
    """A page listing its files before a wrong `date` fails the day with no job queued."""
    status, error = run_day(rig, f'{{"files": [{five_files()}], "date": "2026-01-01"}}'.encode())
    assert (status, rig.queue.sent_ids()) == ("failed", [])
    assert error.endswith("listing.date: must come before files (page 1)")


def test_files_without_a_date_queue_nothing(rig: Rig) -> None:
    """A page with files and no `date` fails the day with no job queued."""
    status, error = run_day(rig, f'{{"files": [{five_files()}]}}'.encode())
    assert (status, rig.queue.sent_ids()) == ("failed", [])
    assert error.endswith("listing.date: must come before files (page 1)")


def test_invalid_utf8_in_a_url_keeps_the_url_out_of_the_error_message(rig: Rig) -> None:
    """A listing broken inside a presigned URL fails the day naming the place, not the URL."""
    url = "https://b.s3.amazonaws.com/k?X-Amz-Signature=0123456789abcdefSECRETSIG"
    page = json.dumps({"date": DAY, "files": [good("accounts", url=url)]}).encode()
    status, error = run_day(rig, page.replace(b"SECRETSIG", b"SECRET\xff"))
    assert status == "failed"
    assert error == (
        "provider_refused: malformed listing: invalid JSON (a bad token or byte) at entry 0 (page 1)"
    )

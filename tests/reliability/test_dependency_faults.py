"""Scenario 13: dependency faults. dlpipe's flow and its `dlpipe worker` processes reach
DynamoDB Local and moto only through the fault proxy (tests/faults: AWS's standard endpoint
variables point at it), which forwards every request byte for byte and, by seeded rules,
answers AWS-shaped throttles and 5xx, resets connections, or forwards a write and drops its
answer. Presigned provider URLs still name moto directly (unproxied). Every day must end with
the invariant held (one job and one object version per file, nothing stuck, DLQ empty) and a
FileDownloads metric document per file; how long each takes is bench/dependency_faults.py's
figure, not a check here.

(a) lost claim/complete answers: a dropped claim answer is retried by botocore and met by the
worker's own claim; it must cost a retry, not a lease: no file is ever parked as busy behind
its own claim (every job Attempts 1). Short (in `make test`): 16 files, lease 10 s; soak: 60
files on the default 300 s lease. (b)-(e) are soak only (`make soak`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dlpipe.config import (
    ENV_BATCHES_TABLE,
    ENV_JOBS_TABLE,
    ENV_LEASE_SECONDS,
    ENV_MAX_POLLS,
    ENV_POLL_INTERVAL_SECONDS,
    ENV_PROVIDER_TOKEN,
    ENV_PROVIDER_URL,
    ENV_QUEUE_URL,
    ENV_RESEND_AFTER_SECONDS,
    Settings,
)
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import BatchStatus
from dlpipe.domain.outage import WORKER_RETRY_MAX_S
from dlpipe.local.stub.publish import StubFileSpec
from tests.faults.day import DayRun, ProxiedDays, metered_workers
from tests.faults.rules import FaultPlan, Rule
from tests.faults.stack import FaultyAws
from tests.provider_support import TEST_PROVIDER_TOKEN, StubFactory
from tests.reliability.rig import Rig, Stopwatch, unique_day, unique_entity

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e

SEED = 13
CLAIM = "if_not_exists(#attempts"  # only the claim's UpdateExpression says this
COMPLETE = "#completed = :at"  # only a completion's
UPDATE = frozenset({"UpdateItem"})
MIB = 1024 * 1024
DLPIPE = Path(sys.executable).with_name("dlpipe")


def tiny(entity: str, files: int) -> list[StubFileSpec]:
    """`files` files of 64 B-4 KiB, CBC and GCM alternating."""
    return [
        StubFileSpec(f"{entity}{i:03d}", 64 + (i * 997) % 4032, CIPHER_GCM if i % 2 else CIPHER_CBC)
        for i in range(files)
    ]


def lost_answers(probability: float) -> FaultPlan:
    """Claim and completion UpdateItems forwarded, their answers dropped."""
    return FaultPlan(
        [
            Rule(
                service="dynamodb",
                operations=UPDATE,
                fault="drop",
                probability=probability,
                body_contains=CLAIM,
            ),
            Rule(
                service="dynamodb",
                operations=UPDATE,
                fault="drop",
                probability=probability,
                body_contains=COMPLETE,
            ),
        ],
        seed=SEED,
    )


def day_problems(run: DayRun, expected: list[str]) -> list[str]:
    """What is wrong with a day that should have ended clean: its status, the invariant, and
    one FileDownloads document per file."""
    problems = []
    if run.result.get("status") != "completed":
        problems.append(f"the day ended {run.result}")
    if run.violation is not None:
        problems.append(run.violation)
    if (got := run.metric_file_ids()) != sorted(expected):
        missing = sorted(set(expected) - set(got))
        problems.append(f"{len(got)} FileDownloads documents for {len(expected)} files, missing"
                        f" for {missing}")  # fmt: skip
    return problems


def assert_clean_day(run: DayRun, expected: list[str]) -> None:
    """Completed, invariant held, and one FileDownloads document per file."""
    problems = day_problems(run, expected)
    assert not problems, "\n".join(problems)


@dataclass(frozen=True)
class LostAnswers:
    files: int
    workers: int
    lease_s: int


SHORT = LostAnswers(files=16, workers=4, lease_s=10)
SOAK = LostAnswers(files=60, workers=4, lease_s=Settings().lease_seconds)


def lost_answers_day(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any, plan: LostAnswers
) -> None:
    rig = make_rig(visibility_s=plan.lease_s + 10, max_receive=5)
    stub = stub_factory(tiny(unique_entity(), plan.files))
    day = unique_day()
    with ProxiedDays(rig, stub, workers=plan.workers, lease_s=plan.lease_s) as proxied:
        lossy = proxied.run(lost_answers(0.1), day, polls=3 * plan.lease_s + 120)
        names = [e["event"] for w in proxied.pool for e in w.events()]
    figures(lossy=lossy.figures())
    claims_lost, completions_lost = lossy.plan.fired
    assert (claims_lost, completions_lost) >= (1, 1), "the seed dropped no claim or completion"
    problems = day_problems(lossy, list(stub.expected(day)))
    # A retried write refused by its own first send, taken for someone else's: the file parked
    # for a lease as busy and claimed again (Attempts 2), or a false lease_lost.
    if lossy.facts is not None:
        again = {f: j.attempts for f, j in lossy.facts.jobs.items() if j.attempts != 1}
        if again:
            problems.append(f"jobs claimed more than once: {again}")
    for event in ("job.busy", "job.lease_lost"):
        if event in names:
            problems.append(f"{names.count(event)} {event} lines after lost answers")
    if names.count("job.completed") != plan.files:
        problems.append(f"{names.count('job.completed')} job.completed for {plan.files} files")
    assert not problems, "\n".join(problems)


def test_lost_claim_and_completion_answers_cost_a_poll_not_a_lease(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    """10% of claim and completion answers dropped after the write: the day completes, one
    job and one version per file, a FileDownloads document per file, each file claimed once
    and never met as busy or lost by its own worker."""
    lost_answers_day(make_rig, stub_factory, figures, SHORT)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_lost_answers_on_a_sixty_file_day_with_the_default_lease(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    lost_answers_day(make_rig, stub_factory, figures, SOAK)


def outage_day(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any, plan: FaultPlan,
    specs: Callable[[str], list[StubFileSpec]], *, lease_s: int = 30, polls: int = 150,
    interval_s: int = 5,
) -> DayRun:  # fmt: skip
    """One day behind `plan` with 4 workers on the flow's defaults; figures recorded."""
    rig = make_rig(visibility_s=lease_s + 10, max_receive=5)
    stub = stub_factory(specs(unique_entity()))
    day = unique_day()
    with ProxiedDays(rig, stub, workers=4, lease_s=lease_s, name="outage") as proxied:
        run = proxied.run(plan, day, polls=polls, interval_s=interval_s)
    figures(**run.figures())
    assert_clean_day(run, list(stub.expected(day)))
    return run


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_sqs_down_for_five_minutes_across_the_fan_out(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    """Every SQS call answers 500 InternalError (every third resets the connection) for the
    first 300 s, the fan-out included: the day completes on the defaults."""
    plan = FaultPlan(
        [
            Rule(service="sqs", fault="reset", probability=0.33, end_s=300),
            Rule(service="sqs", fault="error", status=500, code="InternalError", end_s=300),
        ],
        seed=SEED,
    )
    run = outage_day(make_rig, stub_factory, figures, plan, lambda e: tiny(e, 20), polls=150)
    assert run.plan.fired_count(operation="SendMessageBatch") >= 1


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_dynamodb_throttled_thirty_percent_for_ninety_seconds(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    """30% of every DynamoDB call (flow and workers) throttled for 90 s."""
    plan = FaultPlan([Rule(service="dynamodb", fault="throttle", probability=0.3, end_s=90)])
    run = outage_day(
        make_rig, stub_factory, figures, plan, lambda e: tiny(e, 40), polls=60, interval_s=2
    )
    assert run.plan.fired_count("throttle") >= 10


def big_and_small(entity: str) -> list[StubFileSpec]:
    """4 multipart files (10-13 MiB, over the 8 MiB part) and 8 tiny ones."""
    big = [StubFileSpec(f"{entity}b{i}", 10 * MIB + i * MIB, CIPHER_GCM) for i in range(4)]
    return big + tiny(entity + "s", 8)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_s3_slowdown_with_dropped_multipart_completions(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    """30% of S3 calls answered 503 SlowDown for 120 s; half the CompleteMultipartUpload
    answers (up to 3) dropped after S3 completed the upload, whose ID S3 then no longer knows
    (NoSuchUpload to the retry: the proxy plays S3 here, moto would complete it again)."""
    plan = FaultPlan(
        [
            Rule(
                service="s3",
                fault="drop",
                operations=frozenset({"CompleteMultipartUpload"}),
                probability=0.5,
                count=3,
            ),
            Rule(service="s3", fault="throttle", probability=0.3, end_s=120),
        ],
        seed=SEED,
        s3_completed_uploads_gone=True,  # as S3: the retry of a completion meets NoSuchUpload
    )
    run = outage_day(make_rig, stub_factory, figures, plan, big_and_small, polls=60, interval_s=2)
    assert run.plan.fired_count("drop", "CompleteMultipartUpload") >= 1
    assert run.plan.fired_count("gone", "CompleteMultipartUpload") >= 1  # a retry met it
    assert run.plan.fired_count("throttle") >= 5


@pytest.mark.soak
@pytest.mark.timeout(600)
def test_soak_dlpipe_run_survives_a_ten_second_sqs_blip_at_start(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any, tmp_path: Path
) -> None:
    """`dlpipe run --date D` (its preflight first) while SQS answers 500 for 10 s: the run
    completes the day (a worker, not proxied, downloads the files)."""
    rig = make_rig(visibility_s=20, max_receive=5)
    stub = stub_factory(tiny(unique_entity(), 6))
    day = unique_day()
    plan = FaultPlan([Rule(service="sqs", fault="error", status=500, end_s=10)])
    faulty = FaultyAws(rig.aws_env, plan)
    with faulty.running(), metered_workers(rig, stub, rig.aws_env, 1, 10, "direct") as pool:
        env = {
            **faulty.environment(), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
            ENV_QUEUE_URL: rig.queues.url, ENV_JOBS_TABLE: rig.provisioned.jobs_table,
            ENV_BATCHES_TABLE: rig.provisioned.batches_table, ENV_PROVIDER_URL: stub.base_url,
            ENV_PROVIDER_TOKEN: TEST_PROVIDER_TOKEN, ENV_LEASE_SECONDS: "10",
            ENV_POLL_INTERVAL_SECONDS: "2", ENV_MAX_POLLS: "60", ENV_RESEND_AFTER_SECONDS: "20",
        }  # fmt: skip
        clock = Stopwatch()
        run = subprocess.run(  # bounded by its timeout
            [str(DLPIPE), "run", "--date", day], env=env, cwd=tmp_path, capture_output=True,
            text=True, timeout=300, check=False,
        )  # fmt: skip
        seconds = clock.seconds
        documents = len([d for w in pool for d in w.file_metrics()])
    stderr_tail = run.stderr.strip().splitlines()[-3:]
    figures(exit=run.returncode, run_s=seconds, stderr=stderr_tail, injected=len(plan.log),
            metric_documents=documents)  # fmt: skip
    assert plan.fired_count() >= 1
    assert run.returncode == 0, stderr_tail
    batches = rig.batches().query_by_date(day)
    assert [b.status for b in batches] == [BatchStatus.COMPLETED]
    rig.check_day(day, batches[0].batch_id, stub.expected(day))


# A claim's or a completion's UpdateItem answered with an error dlpipe counts as transient
# (adapters/aws_errors.py) but botocore does not retry: what the worker sees once a throttle
# has outlasted the client's eight tries (about a minute), in a second.
GIVEN_UP = ("InternalFailure", 400)
# The worker's backoffs of 1, 2 and 4 s fall inside it, its next try (7 s after its first)
# after it, however late the first claim meets it: the day ends a second or two after the
# outage, with each backoff checked against the outage so far.
WORKER_OUTAGE_S = 6


def deferral_problems(logs: list[list[dict[str, Any]]], outage_s: int) -> list[str]:
    """What is wrong with how the workers handed back the files that met an outage: each must
    come back after a delay no longer than the outage so far (rounded up a second) and the
    worker's cap, never left hidden for its lease + margin; one fresh delayed copy each."""
    events = [e for ev in logs for e in ev]
    delays = [e["retry_after_s"] for e in events if e["event"] == "job.unavailable"]
    deferred = [e["delay_s"] for e in events if e["event"] == "message.deferred"]
    bound_s = min(outage_s + 1, WORKER_RETRY_MAX_S)
    problems = [] if delays else ["no file met the outage"]
    if sorted(deferred) != sorted(delays):
        problems.append(f"deferred copies {sorted(deferred)} for unavailable files {delays}")
    if late := [d for d in delays if d > bound_s]:
        problems.append(f"files handed back for {late} s, over the {bound_s} s bound")
    return problems


def test_a_worker_side_dynamodb_outage_ends_the_day_soon_after_the_outage(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    """Every claim and completion fails (past the client's retries) for the first 6 s of an
    8-file day on 2 workers, lease 40 s: each file that met it comes back as a fresh copy
    delayed by a short backoff, never longer than the outage so far (<= 7 s), not after lease +
    margin (44 s); the day completes; each worker logs the outage once (one dependency_down
    and one dependency_up), with no traceback."""
    lease_s = 40
    rig = make_rig(visibility_s=lease_s + 10, max_receive=5)
    stub = stub_factory(tiny(unique_entity(), 8))
    code, status = GIVEN_UP
    rules = [
        Rule(service="dynamodb", operations=UPDATE, fault="error", status=status, code=code,
             body_contains=marker, end_s=WORKER_OUTAGE_S)
        for marker in (CLAIM, COMPLETE)
    ]  # fmt: skip
    day = unique_day()
    with ProxiedDays(rig, stub, workers=2, lease_s=lease_s, name="store-down") as proxied:
        run = proxied.run(FaultPlan(rules, seed=SEED), day, polls=90)
        logs = [w.events() for w in proxied.pool]
    figures(**run.figures())
    assert run.plan.fired_count("error") >= 1, "no claim met the outage"
    assert_clean_day(run, list(stub.expected(day)))
    problems = deferral_problems(logs, WORKER_OUTAGE_S)
    assert not problems, "\n".join(problems)
    for events in logs:
        names = [e["event"] for e in events]
        downs, ups = names.count("worker.dependency_down"), names.count("worker.dependency_up")
        assert downs <= 1, f"{downs} dependency_down lines in one worker's log"
        assert ups == downs, f"{downs} down and {ups} up lines in one worker's log"
        assert not [e for e in events if e.get("level") == "error"], "an error-level line"
    assert sum("worker.dependency_down" in [e["event"] for e in ev] for ev in logs) >= 1


def _worker_side_throttle(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any, outage_s: int
) -> None:
    """Every claim and completion UpdateItem throttled (the service's own answer, retried by
    the client eight times) for `outage_s` of a 60-file day, 4 workers on the default 300 s
    lease: each file that met it comes back after the worker's short backoff, never its lease,
    and nothing is dead-lettered."""
    rig = make_rig(visibility_s=Settings().lease_seconds + 30, max_receive=5)
    stub = stub_factory(tiny(unique_entity(), 60))
    rules = [
        Rule(service="dynamodb", operations=UPDATE, fault="throttle", body_contains=marker,
             end_s=outage_s)
        for marker in (CLAIM, COMPLETE)
    ]  # fmt: skip
    day = unique_day()
    lease_s = Settings().lease_seconds
    with ProxiedDays(rig, stub, workers=4, lease_s=lease_s, name="store-throttled") as proxied:
        run = proxied.run(FaultPlan(rules, seed=SEED), day, polls=outage_s + 600)
        logs = [w.events() for w in proxied.pool]
    figures(**run.figures())
    assert_clean_day(run, list(stub.expected(day)))
    problems = deferral_problems(logs, outage_s)
    assert not problems, "\n".join(problems)
    for events in logs:
        assert not [e for e in events if e.get("level") == "error"], "an error-level line"


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_a_three_minute_worker_side_dynamodb_throttle_ends_the_day_within_a_minute(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    """Three minutes (issue 34: the day ended 4 min 5 s after it before)."""
    _worker_side_throttle(make_rig, stub_factory, figures, 180)


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_soak_a_thirty_minute_worker_side_dynamodb_throttle_dead_letters_nothing(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    """Thirty minutes: waiting the outage out spends no receive, so no file walks toward the
    DLQ (5 receives) however long DynamoDB stays away."""
    _worker_side_throttle(make_rig, stub_factory, figures, 1800)

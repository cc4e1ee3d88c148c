"""Secrets Manager down at the workers' start (issue 50, row 4 (c) and (d)). Two `dlpipe worker`
processes whose default feed's RSA key lives in Secrets Manager reach it only through a fault
proxy in front of moto (tests/faults/proxy.py), which answers the first GetSecretValue calls
with errors: two 500s (botocore retries those itself), then, for a bounded number of calls,
an error dlpipe counts as an outage but botocore does not retry (what a worker sees once a
longer 5xx outage has outlasted the client's eight tries, in a second instead of a minute).

Each worker must start anyway (one `secret.unavailable` warning, no exit), and the files that
meet the outage wait it out on the outage's path: UNAVAILABLE, never claimed, each replaced by
a fresh copy delayed by the short backoff (never left for its receive window or lease), no
`message.failed` and no error-level line. Once Secrets Manager answers, the key is read and
the day completes clean (one job and one object version per file, DLQ empty, a FileDownloads
document per file). DynamoDB, S3 and SQS go through the day's proxies without faults."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from dlpipe.config import (
    ENV_ENDPOINT_URL,
    ENV_ENDPOINT_URL_SECRETS_MANAGER,
    ENV_PRIVATE_KEY_SECRET,
)
from dlpipe.domain.outage import worker_retry_s
from dlpipe.entrypoints.receive_window import RECEIVE_WINDOW_S
from tests.faults.day import ProxiedDays
from tests.faults.proxy import FaultProxy
from tests.faults.rules import FaultPlan, Rule
from tests.provider_support import StubFactory
from tests.reliability.rig import Rig, unique_day, unique_entity
from tests.reliability.test_dependency_faults import assert_clean_day, tiny

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e

SEED = 50
SECRETS = "secrets"  # the proxy's name for Secrets Manager (tests/faults/shapes.py)
GET = frozenset({"GetSecretValue"})
WORKERS = 2
RETRIED_5XX = 2  # answered 500: botocore's own retries absorb them
GIVEN_UP = 5  # answered InternalFailure (400): an outage to dlpipe, not retried by botocore
# Each worker's start read ends on one of them; the rest fall on the first files' reads.
FILES_MET = GIVEN_UP - WORKERS
SECRET_DOWN = "Secrets Manager"  # the dependency the files and the gate name


def outage() -> FaultPlan:
    """The first GetSecretValue calls refused: RETRIED_5XX 500s, then GIVEN_UP outage errors."""
    return FaultPlan(
        [
            Rule(service=SECRETS, operations=GET, fault="error", status=500,
                 code="InternalServiceError", count=RETRIED_5XX),
            Rule(service=SECRETS, operations=GET, fault="error", status=400,
                 code="InternalFailure", count=GIVEN_UP),
        ],
        seed=SEED,
    )  # fmt: skip


def secret_problems(logs: list[list[dict[str, Any]]]) -> list[str]:
    """What is wrong with how each worker went through the outage."""
    problems = []
    for n, events in enumerate(logs):
        names = [e["event"] for e in events]
        if names.count("secret.unavailable") != 1:
            problems.append(f"worker {n}: {names.count('secret.unavailable')} start warnings")
        if "message.failed" in names:
            problems.append(f"worker {n}: {names.count('message.failed')} message.failed lines")
        if errors := [e["event"] for e in events if e.get("level") == "error"]:
            problems.append(f"worker {n}: error-level lines {errors}")
        # Up again on its next file: a worker whose last file met the outage may log no up.
        downs, ups = names.count("worker.dependency_down"), names.count("worker.dependency_up")
        if downs > 1 or ups > downs:
            problems.append(f"worker {n}: {downs} dependency_down, {ups} dependency_up lines")
        met = [e for e in events if e["event"] == "job.unavailable"]
        if others := {e.get("dependency") for e in met} - {SECRET_DOWN}:
            problems.append(f"worker {n}: files unavailable for {sorted(others)}")
        delays = sorted(e["retry_after_s"] for e in met)
        deferred = sorted(e["delay_s"] for e in events if e["event"] == "message.deferred")
        if deferred != delays:
            problems.append(f"worker {n}: delayed copies {deferred} for unavailable {delays}")
        if late := [d for d in delays if d > worker_retry_s(len(delays)) or d >= RECEIVE_WINDOW_S]:
            problems.append(f"worker {n}: files handed back for {late} s")
    return problems


def test_workers_start_through_a_secrets_manager_outage_and_the_day_completes_after_it(
    make_rig: Callable[..., Rig], stub_factory: StubFactory, figures: Any
) -> None:
    lease_s = 40
    rig = make_rig(visibility_s=lease_s + 10, max_receive=5)
    stub = stub_factory(tiny(unique_entity(), 8))
    secret = f"dlpipe-test-key-{uuid.uuid4().hex[:10]}"  # the IAM checker's stand-in name
    rig.clients.secretsmanager.create_secret(Name=secret, SecretString=rig.key_file.read_text())
    plan = outage()
    proxy = FaultProxy(rig.aws_env[ENV_ENDPOINT_URL], plan)
    # The workers read their key from the secret (it wins over the key file), through the proxy.
    behind = {ENV_ENDPOINT_URL_SECRETS_MANAGER: proxy.url, ENV_PRIVATE_KEY_SECRET: secret}
    day = unique_day()
    try:
        with proxy.running():
            keyed = dataclasses.replace(rig, aws_env={**rig.aws_env, **behind})
            with ProxiedDays(keyed, stub, workers=WORKERS, lease_s=lease_s, name="key") as days:
                run = days.run(FaultPlan([]), day, polls=90)
                logs = [w.events() for w in days.pool]
                exits = [w.process.poll() for w in days.pool]
            requests = proxy.requests
    finally:
        rig.clients.secretsmanager.delete_secret(SecretId=secret, ForceDeleteWithoutRecovery=True)
    figures(**run.figures(), secret_calls=requests, secret_faults=plan.fired)
    assert plan.fired == [RETRIED_5XX, GIVEN_UP], plan.log
    assert exits == [None] * WORKERS, "a worker exited"
    assert_clean_day(run, list(stub.expected(day)))
    problems = secret_problems(logs)
    met = [e for ev in logs for e in ev if e["event"] == "job.unavailable"]
    if len(met) < FILES_MET:
        problems.append(f"{len(met)} files met the outage, {FILES_MET} reads were refused")
    assert not problems, "\n".join(problems)
    # Never claimed while the key could not be read: each job claimed once, after it.
    assert run.facts is not None
    again = {f: j.attempts for f, j in run.facts.jobs.items() if j.attempts != 1}
    assert not again, f"jobs claimed more than once: {again}"

"""Scenario 8: ambiguous AWS failures. A worker's write reaches
DynamoDB or S3 and takes effect, but its response is lost (the connection drops), so the
worker cannot know it happened. Each file has one such fault planned at a different step;
redelivery and the claim's conditions must still end every file exactly where it belongs."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest
from botocore.exceptions import ConnectionClosedError

from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.model import JobStatus
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from tests.provider_support import StubFactory
from tests.reliability.rig import (
    CallCounter,
    LogTap,
    Rig,
    counted_clients,
    unique_day,
    unique_entity,
)

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
LEASE_S = 4

# The step whose response is lost, per file (the file's index picks it).
STEPS = (
    "read-job",  # GetItem
    "claim",  # UpdateItem available -> downloading
    "lease-extension",  # UpdateItem extending the lease (the fence before publishing, or a beat)
    "publish",  # PutObject of the verified plaintext
    "complete",  # UpdateItem downloading -> completed
    "finish-error",  # UpdateItem downloading -> error (the file is tampered)
    "refresh-url",  # UpdateItem storing a freshly signed URL (the listing URL expired)
)


def _step_of(operation: str, params: dict[str, Any]) -> str | None:
    """Which planned step a DynamoDB / S3 call is."""
    if operation == "GetItem":
        return "read-job"
    if operation == "PutObject":
        return "publish"
    expression = str(params.get("UpdateExpression", ""))
    for marker, step in (
        ("SET #status = :downloading", "claim"),
        ("SET #status = :completed", "complete"),
        ("SET #status = :final", "finish-error"),
        ("SET #lease = :expiry", "lease-extension"),
        ("SET #url = :url", "refresh-url"),
    ):
        if expression.startswith(marker):
            return step
    return None


def _file_id_of(params: dict[str, Any]) -> str | None:
    if "Key" in params and isinstance(params["Key"], dict):
        return str(params["Key"]["FileID"]["S"])
    if isinstance(params.get("Key"), str):
        return str(params["Key"]).rsplit("/", 1)[-1]  # {entity}/{date}/{FileID}
    return None


class LostResponses:
    """botocore hooks: the planned step of each file succeeds on the server, then its response
    is dropped once (ConnectionClosedError raised after the call)."""

    def __init__(self, plan: dict[str, str], *, slow_after_claim: float) -> None:
        self._plan, self._lock = dict(plan), threading.Lock()
        self.dropped: Counter[str] = Counter()
        # A file whose planned step is the lease extension is held up once after its claim
        # (at its HeadObject, before the transfer), past lease/3: a file done sooner extends
        # no lease at all (while the lease is recent the fence reads the claim, writes nothing).
        self._slow = {f for f, step in plan.items() if step == "lease-extension"}
        self._slow_s = slow_after_claim

    def attach(self, client: Any, service: str) -> None:
        """Hook `client` (a DynamoDB or S3 client)."""
        client.meta.events.register(f"before-parameter-build.{service}", self._remember)
        client.meta.events.register(f"after-call.{service}", self._maybe_drop)

    def _remember(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        context["lost_step"] = _step_of(model.name, params)
        context["lost_file"] = file_id = _file_id_of(params)
        if model.name == "HeadObject" and file_id in self._slow:
            with self._lock:
                self._slow.discard(file_id)
            time.sleep(self._slow_s)

    def _maybe_drop(self, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        step, file_id = context.get("lost_step"), context.get("lost_file")
        if http_response.status_code != 200 or step is None:
            return
        with self._lock:
            if self._plan.get(str(file_id)) != step:
                return
            del self._plan[str(file_id)]
            self.dropped[step] += 1
        raise ConnectionClosedError(endpoint_url="(injected: the response was lost)")

    @property
    def pending(self) -> dict[str, str]:
        """Planned faults that never fired."""
        with self._lock:
            return dict(self._plan)


def test_writes_whose_responses_are_lost_still_end_every_file_correctly(
    make_rig: Any, stub_factory: StubFactory, figures: Any
) -> None:
    """One lost response per file at each step: all files end right, none is left behind."""
    rig: Rig = make_rig(visibility_s=3, max_receive=5)
    entity, day = unique_entity(), unique_day()
    names = {step: f"{entity}{n}" for n, step in enumerate(STEPS)}
    specs = [
        StubFileSpec(name, 6000 + n, CIPHER_GCM if n % 2 else CIPHER_CBC)
        for n, name in enumerate(names.values())
    ]
    faults = Faults(
        tampered_entities={names["finish-error"]},
        expired_url_entities={names["refresh-url"]},
    )
    stub = stub_factory(specs, faults=faults)
    expected = stub.expected(day)
    lost = LostResponses(
        {f"{names[step]}-{day}": step for step in STEPS}, slow_after_claim=LEASE_S / 2
    )
    clients = counted_clients(CallCounter())
    lost.attach(clients.dynamodb, "dynamodb")
    lost.attach(clients.s3, "s3")
    tap = LogTap("INFO")
    services = [rig.service(stub, lease_seconds=LEASE_S, clients=clients) for _ in range(2)]
    with tap.tapping(), rig.thread_workers(services, concurrency=2):
        result = rig.run_day(rig.flow(stub), day, polls=120)
    facts = rig.check_day(
        day,
        result["batch_id"],
        expected,
    )
    events = Counter(e["event"] for e in tap.events())
    figures(
        dropped=dict(lost.dropped),
        redeliveries=events["message.failed"],
        takeovers=sum(1 for e in tap.events() if e.get("decision") == "take_over"),
        **facts.counts(),
    )
    assert lost.pending == {}
    bad = f"{names['finish-error']}-{day}"
    assert facts.by_status(JobStatus.ERROR) == {bad}
    assert facts.by_status(JobStatus.COMPLETED) == set(expected) - {bad}
    assert result["status"] == "failed"
    assert facts.dead_letters == []

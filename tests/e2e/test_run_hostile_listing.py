"""`dlpipe run` (the real console script) on a listing whose refused entities look like rich
markup: the day ends with its true outcome and event, and the final line shows the text as is."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.local.events import received_events
from dlpipe.local.provision import Provisioned
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_run_preflight import DLPIPE, queue_url, run_env
from tests.provider_support import StubFactory
from tests.support import unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
__all__ = ["queue_url"]  # the fixture, shared as is

# The first refused entry's entity, and a refused file's sha256 (its job ends `error`).
FAULTS = {"accounts": {"entity": "[/]"}, "positions": {"sha256": "[bold red]x[/bold red]"}}


def test_markup_in_refused_entities_never_changes_the_day_or_its_event(
    tmp_path: Path,
    aws_env: dict[str, str],
    provisioned: Provisioned,
    clients: AwsClients,
    queue_url: str,
    stub_factory: StubFactory,
) -> None:
    """The provider lists an entity `[/]` (refused: no FileID can be made of it) and a file
    whose sha256 is `[bold red]x[/bold red]` (refused: its job ends `error`): the run's result
    and the `Day Failed` event say 1 expected, 1 error (once a MarkupError raised inside the
    completion check ended such a day `check_failed`, the event saying 0 of everything), and
    the final line shows both values as written."""
    files = [
        StubFileSpec("accounts", 1_000, CIPHER_GCM),
        StubFileSpec("positions", 100, CIPHER_CBC),
    ]
    stub = stub_factory(files, Faults(malformed_fields=FAULTS))
    assert provisioned.downstream_queue_url
    received_events(clients, provisioned.downstream_queue_url, rounds=1)  # earlier tests'
    day = unique_day()
    done = subprocess.run(
        [str(DLPIPE), "run", "--date", day, "--poll-interval", "1"],
        env=run_env(tmp_path, aws_env, provisioned, queue_url, stub.base_url),
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout.splitlines()[0])
    counts = {k: result[k] for k in ("status", "completed", "failed", "error", "pending")}
    assert counts == {"status": "failed", "completed": 0, "failed": 0, "error": 1, "pending": 0}
    # The last check's line and the summary under it: the cause as the provider wrote it.
    final = [
        line for line in done.stderr.splitlines() if "batch failed" in line or " failed: " in line
    ]
    assert len(final) == 2, done.stderr
    assert all("got '[/]'" in line for line in final), final
    events = [
        event["detail"]
        for event in received_events(clients, provisioned.downstream_queue_url)
        if event["detail"].get("batch_id") == result["batch_id"]
    ]
    assert [e["status"] for e in events] == ["failed"], events
    assert (events[0]["counts"]["expected"], events[0]["counts"]["error"]) == (1, 1), events

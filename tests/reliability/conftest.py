"""Reliability scenarios: soak selection, the per-test rig, and the figures each run reports.

Soak versions carry `@pytest.mark.soak` and are skipped unless the marker expression names
`soak` (`make soak` runs `pytest -m soak tests/reliability`); their short versions always run.
Measured figures are printed at the end of the run, and appended as JSON lines to the file
named by DLPIPE_RELIABILITY_REPORT when it is set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from dlpipe.adapters.aws import AwsClients
from dlpipe.local.provision import Provisioned
from tests.e2e.test_worker_kit import queues
from tests.reliability.rig import Rig

REPORT_ENV = "DLPIPE_RELIABILITY_REPORT"
_FIGURES = "reliability"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip soak scenarios unless `-m` names the soak marker."""
    if "soak" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="soak scenario: run it with `make soak` (pytest -m soak)")
    for item in items:
        if item.get_closest_marker("soak"):
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the figures every reliability scenario recorded."""
    lines = []
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get(
        "failed", []
    ):
        for name, value in getattr(report, "user_properties", []):
            if name == _FIGURES and report.when == "call":
                lines.append(f"{report.nodeid.split('::')[-1]}: {json.dumps(value)}")
    if lines:
        terminalreporter.write_sep("-", "reliability figures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def figures(record_property: Callable[[str, object], None], request: pytest.FixtureRequest) -> Any:
    """`figures(**values)` records a scenario's measured results (see the module docstring)."""

    def record(**values: object) -> None:
        record_property(_FIGURES, values)
        path = os.environ.get(REPORT_ENV)
        if path:
            with Path(path).open("a") as out:
                out.write(json.dumps({"test": request.node.nodeid, **values}) + "\n")

    return record


@pytest.fixture
def key_file(rsa_keypair: tuple[bytes, bytes], tmp_path: Path) -> Path:
    """Our private key as a worker process reads it (DLPIPE_PRIVATE_KEY_FILE)."""
    path = tmp_path / "private.pem"
    path.write_bytes(rsa_keypair[0])
    return path


@pytest.fixture
def make_rig(
    clients: AwsClients,
    provisioned: Provisioned,
    aws_env: dict[str, str],
    private_key: RSAPrivateKey,
    key_file: Path,
    tmp_path: Path,
) -> Iterator[Callable[..., Rig]]:
    """`make_rig(visibility_s=10, max_receive=5)`: a rig on a queue + DLQ of the test's own."""
    with_queues: list[Any] = []

    def make(*, visibility_s: int = 10, max_receive: int = 5) -> Rig:
        context = queues(clients, visibility_s=visibility_s, max_receive=max_receive)
        pair = context.__enter__()
        with_queues.append(context)
        return Rig(clients, provisioned, pair, private_key, key_file, aws_env, tmp_path)

    yield make
    for context in reversed(with_queues):
        context.__exit__(None, None, None)


@pytest.fixture
def rig(make_rig: Callable[..., Rig]) -> Rig:
    """A rig with the default queue pair (visibility 10 s, maxReceiveCount 5)."""
    return make_rig()

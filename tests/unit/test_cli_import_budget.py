"""`dlpipe --help` and each `dlpipe <command> --help` import no AWS SDK, HTTP, crypto, web
server, durable SDK, structlog or local stack: those load when a command runs
(dlpipe/cli/lazy.py; dlpipe/log.py imports structlog at a logger's first use).

Each case runs the installed console script in a child with PYTHONPROFILEIMPORTTIME=1, which
writes one stderr line per module imported; the test reads the names. Counts, not seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DLPIPE = Path(sys.executable).with_name("dlpipe")
HEAVY = (
    "boto3",
    "botocore",
    "cryptography",
    "requests",
    "flask",
    "waitress",
    "aws_durable_execution_sdk_python",
    "moto",
    "hcl2",
    "structlog",
    "dlpipe.adapters",
    "dlpipe.bootstrap",
    "dlpipe.entrypoints",
)
# rich is not among them: the commands render with it (a command's help loads its console).
# Light modules of the dev kit a command's options need; no other part of the local stack:
LOCAL_ALLOWED = frozenset(
    {
        "dlpipe.local",
        "dlpipe.local.localstack",  # every command applies DLPIPE_LOCALSTACK first
        "dlpipe.local.stack_feeds",  # `run --feeds-file`'s default, `local up --feeds`' bound
        "dlpipe.local.stub",  # `provider-stub --bucket`'s default
        "dlpipe.local.stub.faults",  # `provider-stub --broken-kind`'s choices
    }
)
# After Python's start: `dlpipe --help` is ~40-60 modules (click, the map); each `--help` was ~950
# when the group imported every command (a command's own help now ~120-250, rich among them).
TOP_HELP_BUDGET = 100
COMMAND_HELP_BUDGET = 300
COMMAND_HELPS = (
    ("status", "--help"),
    ("jobs", "--help"),
    ("jobs", "requeue", "--help"),
    ("batch", "list", "--help"),
    ("dlq", "--help"),
    ("backfill", "--help"),
    ("handoff", "wait", "--help"),
    ("run", "--help"),
    ("worker", "--help"),
    ("ui", "--help"),
    ("provider-stub", "--help"),
    ("local", "--help"),
    ("local", "up", "--help"),
)


def imported(*args: str) -> list[str]:
    """The modules `dlpipe ARGS` imported after Python's start, in order; it must exit 0."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "COLUMNS": "100"}
    env.pop("DLPIPE_LOCALSTACK", None)
    done = subprocess.run(
        [str(DLPIPE), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Usage: dlpipe" in done.stdout
    prefix = "import time:"
    lines = [line for line in done.stderr.splitlines() if line.startswith(prefix)]
    names = [line.rsplit("|", 1)[-1].strip() for line in lines[1:]]  # [0] is the header
    assert "site" in names, done.stderr[-2000:]
    # What the command line adds once Python has started (a sitecustomize on PYTHONPATH, as
    # the IAM recorder's, imports its own modules before `site` is done).
    return names[len(names) - names[::-1].index("site") :]


def heavy_among(names: list[str]) -> list[str]:
    """The heavy modules and local-stack modules among `names`."""
    heavy = [n for n in names if any(n == h or n.startswith(f"{h}.") for h in HEAVY)]
    local = [n for n in names if n.startswith("dlpipe.local") and n not in LOCAL_ALLOWED]
    return heavy + local


def test_the_command_listing_imports_no_command_module() -> None:
    names = imported("--help")
    assert heavy_among(names) == []
    from dlpipe.cli.main import COMMANDS

    command_modules = {entry.target.split(":")[0] for entry in COMMANDS.values()}
    assert not [n for n in names if n in command_modules or n.startswith(("dlpipe.local", "rich"))]
    assert len(names) <= TOP_HELP_BUDGET, len(names)


@pytest.mark.parametrize("args", COMMAND_HELPS, ids=" ".join)
def test_a_command_s_help_imports_nothing_heavy(args: tuple[str, ...]) -> None:
    names = imported(*args)
    assert heavy_among(names) == []
    assert len(names) <= COMMAND_HELP_BUDGET, len(names)

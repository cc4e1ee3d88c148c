"""Expected failures of `dlpipe run` (the real console script, one process each): one line on
stderr, a non-zero exit, within seconds, never a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from dlpipe.config import (
    ENV_ALLOW_HTTP_URLS,
    ENV_BATCHES_TABLE,
    ENV_JOBS_TABLE,
    ENV_PROVIDER_OUTAGE_BUDGET_SECONDS,
    ENV_PROVIDER_TOKEN,
    ENV_PROVIDER_URL,
    ENV_QUEUE_URL,
)
from dlpipe.local.provision import Provisioned

pytestmark = pytest.mark.e2e
DLPIPE = Path(sys.executable).with_name("dlpipe")


def _closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _bare_env(tmp_path: Path) -> dict[str, str]:
    """PATH and HOME only, and no AWS configuration files or instance metadata to fall back on."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_REGION": "us-east-1",
    }


def _case_env(
    case: str, tmp_path: Path, aws_env: dict[str, str], provisioned: Provisioned
) -> dict[str, str]:
    env = _bare_env(tmp_path)
    closed = _closed_url()
    reachable = {
        **aws_env,
        ENV_QUEUE_URL: str(provisioned.queue_url),
        ENV_JOBS_TABLE: provisioned.jobs_table,
        ENV_BATCHES_TABLE: provisioned.batches_table,
        ENV_PROVIDER_TOKEN: "token",
    }
    unreachable = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": closed,
        ENV_QUEUE_URL: f"{closed}/000000000000/q",
        ENV_PROVIDER_URL: closed,
        ENV_ALLOW_HTTP_URLS: "true",  # the closed port is a local http URL
        ENV_PROVIDER_TOKEN: "token",
    }
    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    env.update(
        {
            "configuration missing": reachable,  # everything but the provider's URL
            "endpoint unreachable": unreachable,
            # With no outage budget, `run` does not wait the provider out (test_run_preflight does).
            "provider unreachable": {
                **reachable,
                ENV_PROVIDER_URL: _closed_url(),
                ENV_PROVIDER_OUTAGE_BUDGET_SECONDS: "0",
            },
            "http provider": {
                **reachable,
                ENV_PROVIDER_URL: "http://provider.example",
                ENV_ALLOW_HTTP_URLS: "false",
            },
            "no credentials": {k: v for k, v in unreachable.items() if k not in keys},
        }.get(case, {})
    )
    return env


@pytest.mark.parametrize(
    ("case", "args", "message"),
    [
        ("configuration missing", [], "DLPIPE_PROVIDER_URL is not set"),
        ("endpoint unreachable", [], "cannot reach dynamodb at http://127.0.0.1:"),
        ("provider unreachable", [], "cannot reach the provider at http://127.0.0.1:"),
        (
            "http provider",
            [],
            "configuration error: DLPIPE_PROVIDER_URL must be an https URL: it has another scheme;"
            " set DLPIPE_ALLOW_HTTP_URLS=true for a local http provider",
        ),
        ("no credentials", [], "no AWS credentials found"),
        ("not a date", ["--date", "2026-02-30"], "'2026-02-30' is not a date (YYYY-MM-DD, today"),
        ("local-only option", ["--workers", "2"], "--workers applies to --local runs only"),
    ],
)
def test_an_expected_failure_of_run_is_one_line_within_seconds(
    case: str,
    args: list[str],
    message: str,
    tmp_path: Path,
    aws_env: dict[str, str],
    provisioned: Provisioned,
) -> None:
    """`dlpipe run --date D` exits non-zero at once (nothing waited out) with one line naming
    the fault."""
    env = _case_env(case, tmp_path, aws_env, provisioned)
    done = subprocess.run(
        [str(DLPIPE), "run", "--date", "2026-02-27", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode != 0, "Traceback" not in done.stderr) == (True, True), done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert message in done.stderr
    assert "waiting it out" not in done.stderr

"""The real `dlpipe` console script's one-line errors: a taken port names the flag that fixes
it, a missing setting names its environment variable, an out-of-range age names the range,
and `run` reads the same date words as the other commands. None needs the emulator."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

DLPIPE = Path(sys.executable).with_name("dlpipe")


def _dlpipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DLPIPE_", "AWS_ENDPOINT"))}
    # Nothing listens on port 1: a command that reached AWS would fail there, never leave the host.
    closed = "http://127.0.0.1:1"
    env.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_REGION="us-east-1")
    env.update(AWS_ENDPOINT_URL=closed)
    return subprocess.run(
        [str(DLPIPE), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _one_error_line(run: subprocess.CompletedProcess[str]) -> str:
    """stderr's last line, after checking it is an error line and no traceback was printed."""
    assert "Traceback" not in run.stderr, run.stderr[-1500:]
    line = run.stderr.strip().splitlines()[-1]
    assert line.startswith("dlpipe: "), run.stderr
    return line


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port of 127.0.0.1 that another process (this one) listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_ui_on_a_taken_port_is_one_line_naming_port_0(taken_port: int, tmp_path: Path) -> None:
    """`dlpipe ui --port P` with P taken: one line, exit 1, naming `--port 0` (before: a
    40-line traceback ending in OSError: [Errno 98] Address already in use)."""
    run = _dlpipe("ui", "--port", str(taken_port), cwd=tmp_path)
    line = _one_error_line(run)
    assert (run.returncode, str(taken_port) in line, "--port 0" in line) == (1, True, True), line


@pytest.mark.parametrize("flag", ["--port", "--dynamodb-port", "--stub-port"])
def test_local_up_on_a_taken_port_is_one_line_naming_the_flag(
    taken_port: int, tmp_path: Path, flag: str
) -> None:
    """`dlpipe local up` with one of its ports taken: one line naming that flag and `0`."""
    ports = {"--port": "0", "--dynamodb-port": "0", "--stub-port": "0", flag: str(taken_port)}
    run = _dlpipe("local", "up", *(x for pair in ports.items() for x in pair), cwd=tmp_path)
    line = _one_error_line(run)
    assert (run.returncode, f"{flag} 0" in line, str(taken_port) in line) == (1, True, True), line


@pytest.mark.parametrize(
    ("args", "variable"),
    [
        (("dlq", "show"), "DLPIPE_DLQ_URL"),
        (("worker", "--exit-when-idle", "1"), "DLPIPE_QUEUE_URL"),
    ],
)
def test_a_missing_setting_names_its_environment_variable(
    tmp_path: Path, args: tuple[str, ...], variable: str
) -> None:
    """A command that needs a queue URL that is not set names the variable to set, not an
    internal setting (before: `setting 'dlq_url' is not configured`)."""
    run = _dlpipe(*args, cwd=tmp_path)
    line = _one_error_line(run)
    assert (run.returncode, variable in line, "_url'" in line) == (1, True, False), line


@pytest.mark.parametrize("age", ["99999999999999999999d", "999999999d", "3651d"])
def test_an_age_out_of_range_is_a_usage_error_naming_the_range(tmp_path: Path, age: str) -> None:
    """`jobs stuck --older-than` too far back: exit 2 and the allowed range (before: an
    OverflowError or a year-out-of-range ValueError traceback)."""
    run = _dlpipe("jobs", "stuck", "--older-than", age, cwd=tmp_path)
    line = _one_error_line(run)
    assert (run.returncode, "0s to 3650d" in line) == (2, True), line


def test_run_reads_yesterday_like_the_other_commands(tmp_path: Path) -> None:
    """`run --date yesterday` gets past the date (here to the first missing setting), as
    `status --date yesterday` does (before: exit 2, `--date yesterday is not a calendar date`)."""
    run = _dlpipe("run", "--date", "yesterday", cwd=tmp_path)
    line = _one_error_line(run)
    assert (run.returncode, "DLPIPE_PROVIDER_URL" in line) == (1, True), line


def test_a_usage_error_has_the_same_prefix_as_every_error(tmp_path: Path) -> None:
    """click's usage errors start `dlpipe: ` too, on one line."""
    run = _dlpipe("jobs", "show", "not a file id", cwd=tmp_path)
    assert (run.returncode, run.stderr.count("\n")) == (2, 1), run.stderr
    assert _one_error_line(run).endswith("(see `dlpipe jobs show --help`)")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--feeds", "9"], "9 is not in the range 1<=x<=8"),
        (["--feeds", "0"], "0 is not in the range 1<=x<=8"),
        (["--feeds", "2", "--no-stub"], "--feeds serves stub providers"),
    ],
)
def test_local_up_feeds_out_of_bounds_is_one_line(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    """`dlpipe local up --feeds N` takes 1 to 8 feeds, each a stub: one line, exit 2, else."""
    run = _dlpipe("local", "up", "--port", "0", "--dynamodb-port", "0", *args, cwd=tmp_path)
    line = _one_error_line(run)
    assert (run.returncode, expected in line) == (2, True), line


def test_run_local_with_a_bad_feeds_file_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    """A feeds template that sets what the stack fills, or none at all: one line naming the
    file and field, exit 1, no emulator started."""
    template = tmp_path / "feeds.toml"
    template.write_text(
        '[feeds.b]\nschedule = "rate(1 day)"\ntime_zone = "UTC"\ntoken_secret = "x"\n'
    )
    bad = _dlpipe("run", "--local", "--feeds-file", str(template), cwd=tmp_path)
    assert _one_error_line(bad) == (
        f"dlpipe: {template}: feeds.b.token_secret: set by the local stack, leave it out"
    )
    missing = _dlpipe("run", "--local", "--feeds-file", "nowhere.toml", cwd=tmp_path)
    assert "nowhere.toml: cannot be read" in _one_error_line(missing)
    assert (bad.returncode, missing.returncode) == (1, 1)
    assert "moto" not in bad.stderr + missing.stderr


def test_feeds_file_is_refused_without_local(tmp_path: Path) -> None:
    """--feeds-file names the local stack's feeds: without --local it is a usage error."""
    run = _dlpipe("run", "--feeds-file", "feeds.toml", cwd=tmp_path)
    assert "--feeds-file applies to --local runs only" in _one_error_line(run)


def test_run_of_a_feed_no_configuration_names_is_one_line(tmp_path: Path) -> None:
    """`run --feed nope` without a feeds file naming it: one line naming the feed, exit 1,
    before any setting or endpoint is looked at."""
    run = _dlpipe("run", "--date", "2026-02-27", "--feed", "nope", cwd=tmp_path)
    line = _one_error_line(run)
    assert (run.returncode, line) == (1, "dlpipe: feed 'nope' is not configured in the feeds file")


def test_run_local_of_a_feed_not_in_the_template_is_one_line_before_anything_starts(
    tmp_path: Path,
) -> None:
    """`run --local --feed nope`: one line naming the template's feeds, exit 1, no emulator."""
    run = _dlpipe("run", "--local", "--feed", "nope", cwd=tmp_path)
    line = _one_error_line(run)
    assert run.returncode == 1, run.stderr
    assert "feed 'nope' is not in the local feeds template" in line, line
    assert line.endswith("(its feeds: default, vendor-b)"), line
    assert "moto" not in run.stderr


def _dlpipe_with(env_changes: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DLPIPE_", "AWS_ENDPOINT"))}
    env.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_REGION="us-east-1")
    env.update(AWS_ENDPOINT_URL="http://127.0.0.1:1", DLPIPE_QUEUE_URL="http://127.0.0.1:1/q")
    env.update(DLPIPE_DEST_BUCKET="b", **env_changes)
    return subprocess.run(  # bounded by its timeout
        [str(DLPIPE), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "args", "said"),
    [
        ({"DLPIPE_PRIVATE_KEY_FILE": "/nonexistent.pem"}, ("worker",), "cannot be read"),
        ({"DLPIPE_PRIVATE_KEY_FILE": "NOT_PEM"}, ("worker",), "not a PEM private key"),
        (
            {"DLPIPE_MAX_POLLS": "1000000000000000"},
            ("run", "--date", "2026-03-07"),
            "must be from 1 to 12000",
        ),
        ({"AWS_ENDPOINT_URL": "not a url"}, ("dlq", "show"), "AWS_ENDPOINT_URL must be"),
        ({"AWS_ENDPOINT_URL_SQS": "http://[::1"}, ("dlq", "show"), "AWS_ENDPOINT_URL_SQS"),
    ],
)
def test_bad_keys_numbers_and_endpoints_are_one_line_each(
    tmp_path: Path, changes: dict[str, str], args: tuple[str, ...], said: str
) -> None:
    """Each of these was a traceback (FileNotFoundError, InvalidPrivateKeyError, OverflowError,
    ValueError: Invalid endpoint)."""
    if changes.get("DLPIPE_PRIVATE_KEY_FILE") == "NOT_PEM":
        (tmp_path / "bad.pem").write_text("not a key\n")
        changes = {**changes, "DLPIPE_PRIVATE_KEY_FILE": str(tmp_path / "bad.pem")}
    run = _dlpipe_with(changes, *args, cwd=tmp_path)
    line = _one_error_line(run)
    assert run.returncode != 0
    assert said in line, line

"""The table of bad inputs: every command refuses a bad date, FileID, BatchID, feed, duration,
number, file, flag or setting with exactly one `dlpipe: ` line on stderr and a nonzero exit,
never a traceback. Each runs in-process through `dlpipe.cli.main.main` (its real error
rendering), with no AWS endpoint but a closed port of 127.0.0.1: every case is refused before
any AWS call, so none needs the emulator."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import dlpipe.cli.main

CLOSED = "http://127.0.0.1:1"  # nothing listens there: a call that got out would fail locally
DAY = "2026-02-27"
BATCH = f"batch-{DAY}-00000000-0000-4000-8000-000000000000"

# (id, argv, extra environment). `{tmp}` is the test's own folder, where NOT_PEM, EMPTY and
# BAD_TOML exist (a file that is no key, an empty file, a file that is no TOML).
CASES: list[tuple[str, list[str], dict[str, str]]] = [
    # dates
    ("status-date-word", ["status", "--date", "tomorrow"], {}),
    ("status-date-month-13", ["status", "--date", "2026-13-01"], {}),
    ("status-date-feb-30", ["status", "--date", "2026-02-30"], {}),
    ("status-date-slashes", ["status", "--date", "2026/02/27"], {}),
    ("status-date-empty", ["status", "--date", ""], {}),
    ("batch-show-date", ["batch", "show", "--date", "27-02-2026"], {}),
    ("batch-list-date", ["batch", "list", "--date", "yesterdayy"], {}),
    ("batch-list-status", ["batch", "list", "--date", DAY, "--status", "done"], {}),
    ("audit-from-bad", ["batch", "audit", "--from", "x", "--to", DAY], {}),
    ("audit-to-missing", ["batch", "audit", "--from", DAY], {}),
    ("audit-reversed", ["batch", "audit", "--from", DAY, "--to", "2026-02-01"], {}),
    ("audit-too-long", ["batch", "audit", "--from", "2020-01-01", "--to", DAY], {}),
    ("backfill-from-bad", ["backfill", "--from", "0000-01-01", "--to", DAY], {}),
    ("backfill-reversed", ["backfill", "--from", DAY, "--to", "2026-01-01"], {}),
    ("backfill-no-to", ["backfill", "--from", DAY], {}),
    ("run-date-bad", ["run", "--date", "2026-02-29"], {}),
    ("run-date-year-0", ["run", "--date", "0000-02-27"], {}),
    ("local-up-date", ["local", "up", "--date", "soon", "--port", "0"], {}),
    # FileIDs and BatchIDs
    ("jobs-show-no-date", ["jobs", "show", "accounts"], {}),
    ("jobs-show-path", ["jobs", "show", "../../etc/passwd-2026-02-27"], {}),
    ("jobs-show-bad-day", ["jobs", "show", "accounts-2026-02-31"], {}),
    ("jobs-show-default-prefix", ["jobs", "show", f"default.accounts-{DAY}"], {}),
    ("jobs-show-two-dots", ["jobs", "show", f"a.b.accounts-{DAY}"], {}),
    ("jobs-show-control", ["jobs", "show", f"acc\x1b[31mounts-{DAY}"], {}),
    ("jobs-show-missing", ["jobs", "show"], {}),
    ("jobs-list-bad-batch", ["jobs", "list", "--batch", "batch-x"], {}),
    ("jobs-list-file-id", ["jobs", "list", "--batch", f"accounts-{DAY}"], {}),
    ("jobs-list-no-batch", ["jobs", "list"], {}),
    ("jobs-list-status", ["jobs", "list", "--batch", BATCH, "--status", "stuck"], {}),
    ("jobs-list-limit-0", ["jobs", "list", "--batch", BATCH, "--limit", "0"], {}),
    ("jobs-list-limit-word", ["jobs", "list", "--batch", BATCH, "--limit", "ten"], {}),
    ("requeue-bad-id", ["jobs", "requeue", "nope"], {}),
    ("requeue-nothing", ["jobs", "requeue"], {}),
    ("requeue-both", ["jobs", "requeue", f"accounts-{DAY}", "--stuck"], {}),
    ("requeue-stuck-force", ["jobs", "requeue", "--stuck", "--force"], {}),
    ("requeue-feed-ids", ["jobs", "requeue", f"accounts-{DAY}", "--feed", "vendor-b"], {}),
    # feeds
    ("status-feed-bad-name", ["status", "--feed", "Vendor_B"], {}),
    ("status-feed-dot", ["status", "--feed", "a.b"], {}),
    ("batch-show-feed-long", ["batch", "show", "--feed", "x" * 40], {}),
    ("stuck-feed-bad", ["jobs", "stuck", "--feed", "-x"], {}),
    ("dlq-feed-bad", ["dlq", "show", "--feed", "BAD"], {}),
    ("backfill-feed-bad", ["backfill", "--from", DAY, "--to", DAY, "--feed", "!"], {}),
    ("run-feed-unknown", ["run", "--date", DAY, "--feed", "nope"], {}),
    ("run-feed-bad-name", ["run", "--date", DAY, "--feed", "No Such"], {}),
    ("run-local-feed-unknown", ["run", "--local", "--feed", "nope"], {}),
    # durations and numbers
    ("stuck-age-word", ["jobs", "stuck", "--older-than", "soon"], {}),
    ("stuck-age-negative", ["jobs", "stuck", "--older-than", "-5m"], {}),
    ("stuck-age-huge", ["jobs", "stuck", "--older-than", "99999999999999999999d"], {}),
    ("stuck-age-unit", ["jobs", "stuck", "--older-than", "5y"], {}),
    ("stuck-limit-0", ["jobs", "stuck", "--limit", "0"], {}),
    ("stuck-limit-huge", ["jobs", "stuck", "--limit", "10001"], {}),
    ("stuck-status", ["jobs", "stuck", "--status", "error"], {}),
    ("status-age", ["status", "--older-than", "1w"], {}),
    ("dlq-limit-0", ["dlq", "show", "--limit", "0"], {}),
    ("redrive-limit", ["dlq", "redrive", "--limit", "-1"], {}),
    ("run-poll-0", ["run", "--date", DAY, "--poll-interval", "0"], {}),
    ("run-files-local-only", ["run", "--date", DAY, "--files", "3"], {}),
    ("run-workers-local-only", ["run", "--date", DAY, "--workers", "2"], {}),
    ("run-feeds-file-local-only", ["run", "--feeds-file", "feeds.toml"], {}),
    ("worker-concurrency-0", ["worker", "--concurrency", "0"], {}),
    ("worker-idle-word", ["worker", "--exit-when-idle", "never"], {}),
    ("worker-grace-negative", ["worker", "--grace-seconds", "-1"], {}),
    ("ui-port-range", ["ui", "--port", "70000"], {}),
    ("ui-days-0", ["ui", "--days", "0"], {}),
    ("ui-refresh-word", ["ui", "--refresh", "fast"], {}),
    ("local-up-port", ["local", "up", "--port", "-1"], {}),
    ("local-up-files", ["local", "up", "--files", "501", "--port", "0"], {}),
    ("local-up-feeds-9", ["local", "up", "--feeds", "9", "--port", "0"], {}),
    ("local-up-feeds-no-stub", ["local", "up", "--feeds", "2", "--no-stub", "--port", "0"], {}),
    ("stub-port", ["provider-stub", "--port", "99999"], {}),
    ("stub-broken-kind", ["provider-stub", "--broken-kind", "gone"], {}),
    # files
    ("run-local-feeds-missing", ["run", "--local", "--feeds-file", "{tmp}/nowhere.toml"], {}),
    ("run-local-feeds-not-toml", ["run", "--local", "--feeds-file", "{tmp}/BAD_TOML"], {}),
    ("run-local-feeds-empty", ["run", "--local", "--feeds-file", "{tmp}/EMPTY"], {}),
    ("stub-public-key-missing", ["provider-stub", "--public-key", "{tmp}/nowhere.pem"], {}),
    (
        "stub-public-key-not-pem",
        ["provider-stub", "--token", "t", "--public-key", "{tmp}/NOT_PEM"],
        {},
    ),
    # flags and commands
    ("unknown-command", ["statuss"], {}),
    ("unknown-subcommand", ["jobs", "shows"], {}),
    ("unknown-flag", ["status", "--verbose"], {}),
    ("extra-argument", ["status", "extra"], {}),
    ("flag-without-value", ["status", "--date"], {}),
    ("batch-no-subcommand-flag", ["batch", "--date", DAY], {}),
    # environment values
    ("env-max-polls-word", ["run", "--date", DAY], {"DLPIPE_MAX_POLLS": "many"}),
    ("env-max-polls-huge", ["run", "--date", DAY], {"DLPIPE_MAX_POLLS": "1000000000000000"}),
    ("env-poll-negative", ["run", "--date", DAY], {"DLPIPE_POLL_INTERVAL_SECONDS": "-5"}),
    ("env-lease-word", ["worker"], {"DLPIPE_LEASE_SECONDS": "1m"}),
    ("env-offset-word", ["status"], {"DLPIPE_DATE_OFFSET_DAYS": "one"}),
    ("env-endpoint-not-url", ["dlq", "show"], {"AWS_ENDPOINT_URL": "not a url"}),
    ("env-endpoint-sqs", ["dlq", "show"], {"AWS_ENDPOINT_URL_SQS": "http://[::1"}),
    ("env-key-missing", ["worker"], {"DLPIPE_PRIVATE_KEY_FILE": "/nonexistent.pem"}),
    ("env-key-not-pem", ["worker"], {"DLPIPE_PRIVATE_KEY_FILE": "{tmp}/NOT_PEM"}),
    ("env-key-empty", ["worker"], {"DLPIPE_PRIVATE_KEY_FILE": "{tmp}/EMPTY"}),
    ("env-feeds-file-missing", ["status"], {"DLPIPE_FEEDS_FILE": "{tmp}/nowhere.toml"}),
    ("env-feeds-file-not-toml", ["status"], {"DLPIPE_FEEDS_FILE": "{tmp}/BAD_TOML"}),
    ("env-dlq-missing", ["dlq", "show"], {}),
    ("env-queue-missing", ["worker", "--exit-when-idle", "1"], {"DLPIPE_QUEUE_URL": ""}),
    ("env-provider-missing", ["run", "--date", DAY], {"DLPIPE_PROVIDER_URL": ""}),
    ("env-share-percent", ["worker"], {"DLPIPE_MAX_SHARE_PERCENT": "150"}),
    ("env-deadline", ["status"], {"DLPIPE_DAY_DEADLINE": "25:00"}),
    (
        "env-deadline-zone",
        ["status"],
        {"DLPIPE_DAY_DEADLINE": "10:00", "DLPIPE_DAY_DEADLINE_TIME_ZONE": "Mars/Base"},
    ),
]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The test's folder with NOT_PEM, EMPTY and BAD_TOML in it."""
    (tmp_path / "NOT_PEM").write_text("not a key\n")
    (tmp_path / "EMPTY").write_text("")
    (tmp_path / "BAD_TOML").write_text("[feeds\nx = \n")
    return tmp_path


def test_the_table_holds_at_least_the_68_inputs_the_issue_tried() -> None:
    """The table keeps its size: at least 68 bad inputs, each named once."""
    names = [name for name, _, _ in CASES]
    assert (len(names) >= 68, len(set(names)) == len(names)) == (True, True)


@pytest.mark.parametrize(("argv", "env"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_input_is_one_dlpipe_line_and_a_nonzero_exit(
    argv: list[str],
    env: dict[str, str],
    files: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Exactly one line on stderr, starting `dlpipe: `, no traceback, exit code not 0."""
    for name in [n for n in list(__import__("os").environ) if n.startswith(("DLPIPE_", "AWS_"))]:
        monkeypatch.delenv(name)
    base = {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": CLOSED,
        "AWS_MAX_ATTEMPTS": "1",
        "DLPIPE_QUEUE_URL": f"{CLOSED}/000000000000/q",
        "DLPIPE_DEST_BUCKET": "b",
    }
    for name, value in {**base, **env}.items():
        monkeypatch.setenv(name, value.replace("{tmp}", str(files)))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(files)
    monkeypatch.setattr(sys, "argv", ["dlpipe", *(a.replace("{tmp}", str(files)) for a in argv)])
    with pytest.raises(SystemExit) as exited:
        dlpipe.cli.main.main()
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert (err.endswith("\n"), err.count("\n")) == (True, 1), err
    assert err.startswith("dlpipe: "), err
    assert exited.value.code not in (0, None), err

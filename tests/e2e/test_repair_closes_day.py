"""Every repair the tools suggest closes a named feed's day: from a failed day (files `failed`:
their URL stays expired), an error day (`error`: the feed's key file holds another key) and a
timed-out day (no worker), the cause is fixed, then every command that `dlpipe status`, the day
page and each unfinished file's page print is run as printed (the console script, a `dlpipe
worker` doing the files: for the error day, the same worker process that failed them, which
reads the restored key file again). Each command that succeeds must leave the day completed, with a new manifest
that latest.json names and `Day Completed` received downstream; one that refuses says so in one
`dlpipe:` line naming the command that repairs the day."""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from dlpipe.adapters.crypto import load_private_key
from dlpipe.adapters.keys import key_fingerprint
from dlpipe.bootstrap.ops import build_ops_context
from dlpipe.config import ENV_SECRET_REREAD_SECONDS as ENV_SECRET_REREAD
from dlpipe.config import Settings
from dlpipe.local.stub.crypto import generate_rsa_keypair
from dlpipe.local.stub.faults import Faults
from tests.e2e import test_repair_kit as kit
from tests.e2e.test_worker_kit import WorkerProcess, queues
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack
ENTITIES = ("accounts", "positions", "trades")
COMMAND = re.compile(r"dlpipe (?:run|backfill|jobs|dlq|batch)\b[^\n<]*")


def _commands(text: str) -> list[str]:
    return [m.group(0).strip() for m in COMMAND.finditer(html.unescape(text))]


def _suggested(env: dict[str, str], tmp_path: Path, day: str) -> list[str]:
    """The commands as printed: the unfinished files' pages, the day page, `dlpipe status`."""
    ops = build_ops_context(Settings.from_env(env))
    client = kit.ui_client(env)
    found: list[str] = []
    page = kit.get_page(client, f"/day/{day}?feed={kit.FEED}")
    file_ids = sorted(set(re.findall(rf"/file/({re.escape(kit.FEED)}\.[\w.-]+)", page)))
    assert len(file_ids) == len(ENTITIES), page
    for file_id in file_ids:
        job = ops.jobs().get(file_id)
        if job is not None and job.status != "completed":
            found += _commands(kit.get_page(client, f"/file/{file_id}"))
    found += _commands(page)
    status = kit.run_dlpipe(env, tmp_path, "status", "--date", day, "--feed", kit.FEED)
    found += _commands(status.stdout)
    return list(dict.fromkeys(found))


def _counts_everywhere(env: dict[str, str], tmp_path: Path, day: str) -> list[str]:
    """Each batch of the day as `status --json`, the day page and the grid count it:
    (completed, failed, error, expected), one line per batch and screen."""
    done = kit.run_dlpipe(env, tmp_path, "status", "--date", day, "--feed", kit.FEED, "--json")
    assert done.stdout.startswith("{"), (done.stdout[:500], done.stderr[-500:])
    seen: dict[tuple[str, str], tuple[int, ...]] = {}
    for row in json.loads(done.stdout)["batches"]:
        counts = row["job_counts"]
        seen[row["batch_id"], "status"] = (
            counts["completed"], counts["failed"], counts["error"], row["expected_files"]
        )  # fmt: skip
    seen.update(kit.page_counts(env, day, kit.FEED, [batch_id for batch_id, _ in seen]))
    return [f"{b} {screen} {' '.join(map(str, n))}" for (b, screen), n in seen.items()]


def _assert_names_the_failed_key(env: dict[str, str], day: str, pem: bytes) -> None:
    """Each `error` file's ErrorMessage, and the day page, name the key that failed by its
    fingerprint (never the key)."""
    named = f"our key {key_fingerprint(load_private_key(pem))}"
    ops = build_ops_context(Settings.from_env(env))
    page = kit.get_page(kit.ui_client(env), f"/day/{day}?feed={kit.FEED}")
    assert named in html.unescape(page), page
    file_ids = set(re.findall(rf"/file/({re.escape(kit.FEED)}\.[\w.-]+)", page))
    messages = [job.error_message or "" for f in file_ids if (job := ops.jobs().get(f))]
    assert messages, page
    assert all(m.startswith("wrong_key: ") and named in m for m in messages), messages


@pytest.mark.parametrize("kind", ["failed", "error", "timeout"])
def test_every_suggested_repair_of_a_named_feeds_day_ends_it_completed_and_told(
    kind: str, stack: kit.Stack, tmp_path: Path
) -> None:
    """The day ends `kind`; after the fix each suggested command, run as printed, either closes
    the day (exit 0) or refuses in one line naming a command that does."""
    day = unique_day()
    faults = Faults(
        always_expired_entities=frozenset(ENTITIES) if kind == "failed" else frozenset()
    )
    stub = stack.stub(ENTITIES, faults)
    pem = generate_rsa_keypair()[0] if kind == "error" else stack.rsa_keypair[0]
    key_file = kit.write_key(tmp_path, "feed.pem", pem)
    kit.drain_events(stack)
    with queues(stack.clients) as q:
        # Every refused key is read again (the bound, once a minute, is a unit test's).
        env = {**kit.feed_env(stack, q.url, tmp_path, stub, key_file), ENV_SECRET_REREAD: "0"}
        worker = None if kind == "timeout" else WorkerProcess(env, tmp_path / "w1.log")
        try:
            first = kit.run_dlpipe(env, tmp_path, "run", "--date", day, "--feed", kit.FEED)
        finally:
            if worker is not None and kind != "error":
                worker.stop()
        assert first.returncode == 1, (first.stdout, first.stderr)
        assert '"status": "' + kind.replace("error", "failed") + '"' in first.stdout

        # The cause, fixed: the provider's URLs sign again, the feed's key is ours, a worker runs
        # (an error day's: the one still running, with the key it read at its start).
        faults.set(always_expired_entities=frozenset())
        key_file.write_bytes(stack.rsa_keypair[0])
        if kind == "error":
            _assert_names_the_failed_key(env, day, pem)
        else:
            worker = WorkerProcess(env, tmp_path / "w2.log")
        assert worker is not None
        try:
            commands = _suggested(env, tmp_path, day)
            assert commands, "no repair suggested"
            ran: list[dict[str, Any]] = []
            summaries: list[tuple[dict[str, Any], str]] = []
            for command in commands:
                args = shlex.split(command)[1:]
                done = kit.run_dlpipe(env, tmp_path, *args)
                ran.append({"command": command, "code": done.returncode})
                if done.returncode == 0:
                    assert kit.day_closed(stack, day) == [], (ran, done.stderr)
                    if args[0] == "run" and not summaries:
                        summaries.append((json.loads(done.stdout), done.stderr))
                    continue
                lines = done.stderr.strip().splitlines()
                assert len(lines) == 1, (command, done.stderr)
                assert lines[0].startswith("dlpipe: "), lines
                pointed = _commands(lines[0])
                assert pointed, (command, lines)
                commands += [c for c in pointed if c not in commands]
        finally:
            worker.stop()
        assert any(r["code"] == 0 for r in ran), ran
        # The repairing run's summary says what its batch stores: a rerun that adopted the ended
        # batch's files and queued them (every file, none had completed).
        # (A timed-out day's files may complete in its own batch first: the fixed worker takes their
        # first messages; then the rerun adopts none and queues none.)
        (summary, progress), first_batch = summaries[0], json.loads(first.stdout)["batch_id"]
        assert summary["rerun"] is True, summary
        assert summary["adopted_from"] in ([first_batch], [] if kind == "timeout" else None), (
            summary
        )
        queued = len(ENTITIES) if summary["adopted_from"] else summary["queued"]
        assert (summary["expected"], summary["queued"]) == (len(ENTITIES), queued), summary
        assert f"{len(ENTITIES)} file(s) listed, {queued} queued" in progress
        # The ended batch and the rerun that adopted its files: one set of counts on every screen.
        lines = _counts_everywhere(env, tmp_path, day)
        seen: dict[str, set[tuple[str, ...]]] = {}
        for line in lines:
            words = line.split()
            seen.setdefault(words[0], set()).add(tuple(words[-4:]))
        assert len(seen) == 2, lines
        assert all(len(counts) == 1 for counts in seen.values()), lines

"""Operators see every feed and can narrow to one: `--feed` on the ops commands, against the
emulator's tables and queues (a named feed's records written through the table adapters)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dlpipe.config import ENV_FEEDS_FILE
from dlpipe.domain.feeds import DEFAULT_FEED, Feed
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import Batch, BatchStatus, FileJob, make_batch_id, make_file_id
from dlpipe.domain.rules import batch_ttl_epoch_s, job_ttl_epoch_s
from dlpipe.local.provision import Provisioned
from tests.integration.test_ops_backfill import RecordingStarter
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world
from tests.support import BASE_MS, VENDOR_B, make_batch, make_job

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below
FEED = "vendor-b"


# The world's clock lies in the far past; DynamoDB Local deletes items whose TTL has passed in
# real time, so these expire in the far future instead.
_JOB_TTL = job_ttl_epoch_s(BASE_MS // 1000)
_BATCH_TTL = batch_ttl_epoch_s(BASE_MS // 1000)


def named_batch(world: World, day: str | None = None, **changes: Any) -> Batch:
    """A batch of FEED on `day` (the world's day), through the batches table."""
    day = day or world.day
    batch_id = make_batch_id(day, str(uuid.uuid4()), FEED)
    changes = {"ttl_epoch_s": _BATCH_TTL, **changes}
    made = make_batch(day, now_ms=world.clock.now, batch_id=batch_id, feed=FEED, **changes)
    batch = world.batches.create(made)
    world.created_batches.append(batch.batch_id)
    return batch


def named_job(world: World, entity: str, **changes: Any) -> FileJob:
    """A job of FEED on the world's day, through the jobs table."""
    file_id = make_file_id(entity, world.day, FEED)
    made = make_job(entity, world.day, now_ms=world.clock.now, file_id=file_id, feed=FEED)
    job = world.jobs.create(replace(made, ttl_epoch_s=_JOB_TTL, **changes))
    world.created_jobs.append(job.file_id)
    return job


def with_feeds(world: World, *feeds: Feed) -> None:
    """The world's ops context as if the feeds file named `feeds` (and the default feed)."""
    world.ops.feeds = {DEFAULT_FEED.name: DEFAULT_FEED, **{f.name: f for f in feeds}}


def test_status_of_a_date_with_two_feeds_batches_shows_both(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """Without --feed: a section per feed found for the date (PollingDateIndex, one Query)."""
    default = world.batch()
    named = named_batch(world)
    run = dlpipe_cli("status", "--date", world.day)
    assert run.code == 0, run.err
    assert f"batches of {world.day}\n" in run.out, run.out
    assert f"batches of {world.day}, feed {FEED}\n" in run.out, run.out
    assert (
        run.out.index(default.batch_id)
        < run.out.index(f"feed {FEED}")
        < run.out.index(named.batch_id)
    )
    payload = dlpipe_cli("status", "--date", world.day, "--json").json()
    by_feed = {d["feed"]: [b["batch_id"] for b in d["batches"]] for d in payload["feeds"]}
    assert by_feed == {"default": [default.batch_id], FEED: [named.batch_id]}
    assert sorted(b["feed"] for b in payload["batches"]) == ["default", FEED]


def test_status_feed_narrows_the_batches_and_the_stuck_jobs_to_one_feed(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """--feed vendor-b: its batch only, and of the stuck jobs (StatusIndex) its own only."""
    default = world.batch()
    named = named_batch(world)
    world.job(entity, batch_id=default.batch_id)
    mine = named_job(world, entity, batch_id=named.batch_id)
    world.clock.advance(3600)
    payload = dlpipe_cli("status", "--date", world.day, "--feed", FEED, "--json").json()
    assert [b["batch_id"] for b in payload["batches"]] == [named.batch_id]
    assert [d["feed"] for d in payload["feeds"]] == [FEED]
    available = [j["file_id"] for j in payload["stuck"]["available"] if entity in j["file_id"]]
    assert available == [mine.file_id]
    every = dlpipe_cli("status", "--date", world.day, "--json").json()
    available = [j["file_id"] for j in every["stuck"]["available"] if entity in j["file_id"]]
    assert sorted(available) == sorted([f"{entity}-{world.day}", mine.file_id])


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("batch", "show"),
        ("batch", "list", "--date", "2026-02-28"),
        ("jobs", "stuck"),
        ("jobs", "requeue", "--stuck"),
        ("dlq", "show"),
        ("backfill", "--from", "2026-02-01", "--to", "2026-02-02", "--dry-run"),
    ],
)
def test_a_bad_feed_name_is_one_usage_line(dlpipe_cli: CliRunner, args: tuple[str, ...]) -> None:
    """--feed 'Vendor_B' is refused before any read: one line, exit 2."""
    run = dlpipe_cli(*args, "--feed", "Vendor_B\n")
    assert run.code == 2, run.out
    assert run.err.count("\n") == 1, run.err
    assert "'Vendor_B\\n' is not a feed name" in run.err, run.err


def test_batch_show_lists_every_feed_and_list_narrows_to_one(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """batch show: a table per feed; batch list --feed: that feed's batches only."""
    default = world.batch()
    named = named_batch(world)
    shown = dlpipe_cli("batch", "show", "--date", world.day)
    assert shown.code == 0, shown.err
    assert f"batches of {world.day}, feed {FEED}" in shown.out
    assert default.batch_id in shown.out
    assert named.batch_id in shown.out
    listed = dlpipe_cli("batch", "list", "--date", world.day, "--feed", FEED, "--json").json()
    assert [(b["batch_id"], b["feed"]) for b in listed["batches"]] == [(named.batch_id, FEED)]
    none = dlpipe_cli("batch", "show", "--date", world.day, "--feed", "vendor-c")
    assert none.code == 1
    assert (
        none.err
        == f"dlpipe: no batch for {world.day} of feed vendor-c (has the poller run for it?)\n"
    )


def test_requeue_stuck_with_a_feed_leaves_the_other_feeds_jobs(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """requeue --stuck --feed vendor-b sends vendor-b's idle jobs only."""
    default = world.batch()
    named = named_batch(world)
    world.job(entity, batch_id=default.batch_id)
    mine = named_job(world, entity, batch_id=named.batch_id)
    world.clock.advance(3600)
    stuck = dlpipe_cli("jobs", "stuck", "--status", "available", "--feed", FEED, "--json").json()
    assert entity not in str([j for j in stuck["jobs"] if j["file_id"] != mine.file_id])
    run = dlpipe_cli("jobs", "requeue", "--stuck", "--feed", FEED, "--json")
    assert run.code == 0, run.err
    requeued = [r["file_id"] for r in run.json()["results"] if entity in r["file_id"]]
    assert requeued == [mine.file_id]
    assert [m.file_id for m in world.queued() if entity in m.file_id] == [mine.file_id]
    refused = dlpipe_cli("jobs", "requeue", mine.file_id, "--feed", FEED)
    assert refused.code == 2
    assert "--feed applies to --stuck only" in refused.err


def test_dlq_commands_with_a_feed_act_on_its_messages_and_leave_the_others(
    world: World, dlpipe_cli: CliRunner, entity: str
) -> None:
    """dlq show and redrive --feed vendor-b: its message only; the default feed's stays."""
    default = world.job(entity, batch_id=world.batch().batch_id)
    named = named_job(world, entity, batch_id=named_batch(world).batch_id)
    dlq = world.ops.settings.dlq_url or ""
    for job in (default, named):
        body = encode_message(JobMessage(job.file_id, job.batch_id))
        world.clients.sqs.send_message(QueueUrl=dlq, MessageBody=body)
    shown = dlpipe_cli("dlq", "show", "--feed", FEED, "--json").json()
    assert [m["file_id"] for m in shown["messages"]] == [named.file_id]
    every = dlpipe_cli("dlq", "show", "--json").json()
    assert sorted(m["file_id"] for m in every["messages"]) == sorted(
        [default.file_id, named.file_id]
    )
    redriven = dlpipe_cli("dlq", "redrive", "--feed", FEED, "--json")
    assert redriven.code == 0, redriven.err
    assert [m["file_id"] for m in redriven.json()["messages"]] == [named.file_id]
    assert [m.file_id for m in world.queued()] == [named.file_id]
    left = dlpipe_cli("dlq", "show", "--json").json()
    assert [m["file_id"] for m in left["messages"]] == [default.file_id]


def test_status_suggests_starting_a_named_feeds_day_with_its_feed(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """A configured feed without a batch on the date: its section's start line names it."""
    with_feeds(world, VENDOR_B)
    world.batch(status=BatchStatus.QUEUED)
    run = dlpipe_cli("status", "--date", world.day)
    assert f"batches of {world.day}, feed {FEED}: none" in run.out, run.out
    assert f"start one:\ndlpipe run --date {world.day} --feed {FEED}\n" in run.out, run.out
    assert "start one:\ndlpipe run --date " + world.day + "\n" not in run.out


def test_status_shows_a_feeds_day_as_late_by_its_deadline(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """vendor-b's deadline is 09:00 Berlin (08:00Z in winter, 07:00Z in summer) the next
    day; at 10:00Z with no completed batch its day is late, the default feed's shows nothing."""
    with_feeds(world, VENDOR_B)
    named_batch(world, status=BatchStatus.QUEUED)
    world.batch(status=BatchStatus.QUEUED)
    payload = dlpipe_cli("status", "--date", world.day, "--json").json()
    fresh = {d["feed"]: d["freshness"] for d in payload["feeds"]}
    assert fresh["default"] is None
    assert fresh[FEED] in ("late by 2 h 00 min", "late by 3 h 00 min"), fresh
    run = dlpipe_cli("status", "--date", world.day)
    assert f"freshness: {fresh[FEED]} (deadline " in run.out, run.out


def test_a_day_completed_after_its_deadline_says_so_and_exits_0(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """vendor-b's day completed at 10:00Z, 2 h after its 09:00 Berlin deadline (3 h in
    summer): delivered, so status says when, and exits 0 (test_status_shows_a_feeds_day_as_late_by_its_deadline: not complete, late)."""
    with_feeds(world, VENDOR_B)
    named_batch(world, status=BatchStatus.COMPLETED)
    world.batch(status=BatchStatus.COMPLETED)
    run = dlpipe_cli("status", "--date", world.day, "--json")
    fresh = {d["feed"]: d["freshness"] for d in run.json()["feeds"]}
    assert fresh[FEED] in (
        "completed, 2 h 00 min after its deadline",
        "completed, 3 h 00 min after its deadline",
    ), fresh
    assert run.code == 0, run.err
    assert run.json()["unhealthy"] == []


def test_status_of_a_feed_neither_configured_nor_seen_is_one_line(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """--feed nosuch: one line naming it and the configured feeds, exit 1 (before: a screen
    offering `dlpipe run --date D --feed nosuch`); a feed seen in the date's batches shows."""
    with_feeds(world, VENDOR_B)
    world.batch(status=BatchStatus.COMPLETED)
    run = dlpipe_cli("status", "--date", world.day, "--feed", "nosuch")
    assert run.code == 1
    assert run.out == ""
    assert run.err == (
        f"dlpipe: feed 'nosuch' is not configured and has no batch on {world.day}"
        f" (configured: default, {FEED})\n"
    )
    with_feeds(world)  # vendor-b no longer configured: its batch still shows
    named_batch(world, status=BatchStatus.COMPLETED)
    assert dlpipe_cli("status", "--date", world.day, "--feed", FEED).code == 0


def test_backfill_decides_a_named_feed_from_its_own_batches(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """The default feed's completed day does not make vendor-b's complete; without --dry-run
    vendor-b's day is started, the starter told its feed."""
    world.batch(status=BatchStatus.COMPLETED)
    args = ("backfill", "--from", world.day, "--to", world.day, "--dry-run", "--json")
    (default,) = dlpipe_cli(*args).json()["dates"]
    assert default["action"] == "skipped"
    (named,) = dlpipe_cli(*args, "--feed", FEED).json()["dates"]
    assert (named["action"], named["reason"]) == ("would start", "no batch")
    starter = RecordingStarter()
    run = dlpipe_cli(
        "backfill", "--from", world.day, "--to", world.day, "--feed", FEED, "--json",
        obj=replace(world.ops, starter=starter),
    )  # fmt: skip
    assert run.code == 0, run.err
    assert [d["action"] for d in run.json()["dates"]] == ["started"]
    assert starter.started == [(world.day, False)]
    assert starter.feeds == [FEED]


def test_batch_audit_answers_per_feed(
    world: World, dlpipe_cli: CliRunner, provisioned: Provisioned
) -> None:
    """Without --feed the audit checks every feed: the default feed's completed batch has no
    manifest, vendor-b has no batch at all; a line names each, its feed after the date."""
    bucket = str(provisioned.destination_bucket)
    world.ops = world.rewired(replace(world.ops.settings, destination_bucket=bucket))
    with_feeds(world, VENDOR_B)
    world.batch(status=BatchStatus.COMPLETED)
    run = dlpipe_cli("batch", "audit", "--from", world.day, "--to", world.day, "--json")
    assert run.code == 1
    assert [d["feed"] for d in run.json()["dates"]] == ["default", FEED]
    lines = run.err.splitlines()
    # The named feed never ran that date: one line for every such feed-date, naming it.
    named = [line for line in lines if line.startswith("no batch (nor manifest) for ")]
    assert named == [f"no batch (nor manifest) for 1 feed-date(s): {FEED} ({world.day})"], lines
    assert len(lines) > len(named), lines  # the default feed's lines too
    assert all(line.startswith(f"{world.day} default: ") for line in lines if line not in named)
    narrowed = dlpipe_cli("batch", "audit", "--from", world.day, "--to", world.day, "--feed", FEED)
    assert narrowed.err.splitlines() == named


def test_the_feeds_file_names_the_feeds_status_shows(
    world: World,
    dlpipe_cli: CliRunner,
    repo_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """DLPIPE_FEEDS_FILE's feeds are shown for a date even before any of their batches exist
    (the `file:` secrets the example names, relative to the working directory, exist)."""
    monkeypatch.chdir(tmp_path)
    _secret_files(tmp_path)
    monkeypatch.setenv(ENV_FEEDS_FILE, str(repo_root / "feeds.example.toml"))
    world.batch(status=BatchStatus.QUEUED)
    payload = dlpipe_cli("status", "--date", world.day, "--json", obj=world.rewired()).json()
    (named,) = [d for d in payload["feeds"] if d["feed"] == FEED]
    assert named["batches"] == []
    assert named["start_command"] == f"dlpipe run --date {world.day} --feed {FEED}"
    assert named["freshness"].startswith("late by ")  # 09:30 London the next day, now 10:00Z


def _secret_files(folder: Path) -> None:
    """The token and key files feeds.example.toml's vendor-b names (a key by shape only)."""
    where = folder / ".dlpipe/feeds/vendor-b"
    where.mkdir(parents=True)
    (where / "token").write_text("tok-123")
    (where / "private_key.pem").write_text(
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
    )


def test_an_invalid_feeds_file_is_one_line(
    dlpipe_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A feeds file the domain's rule refuses stops the command with its one line, exit 1."""
    bad = tmp_path / "feeds.toml"
    bad.write_text('[feeds.vendor-b]\nschedule = "cron(0 7 * * ? *)"\ntime_zone = "Mars/Base"\n')
    monkeypatch.setenv(ENV_FEEDS_FILE, str(bad))
    run = dlpipe_cli("status", from_env=True)
    assert run.code == 1, run.out
    assert (
        run.err
        == f"dlpipe: {bad}: feeds.vendor-b.time_zone: 'Mars/Base' is not an IANA time zone\n"
    )

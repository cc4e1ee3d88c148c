"""The README's operator commands in an 80-column terminal: every BatchID, FileID and
timestamp they print is whole on one line, and none prints a traceback; a named feed's
62-65-character BatchIDs too (jobs show, dlq show, the status screen's queues)."""

from __future__ import annotations

import itertools
import re
import uuid

import pytest

from dlpipe.adapters.aws import AwsClients
from dlpipe.domain.messages import JobMessage, encode_message
from dlpipe.domain.model import FileJob, JobStatus, listed_by, make_batch_id, make_file_id
from tests.integration.test_feed_parameters import AS_TERRAFORM_WRITES, path, put
from tests.integration.test_ops_feed_queues import feed_queue
from tests.integration.test_ops_feeds_ssm import on_aws
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "feed_queue", "no_scan", "path", "world"]  # fixtures used below

TIME_START = re.compile(r"\d{4}-\d{2}-\d{2}T")
WORD = re.compile(r"[\w.:-]+")
TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def _seed_day(world: World, entity: str) -> tuple[str, list[str]]:
    """A batch with a completed, a failed, a stuck (expired claim) and an available job."""
    batch = world.batch(error_message="provider_unavailable: 503 after 7 attempts over 120 min")
    ids = [world.job(f"{entity}{n}", batch_id=batch.batch_id).file_id for n in ("a", "b", "c", "d")]
    owner = "worker-ip-10-0-0-1"
    for file_id in ids[:2]:
        world.jobs.claim(file_id, owner, 60)
    world.jobs.complete(
        ids[0], owner, byte_count=10, sha256="0" * 64, destination_key=f"k/{ids[0]}"
    )
    world.jobs.finish_unsuccessfully(
        ids[1], owner, JobStatus.FAILED, "url_expired: the URL expired twice"
    )
    world.jobs.claim(ids[2], "worker-ip-10-0-0-2", 60)
    world.clock.advance(7200)
    return batch.batch_id, ids


def _check_whole(out: str, values: list[str]) -> None:
    """No value is cut across lines (a word that begins it, with the next line holding the
    rest); each time is whole on its line."""
    lines = [*out.splitlines(), ""]
    for line, after in itertools.pairwise(lines):
        for word in WORD.findall(line):
            cut = [v for v in values if v != word and v.startswith(word)]
            assert [v for v in cut if v[len(word) :][:4] in after] == [], (cut, line, after)
        assert len(TIME_START.findall(line)) == len(TIME.findall(line)), line


def test_the_readme_commands_keep_ids_and_times_whole_at_80_columns(
    world: World, dlpipe_cli: CliRunner, entity: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """status, batch show, batch list, jobs stuck, jobs list --batch and jobs show at
    COLUMNS=80 (before: rich folded the BatchID's UUID and the timestamps across lines)."""
    batch_id, file_ids = _seed_day(world, entity)
    monkeypatch.setenv("COLUMNS", "80")
    commands = [
        ("status", "--date", world.day),
        ("batch", "show", "--date", world.day),
        ("batch", "list", "--date", world.day),
        ("jobs", "stuck", "--older-than", "30m"),
        ("jobs", "list", "--batch", batch_id),
        ("jobs", "show", file_ids[2]),
    ]
    printed = []
    for args in commands:
        run = dlpipe_cli(*args)
        assert (run.code, "Traceback" in run.err + run.out) == (0, False), (args, run.err)
        assert max(len(line) for line in run.out.splitlines()) <= 80, (args, run.out)
        _check_whole(run.out, [batch_id, *file_ids])
        printed.append(run.out)
    status, show, listed, stuck, jobs, job = printed
    assert all(batch_id in out for out in (status, show, listed, jobs, job))
    assert file_ids[2] in stuck
    assert all(file_id in jobs for file_id in file_ids)
    assert TIME.search(stuck)
    assert TIME.search(job)


def test_an_empty_result_is_one_line_saying_none(world: World, dlpipe_cli: CliRunner) -> None:
    """A batch with no jobs: `jobs list` prints one line ending `: none`, not an empty
    bordered table."""
    batch = world.batch()
    run = dlpipe_cli("jobs", "list", "--batch", batch.batch_id)
    assert (run.code, run.out.strip().splitlines()) == (0, [f"jobs of {batch.batch_id}: none"])


def test_status_without_a_batch_exits_1_as_batch_show_does(
    world: World, dlpipe_cli: CliRunner
) -> None:
    """A date the poller never ran: `status` prints its screen, then the same one line and
    exit code 1 as `batch show` (before: exit 0), as the README says."""
    status = dlpipe_cli("status", "--date", world.day)
    show = dlpipe_cli("batch", "show", "--date", world.day)
    assert (status.code, status.err) == (show.code, show.err) == (1, status.err)
    assert status.err == f"dlpipe: no batch for {world.day} (has the poller run for it?)\n"
    assert "DLQ depth" in status.out


def test_an_age_beyond_ten_years_is_a_usage_error(world: World, dlpipe_cli: CliRunner) -> None:
    """`jobs stuck --older-than 999999999d` against a real table: exit 2 naming the range
    (before: a year-out-of-range ValueError traceback)."""
    for age in ("999999999d", "99999999999999999999d"):
        run = dlpipe_cli("jobs", "stuck", "--older-than", age)
        assert (run.code, "0s to 3650d" in run.err, run.err.count("\n")) == (2, True, 1), run.err


# Named feeds whose BatchIDs are 62 and 65 characters long (`{feed}.batch-{date}-{uuid}`).
NAMED_FEEDS = ("vendor-b", "vendor-b-eu")


def _named_job(world: World, entity: str, feed: str, batch_id: str, **changes: object) -> FileJob:
    file_id = make_file_id(entity, world.day, feed)
    return world.job(entity, batch_id=batch_id, file_id=file_id, feed=feed, **changes)


def _seed_named_day(world: World, entity: str, feed: str) -> tuple[str, list[FileJob]]:
    """A named feed's batch with a completed job (its object's key and SHA-256) and a stuck
    one (an expired claim) that the batch's listing named (ListedBy: the BatchID and entry)."""
    batch_id = make_batch_id(world.day, str(uuid.uuid4()), feed)
    world.batch(batch_id=batch_id, feed=feed)
    done = _named_job(world, f"{entity}a", feed, batch_id)
    stuck = _named_job(world, f"{entity}b", feed, batch_id, listed_by=listed_by(batch_id, 12))
    owner = "worker-ip-10-0-0-1"
    for job in (done, stuck):
        world.jobs.claim(job.file_id, owner, 60)
    key = f"vendors/{feed}/{world.day}/{done.entity}.csv"
    world.jobs.complete(done.file_id, owner, byte_count=10, sha256="a" * 64, destination_key=key)
    world.clock.advance(7200)
    return batch_id, [world.jobs.require(done.file_id), world.jobs.require(stuck.file_id)]


def _words(out: str) -> set[str]:
    return set(out.split())


def _starts_whole(out: str, values: list[str]) -> None:
    """No word printed is the start of a value cut short (16 characters or more, and no other
    value whole: a named feed's BatchID begins its ListedBy); the feed's name, a prefix of
    its IDs, is no cut."""
    cut = [
        (word, line)
        for line in out.splitlines()
        for word in line.split()
        if len(word) >= 16 and word not in values and any(v.startswith(word) for v in values)
    ]
    assert cut == [], cut


@pytest.mark.parametrize("feed", NAMED_FEEDS)
def test_jobs_show_keeps_a_named_feeds_ids_whole_at_80_columns(
    world: World, dlpipe_cli: CliRunner, entity: str, feed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jobs show` of a named feed's files at COLUMNS=80: the BatchID, the ListedBy, the key
    and the SHA-256s are each one word on one line, no line past 80 (before: the value column
    was 58 wide and folded the BatchID after its 58th character)."""
    batch_id, jobs = _seed_named_day(world, entity, feed)
    assert len(batch_id) == {"vendor-b": 62, "vendor-b-eu": 65}[feed]
    monkeypatch.setenv("COLUMNS", "80")
    for job in jobs:
        run = dlpipe_cli("jobs", "show", job.file_id)
        assert (run.code, "Traceback" in run.err + run.out) == (0, False), run.err
        assert max(len(line) for line in run.out.splitlines()) <= 80, run.out
        ids = [job.file_id, job.batch_id, job.listed_by, job.destination_key, job.sha256]
        whole = [v for v in ids if v is not None]
        whole.append(job.expected_sha256 or "")
        _starts_whole(run.out, whole)
        assert [v for v in whole if v not in _words(run.out)] == [], run.out
        assert TIME.search(run.out)


@pytest.mark.parametrize("feed", NAMED_FEEDS)
def test_dlq_show_keeps_the_file_id_at_80_columns(
    world: World, dlpipe_cli: CliRunner, entity: str, feed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dlq show` of a named feed's dead letters at COLUMNS=80: the FileID column stays,
    each FileID whole; the message id goes first (before: the message id stayed and the
    file id, batch and sent columns were left out)."""
    batch_id, jobs = _seed_named_day(world, entity, feed)
    dlq = world.ops.settings.dlq_url or ""
    for job in jobs:
        body = encode_message(JobMessage(job.file_id, batch_id))
        world.clients.sqs.send_message(QueueUrl=dlq, MessageBody=body)
    monkeypatch.setenv("COLUMNS", "80")
    run = dlpipe_cli("dlq", "show")
    assert (run.code, "Traceback" in run.err + run.out) == (0, False), run.err
    assert max(len(line) for line in run.out.splitlines()) <= 80, run.out
    heading = run.out.splitlines()[1]
    assert heading.split()[:2] == ["file", "id"], run.out
    file_ids = [job.file_id for job in jobs]
    assert [f for f in file_ids if f not in _words(run.out)] == [], run.out
    _starts_whole(run.out, [*file_ids, batch_id])
    left_out = next((x for x in run.out.splitlines() if x.startswith("(left out")), "")
    assert ("message id" in heading) != ("message id" in left_out), run.out
    message_ids = [m["message_id"] for m in dlpipe_cli("dlq", "show", "--json").json()["messages"]]
    assert len(message_ids) == 2
    if "message id" in heading:
        assert all(m in _words(run.out) for m in message_ids), run.out


def test_the_queues_table_keeps_a_named_feeds_queue_name_whole(
    world: World,
    dlpipe_cli: CliRunner,
    clients: AwsClients,
    path: str,
    feed_queue: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`status`'s queues by feed, a named feed with its own queue and one sharing the
    deployment's: at 80 columns the queue names never wrap (before: the feed queue's name
    was folded across two lines); wider, each is whole on its feed's row."""
    feed, url = feed_queue
    shared = f"{feed}-s"
    for name, own in ((feed, {"queue_url": url}), (shared, {})):
        value = {**AS_TERRAFORM_WRITES, "name": name, "destination_prefix": f"vendors/{name}"}
        put(clients, f"{path}/{name}", {**value, **own})
    on_aws(world, path, allow_http_urls=True)
    names = [url.rsplit("/", 1)[-1], (world.ops.settings.queue_url or "").rsplit("/", 1)[-1]]
    for width in (80, 120, 200):
        monkeypatch.setenv("COLUMNS", str(width))
        run = dlpipe_cli("status", "--date", world.day)
        assert "Traceback" not in run.err + run.out, run.err
        assert "queues by feed\n" in run.out, (run.out, run.err)
        section = run.out.split("queues by feed\n", 1)[1].split("\n\n", 1)[0]
        assert max(len(line) for line in section.splitlines()) <= width, section
        _starts_whole(section, names)
        heading = section.splitlines()[0].split()
        if "queue" not in heading:  # left out, and named so
            assert "queue" in section.splitlines()[-1].split("columns: ", 1)[1], section
            assert width < 120, section
            continue
        rows = {line.split()[0]: line.split() for line in section.splitlines()[2:]}
        assert names[0] in rows[feed], section
        assert names[1] in rows["default"], section
        assert names[1] in rows[shared], section

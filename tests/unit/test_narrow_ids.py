"""An 80-column terminal never breaks an ID inside a cell: `jobs show`'s record of a named
feed's file gives an ID too long for the room beside the names a line of its own, `dlq show`
keeps the FileID and leaves the message id out first, and the queues table's queue names are
never wrapped (render.job_view, dlq's table, waiting.queues_view, through render.emit)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from rich.console import RenderableType

from dlpipe.cli.ops.dlq import _view as dlq_view
from dlpipe.cli.ops.layout import ALONE_INDENT
from dlpipe.cli.ops.render import emit, job_view
from dlpipe.cli.ops.waiting import queues_view
from dlpipe.domain.messages import JobMessage
from dlpipe.domain.model import listed_by, make_batch_id, make_file_id
from dlpipe.domain.queued import QueuedMessage
from dlpipe.domain.waiting import FeedQueue, FeedQueues, QueueDepth
from dlpipe.services.ops.dlq import Action, DlqEntry
from tests.support import BASE_MS, make_job

DAY = "2026-02-28"
FEED = "vendor-b-eu"  # its BatchIDs are 65 characters long
BATCH = make_batch_id(DAY, str(uuid.UUID(int=7)), FEED)
FILE = make_file_id("accounts", DAY, FEED)
ERROR = "provider_unavailable: 503 after 7 attempts over 120 min, the last from 10.0.0.7"
Print = Callable[[int, RenderableType], list[str]]


@pytest.fixture
def printed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Print:
    """The lines the ops commands print (render.emit) for a view at a terminal width."""

    def at(width: int, view: RenderableType) -> list[str]:
        monkeypatch.setenv("COLUMNS", str(width))
        emit({}, [view], as_json=False)
        return capsys.readouterr().out.splitlines()

    return at


def _job_lines(printed: Print, width: int) -> list[str]:
    job = make_job(
        "accounts",
        DAY,
        file_id=FILE,
        batch_id=BATCH,
        feed=FEED,
        listed_by=listed_by(BATCH, 12),
        sha256="a" * 64,
        error_message=ERROR,
        lease_owner="worker-ip-10-0-0-1",
    )
    return printed(width, job_view(job, BASE_MS))


def test_jobs_show_gives_an_id_longer_than_the_room_beside_the_names_its_own_line(
    printed: Print,
) -> None:
    """At 80 columns the 65-character BatchID, its ListedBy and the SHA-256s are each alone on
    the line after their field's name, whole (before: folded after the 58th character); a
    short ID stays beside its name; the error text wraps in the value column."""
    lines = _job_lines(printed, 80)
    assert max(len(line) for line in lines) <= 80, lines
    for name, value in (
        ("batch_id", BATCH),
        ("listed_by", f"{BATCH}#12"),
        ("sha256", "a" * 64),
        ("expected_sha256", "0" * 64),
    ):
        at = lines.index(name)
        assert lines[at + 1] == ALONE_INDENT + value, lines[at : at + 2]
    (file_line,) = [line for line in lines if line.startswith("file_id ")]
    assert file_line.split() == ["file_id", FILE]
    (error_at,) = [n for n, line in enumerate(lines) if line.startswith("error_message ")]
    column = lines[error_at].index("provider_unavailable:")
    wrapped = [lines[error_at][column:], lines[error_at + 1][column:]]
    assert " ".join(part.strip() for part in wrapped) == ERROR, lines
    assert lines[error_at + 1][:column].strip() == "", lines


def test_jobs_show_keeps_every_id_beside_its_name_when_there_is_room(printed: Print) -> None:
    """At 200 columns each field is one line: its name, then its value."""
    lines = _job_lines(printed, 200)
    rows = {line.split()[0]: line.split()[1:] for line in lines[3:]}
    assert rows["batch_id"] == [BATCH]
    assert rows["listed_by"] == [f"{BATCH}#12"]
    assert rows["error_message"] == ERROR.split()


def test_jobs_show_in_a_terminal_narrower_than_an_id_runs_the_line_on(printed: Print) -> None:
    """At 40 columns the BatchID still prints whole on one line (past the terminal's edge)."""
    lines = _job_lines(printed, 40)
    assert ALONE_INDENT + BATCH in lines
    assert all(BATCH not in line or line.strip() in (BATCH, f"{BATCH}#12") for line in lines)


def _dlq_entry(n: int) -> DlqEntry:
    file_id = make_file_id(f"accounts{n}", DAY, FEED)
    message = QueuedMessage(
        message_id=str(uuid.UUID(int=n)),
        receipt_handle="r",
        receive_count=5,
        sent_at_ms=BASE_MS,
        job=JobMessage(file_id, BATCH),
        problem=None,
    )
    job = make_job(f"accounts{n}", DAY, file_id=file_id, batch_id=BATCH, feed=FEED)
    return DlqEntry(message, job, Action.SEND, "job available")


def test_dlq_show_keeps_the_file_id_and_leaves_the_message_id_out_first(printed: Print) -> None:
    """A named feed's dead letters at 80 columns: the FileID column stays, first, each FileID
    whole; the message id is the first column left out (before: the message id stayed and
    the FileID was left out); at 250 columns every column is there."""
    entries = [_dlq_entry(n) for n in (1, 2)]
    narrow = printed(80, dlq_view("DLQ messages", entries))
    assert narrow[1].split()[:2] == ["file", "id"], narrow
    assert [line.split()[0] for line in narrow[3:5]] == [e.file_id for e in entries]
    assert narrow[-1].startswith("(left out at 80 columns: message id, "), narrow
    assert max(len(line) for line in narrow) <= 80, narrow
    wide = printed(250, dlq_view("DLQ messages", entries))
    assert wide[3].split()[:3] == [entries[0].file_id, entries[0].message.message_id, BATCH]
    assert "left out" not in wide[-1]


def _queues(name_prefix: str = "prod-") -> tuple[FeedQueues, dict[str, str]]:
    base = "https://sqs.eu-west-1.amazonaws.com/123456789012/"
    names = {
        "default": f"{name_prefix}dlpipe-downloads",
        FEED: f"{name_prefix}dlpipe-downloads-feed-{FEED}",
    }
    rows = (
        FeedQueue(
            "default",
            base + names["default"],
            QueueDepth(3, 0),
            BASE_MS - 600_000,
            0,
            ("vendor-c",),
        ),
        FeedQueue(FEED, base + names[FEED], QueueDepth(2, 1), BASE_MS - 30_000, 1),
        FeedQueue("vendor-c", base + names["default"], None, None, 0, ("default",)),
    )
    queues = FeedQueues(rows, QueueDepth(0, 0), read_cap=1000, truncated=False, now_ms=BASE_MS)
    return queues, names


@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_the_queues_table_never_wraps_a_queue_name(printed: Print, width: int) -> None:
    """Each queue's name is whole on its feed's row, or the column is left out and named so
    (before: a named feed's queue name folded across two lines at 80 columns); what a queue
    is shared with is text beside it, left out before the name."""
    queues, names = _queues()
    lines = printed(width, queues_view(queues))
    assert max(len(line) for line in lines) <= width, lines
    heading = lines[1].split()
    rows = {line.split()[0]: line.split() for line in lines[3:] if not line.startswith("(left")}
    if "queue" not in heading:
        assert lines[-1].startswith(f"(left out at {width} columns: queue"), lines
        assert not any(name in "\n".join(lines) for name in names.values()), lines
        return
    assert names[FEED] in rows[FEED], lines
    assert names["default"] in rows["default"], lines
    assert names["default"] in rows["vendor-c"], lines
    if "shared" in heading:
        assert "with default; its depth on default's row" in " ".join(" ".join(lines).split())
    else:  # the text beside the names goes first
        assert lines[-1].startswith(f"(left out at {width} columns: shared;"), lines

"""The restatement rule (dlpipe/domain/restatement.py): a day's listing against its jobs."""

from __future__ import annotations

from dlpipe.domain.restatement import DayFile, ListedFile, Restatement, restatement

SHA_A, SHA_B = "a" * 64, "b" * 64


def _done(file_id: str, size: int = 10, sha: str = SHA_A, *, withdrawn: bool = False) -> DayFile:
    return DayFile(file_id, completed=True, size=size, sha256=sha, withdrawn=withdrawn)


def test_the_same_listing_is_no_revision() -> None:
    """Every listed file as published: all unchanged, nothing to revise."""
    found = restatement(
        [ListedFile("a-1", 10, SHA_A), ListedFile("b-1", 10, SHA_A)],
        [_done("a-1"), _done("b-1")],
        listing_complete=True,
    )
    assert found == Restatement(unchanged=("a-1", "b-1"))
    assert not found.is_revision


def test_a_new_sha256_or_size_is_changed_a_new_entity_added_an_absent_one_withdrawn() -> None:
    """Changed by SHA-256 (any letter case of the same digest is the same), by size; added;
    withdrawn from a complete listing; the counts say as much."""
    found = restatement(
        [
            ListedFile("same-1", 10, SHA_A.upper()),
            ListedFile("sha-1", 10, SHA_B),
            ListedFile("size-1", 11, SHA_A),
            ListedFile("new-1", 5, SHA_B),
        ],
        [_done("same-1"), _done("sha-1"), _done("size-1"), _done("gone-1")],
        listing_complete=True,
    )
    assert found == Restatement(
        unchanged=("same-1",), changed=("sha-1", "size-1"), added=("new-1",), withdrawn=("gone-1",)
    )
    assert found.counts() == {"unchanged": 1, "changed": 2, "added": 1, "withdrawn": 1}
    assert found.is_revision


def test_nothing_is_withdrawn_from_a_listing_not_read_to_its_end() -> None:
    """A completed job absent from a partial listing stays unchanged."""
    found = restatement(
        [ListedFile("a-1", 10, SHA_A)], [_done("a-1"), _done("b-1")], listing_complete=False
    )
    assert found == Restatement(unchanged=("a-1", "b-1"))


def test_a_file_withdrawn_before_and_still_absent_is_no_new_revision() -> None:
    """The revised day run again: its withdrawn file is none of the kinds; listed again, added."""
    day = [_done("a-1"), _done("gone-1", withdrawn=True)]
    assert restatement([ListedFile("a-1", 10, SHA_A)], day, listing_complete=True) == Restatement(
        unchanged=("a-1",)
    )
    back = restatement(
        [ListedFile("a-1", 10, SHA_A), ListedFile("gone-1", 10, SHA_A)], day, listing_complete=True
    )
    assert back == Restatement(unchanged=("a-1",), added=("gone-1",))


def test_unfinished_jobs_and_silent_entries_are_never_restated() -> None:
    """A failed job listed with other contents is a rerun's, not a change; an entry without a
    size or SHA-256 cannot tell a change; an absent failed job is not withdrawn."""
    failed = DayFile("f-1", completed=False, size=None, sha256=None)
    found = restatement(
        [ListedFile("f-1", 99, SHA_B), ListedFile("a-1", None, None)],
        [failed, _done("a-1"), DayFile("g-1", completed=False, size=None, sha256=None)],
        listing_complete=True,
    )
    assert found == Restatement(unchanged=("a-1", "f-1"))

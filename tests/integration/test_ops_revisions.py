"""A restated day on the operator screens, against the emulator (DynamoDB Local, moto S3):
`dlpipe status`, `batch show`, `jobs list` and `batch audit` of a day whose revision 2 changed,
added and withdrew a file (tests/integration/revision_day.py seeds it through the adapters)."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from dlpipe.domain.clock import ms_from_iso, time_for_people
from dlpipe.domain.model import BatchStatus
from dlpipe.local.provision import Provisioned
from tests.integration.revision_day import RevisionDay, seed_revision_day
from tests.integration.test_ops_fixtures import CliRunner, World, dlpipe_cli, no_scan, world

pytestmark = pytest.mark.integration
__all__ = ["dlpipe_cli", "no_scan", "world"]  # fixtures used by the tests below
COUNTS = {"changed": 1, "added": 1, "withdrawn": 1}


@pytest.fixture
def revised(world: World, provisioned: Provisioned) -> RevisionDay:
    """The restated day, its revision completed and its Day Revised recorded."""
    return seed_revision_day(world, str(provisioned.destination_bucket))


def _created(day: RevisionDay) -> str:
    return time_for_people(ms_from_iso(day.revision.created_at))


def _lines(out: str) -> str:
    return " ".join(out.split())  # the terminal's lines, unwrapped


def test_status_says_the_days_latest_batch_is_revision_2_and_what_it_changed(
    world: World, dlpipe_cli: CliRunner, revised: RevisionDay
) -> None:
    """--json: the feed's `revision` (number, the batch it revises, when, the counts from the
    Day Revised event the item keeps) and each batch's `revision`, `revises`, `revised_by`;
    the table: one line for the revision and one for the batch it replaced."""
    first, revision = revised.first.batch_id, revised.revision.batch_id
    run = dlpipe_cli("status", "--date", world.day, "--json")
    assert run.code == 0, run.err
    (feed,) = run.json()["feeds"]
    assert feed["revision"] == {
        "batch_id": revision,
        "revision": 2,
        "revises": first,
        "created_at": revised.revision.created_at,
        "counts": COUNTS,
        "counts_from": "event",
    }
    rows = {b["batch_id"]: b for b in run.json()["batches"]}
    assert (rows[revision]["revision"], rows[revision]["revises"]) == (2, first)
    assert rows[revision]["revision_counts"] == COUNTS
    assert (rows[first]["revision"], rows[first]["revised_by"]) == (None, revision)
    assert rows[first]["revised_by_revision"] == 2

    table = dlpipe_cli("status", "--date", world.day)
    assert table.code == 0, table.err
    said = _lines(table.out)
    assert (
        f"{revision}: revision 2 (revises {first}, created {_created(revised)};"
        " 1 changed, 1 added, 1 withdrawn)"
    ) in said
    assert f"{first}: revised by {revision} (revision 2)" in said


def test_a_revision_without_its_event_is_counted_from_its_manifest(
    world: World, dlpipe_cli: CliRunner, provisioned: Provisioned
) -> None:
    """A failed revision sent no Day Revised: its counts are its manifest's, one GET; with
    no destination bucket configured, the line says they were not counted."""
    day = seed_revision_day(
        world,
        str(provisioned.destination_bucket),
        revision_status=BatchStatus.FAILED,
        revision_event=False,
    )
    run = dlpipe_cli("status", "--date", world.day, "--json")
    assert run.code == 0, run.err
    (feed,) = run.json()["feeds"]
    assert (feed["revision"]["counts"], feed["revision"]["counts_from"]) == (COUNTS, "manifest")

    no_bucket = world.rewired(replace(world.ops.settings, destination_bucket=None))
    table = dlpipe_cli("status", "--date", world.day, obj=no_bucket)
    assert (
        f"{day.revision.batch_id}: revision 2 (revises {day.first.batch_id}, created"
        f" {_created(day)}; changes not counted: no Day Revised event, no manifest read)"
    ) in _lines(table.out)


def test_a_running_revision_says_its_changes_are_counted_when_it_ends(
    world: World, dlpipe_cli: CliRunner, provisioned: Provisioned
) -> None:
    """Revision 2 still queued: no manifest yet, nothing read, the line says so."""
    day = seed_revision_day(
        world, str(provisioned.destination_bucket), revision_status=BatchStatus.QUEUED
    )
    run = dlpipe_cli("status", "--date", world.day, "--json")
    (feed,) = run.json()["feeds"]
    assert (feed["revision"]["revision"], feed["revision"]["counts"]) == (2, None)
    table = dlpipe_cli("status", "--date", world.day)
    assert (
        f"{day.revision.batch_id}: revision 2 (revises {day.first.batch_id}, created"
        f" {_created(day)}; changes counted when it ends)"
    ) in _lines(table.out)


def test_batch_show_of_the_day_and_of_one_batch_names_the_revision(
    world: World, dlpipe_cli: CliRunner, revised: RevisionDay
) -> None:
    """`batch show --date D`: both batches, the revision's line and the revised one's;
    `batch show B`: B alone (its date's, without --date); --date of another day: exit 2."""
    first, revision = revised.first.batch_id, revised.revision.batch_id
    day = dlpipe_cli("batch", "show", "--date", world.day)
    assert day.code == 0, day.err
    said = _lines(day.out)
    assert f"{revision}: revision 2 (revises {first}, created {_created(revised)};" in said
    assert f"{first}: revised by {revision} (revision 2)" in said

    one = dlpipe_cli("batch", "show", revision, "--json")
    assert one.code == 0, one.err
    (row,) = one.json()["batches"]
    assert (row["batch_id"], row["revision"], row["revises"]) == (revision, 2, first)
    assert (row["created_at"], row["revision_counts"]) == (revised.revision.created_at, COUNTS)
    earlier = dlpipe_cli("batch", "show", first)
    assert f"{first}: revised by {revision} (revision 2)" in _lines(earlier.out)
    assert f"{revision}: revision" not in earlier.out  # B's own line is B's page

    wrong = dlpipe_cli("batch", "show", revision, "--date", "1912-04-15")
    assert wrong.code == 2
    assert f"{revision} is a batch of {world.day}, not of --date 1912-04-15" in wrong.err


def test_jobs_list_of_a_revision_marks_its_files_and_lists_the_withdrawn(
    world: World, dlpipe_cli: CliRunner, revised: RevisionDay
) -> None:
    """The revision's own partition: `change` marked changed, `new` added; then `gone`,
    still completed in batch 1's partition, WithdrawnBy the revision, its object kept."""
    revision = revised.revision.batch_id
    run = dlpipe_cli("jobs", "list", "--batch", revision, "--json")
    assert run.code == 0, run.err
    marks = {j["file_id"]: j["revised_as"] for j in run.json()["jobs"]}
    assert marks == {revised.ids["change"]: "changed", revised.ids["new"]: "added"}
    assert run.json()["withdrawn"] == [
        {
            "file_id": revised.ids["gone"],
            "batch_id": revised.first.batch_id,
            "destination_key": revised.keys["gone"],
            "sha256": hashlib.sha256(b"old gone").hexdigest(),
        }
    ]
    table = dlpipe_cli("jobs", "list", "--batch", revision)
    said = _lines(table.out)
    assert "revised" in table.out.splitlines()[1]  # the column's heading
    kept = "each still completed in its batch, its object kept"
    assert f"withdrawn by {revision} (1; {kept})" in said
    assert revised.ids["gone"] in said

    first = dlpipe_cli("jobs", "list", "--batch", revised.first.batch_id, "--json")
    assert first.json()["withdrawn"] is None  # no revision: nothing it withdrew


def _audit(world: World, dlpipe_cli: CliRunner) -> tuple[int, list[str], dict[str, object]]:
    run = dlpipe_cli("batch", "audit", "--from", world.day, "--to", world.day, "--json")
    (checked,) = run.json()["dates"]
    return run.code, run.err.strip().splitlines(), checked


def test_the_audit_checks_the_manifest_revision_2_supersedes(
    world: World, dlpipe_cli: CliRunner, revised: RevisionDay
) -> None:
    """Intact: exit 0, revision 2 the pointer's and revision 1's manifest checked (its 3
    entries, at the versions it names)."""
    code, lines, checked = _audit(world, dlpipe_cli)
    assert (code, lines) == (0, [])
    assert checked["revision"] == 2
    assert checked["revisions"] == [
        {
            "revision": 1,
            "batch": revised.first.batch_id,
            "manifest": revised.first_ref.key,
            "version_id": revised.first_ref.version_id,
            "entries": 3,
            "problems": 0,
            "problem_lines": [],
        }
    ]


def test_the_audit_names_an_object_version_only_revision_1_names(
    world: World, dlpipe_cli: CliRunner, revised: RevisionDay
) -> None:
    """The version of `change` only revision 1's manifest names is deleted (its key's current
    version is revision 2's): the latest manifest still verifies, revision 1's does not, and
    the one line names the revision, its batch and the object version."""
    old = revised.versions["change"][0]
    world.clients.s3.delete_object(Bucket=revised.bucket, Key=revised.keys["change"], VersionId=old)
    code, lines, _ = _audit(world, dlpipe_cli)
    assert (code, lines) == (
        1,
        [
            f"{world.day} default: revision 1 ({revised.first.batch_id}): object"
            f" {revised.keys['change']} version {old} missing"
        ],
    )


def test_the_audit_names_a_superseded_manifest_that_is_gone(
    world: World, dlpipe_cli: CliRunner, revised: RevisionDay
) -> None:
    """Revision 1's manifest version deleted: one line naming it, at that version."""
    ref = revised.first_ref
    world.clients.s3.delete_object(
        Bucket=revised.bucket, Key=ref.key, VersionId=str(ref.version_id)
    )
    code, lines, _ = _audit(world, dlpipe_cli)
    assert code == 1
    assert lines == [
        f"{world.day} default: revision 1 ({revised.first.batch_id}): manifest {ref.key}"
        f" version {ref.version_id} missing"
    ]

"""Two feeds' days at once on one local stack (dlpipe/local/feed_days.py): one stub provider
per feed with its own key and token, shared workers, one durable execution per feed."""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path

import pytest

from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.crypto import load_private_key, unwrap_aes_key
from dlpipe.adapters.feed_parameters import feed_from_parameter
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.config import ConfigError
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM
from dlpipe.domain.clock import ms_from_iso
from dlpipe.domain.download_errors import WrongKeyError
from dlpipe.domain.model import BatchStatus, JobStatus, make_file_id, parse_batch_key
from dlpipe.domain.outage import OutageBackoff
from dlpipe.local.day import DayOptions, DayReport
from dlpipe.local.feed_days import LocalFeeds, local_feeds, run_feed_days
from dlpipe.local.stack import LocalStack
from dlpipe.local.stack_feeds import read_template
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import StubFileSpec
from tests.e2e.test_local_day import stack
from tests.support import unique_day

pytest_plugins = ["tests.provider_fixtures"]
pytestmark = pytest.mark.e2e
__all__ = ["stack"]  # the fixture, shared as is

FILES = [
    StubFileSpec("accounts", 70_001, CIPHER_GCM),
    StubFileSpec("positions", 4_096, CIPHER_CBC),
    StubFileSpec("trades", 0, CIPHER_GCM),
]
QUICK = DayOptions(date="", workers=2, poll_interval_seconds=1, max_polls=90)


def _two_feeds(stack: LocalStack, tmp_path: Path) -> LocalFeeds:
    """The shipped template's feeds: the default (the stack's key and token) and vendor-b."""
    return local_feeds(stack, read_template(), tmp_path / "feeds", FILES)


def _by_feed(reports: list[DayReport]) -> dict[str, DayReport]:
    return {report.feed: report for report in reports}


def _object(stack: LocalStack, key: str) -> bytes:
    bucket = stack.settings.require("destination_bucket")
    return stack.clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def test_the_same_entity_of_two_feeds_is_two_files_two_jobs_two_objects_two_keys(
    stack: LocalStack, tmp_path: Path, rsa_keypair: tuple[bytes, bytes]
) -> None:
    """Both feeds publish `accounts`: two FileIDs, two completed jobs of their own feed's
    batch, two objects (vendor-b's under its prefix) each hashing to its own provider's
    plaintext, and each job's AES key unwraps with its own feed's private key only."""
    day = unique_day()
    local = _two_feeds(stack, tmp_path)
    reports = _by_feed(run_feed_days(stack, local, replace(QUICK, date=day)))
    assert [(r.status, r.ok) for r in reports.values()] == [("completed", True)] * 2
    jobs = JobsTable(stack.clients.dynamodb, stack.settings.jobs_table)
    mine, theirs = (
        jobs.require(make_file_id("accounts", day, feed)) for feed in ("default", "vendor-b")
    )
    assert (mine.file_id, theirs.file_id) == (f"accounts-{day}", f"vendor-b.accounts-{day}")
    assert (mine.status, theirs.status) == (JobStatus.COMPLETED, JobStatus.COMPLETED)
    assert [parse_batch_key(j.batch_id)[0] for j in (mine, theirs)] == ["default", "vendor-b"]
    assert (mine.batch_id, theirs.batch_id) == (
        reports["default"].batch_id,
        reports["vendor-b"].batch_id,
    )
    assert mine.destination_key == f"accounts/{day}/accounts-{day}"
    assert theirs.destination_key == f"vendor-b/accounts/{day}/vendor-b.accounts-{day}"
    bodies = [_object(stack, str(j.destination_key)) for j in (mine, theirs)]
    digests = [hashlib.sha256(body).hexdigest() for body in bodies]
    assert digests == [mine.expected_sha256, theirs.expected_sha256]
    assert digests[0] != digests[1]  # two providers' plaintexts, never one copied twice
    default_key = load_private_key(rsa_keypair[0])
    vendor_b_key = load_private_key(local.keys["vendor-b"].private_key_path.read_bytes())
    assert len(unwrap_aes_key(default_key, mine.encrypted_aes_key)) == 32
    assert len(unwrap_aes_key(vendor_b_key, theirs.encrypted_aes_key)) == 32
    for wrong_key, job in ((vendor_b_key, mine), (default_key, theirs)):
        with pytest.raises(WrongKeyError):
            unwrap_aes_key(wrong_key, job.encrypted_aes_key)


def test_the_named_feed_reaches_every_component_as_terraform_leaves_it_on_aws(
    stack: LocalStack, tmp_path: Path
) -> None:
    """No feeds file: vendor-b is the SSM parameter terraform/feeds.tf's path names, its token
    and key are Secrets Manager secrets named as Terraform names a feed's, and its day
    completes on them alone."""
    assert "DLPIPE_FEEDS_FILE" not in os.environ
    day = unique_day()
    reports = _by_feed(run_feed_days(stack, _two_feeds(stack, tmp_path), replace(QUICK, date=day)))
    assert reports["vendor-b"].status == "completed"
    path = stack.provisioned.feeds_parameter_path
    assert path == "/dlpipe/feeds"
    value = stack.clients.ssm.get_parameter(Name=f"{path}/vendor-b")["Parameter"]["Value"]
    feed = feed_from_parameter("vendor-b", f"{path}/vendor-b", value, local=True)
    assert (feed.destination_prefix, feed.time_zone) == ("vendor-b", "Europe/London")
    for arn, name in (
        (feed.token_secret, "dlpipe/feeds/vendor-b/provider-token"),
        (feed.private_key_secret, "dlpipe/feeds/vendor-b/rsa-private-key"),
    ):
        assert stack.clients.secretsmanager.describe_secret(SecretId=str(arn))["Name"] == name


# The down feed's day waits out its provider for this long before it gives up: far longer than
# the healthy feed's whole day, so a healthy day held up by the outage would show.
OUTAGE = OutageBackoff(budget_seconds=12, initial_delay_seconds=1, max_delay_seconds=4)


def test_one_feeds_provider_down_never_delays_or_touches_the_other_feeds_day(
    stack: LocalStack, tmp_path: Path
) -> None:
    """vendor-b's provider answers 5xx to every call: the default feed's day completes (its
    batch ends) before vendor-b's gives up; vendor-b's own batch ends failed with the outage
    as its cause, and the default feed's batch counts only its own files."""
    day = unique_day()
    local = replace(_two_feeds(stack, tmp_path), faults={"vendor-b": Faults(error_rate=1.0)})
    reports = _by_feed(run_feed_days(stack, local, replace(QUICK, date=day, outage=OUTAGE)))
    healthy, down = reports["default"], reports["vendor-b"]
    assert (healthy.status, healthy.ok) == ("completed", True)
    assert down.status == "failed"
    assert "unavailable" in str(down.result["outcome"]["cause"]), down.result
    batches = BatchesTable(stack.clients.dynamodb, stack.settings.batches_table)
    mine, theirs = batches.require(healthy.batch_id), batches.require(down.batch_id)
    assert (mine.expected_count, mine.completed_count, mine.failed_count) == (3, 3, 0)
    # It failed before any listing: no file of its own, and none of the other feed's.
    assert (theirs.status, theirs.expected_count or 0, theirs.completed_count or 0) == (
        BatchStatus.FAILED,
        0,
        0,
    )
    # The healthy day ended while the other's outage was still being waited out: its batch
    # was written for the last time before the down feed's was.
    assert ms_from_iso(mine.updated_at) < ms_from_iso(theirs.updated_at), (mine, theirs)


def test_a_feed_whose_polling_cannot_recover_a_file_is_refused_before_any_day_starts(
    stack: LocalStack, tmp_path: Path
) -> None:
    """vendor-b's max_polls = 2 leaves no time to recover a crashed worker's file: one line
    naming the feed, before any batch is written (not after its execution's retries)."""
    day = unique_day()
    tables = read_template()
    tables["vendor-b"]["max_polls"] = 2
    local = local_feeds(stack, tables, tmp_path / "feeds", FILES)
    with pytest.raises(ConfigError, match=r"^feeds\.vendor-b: 2 polls x 1s = 2s is shorter"):
        run_feed_days(stack, local, replace(QUICK, date=day))
    batches = BatchesTable(stack.clients.dynamodb, stack.settings.batches_table)
    assert batches.query_by_date(day) == []


def test_the_default_feeds_entity_named_like_a_feeds_prefix_is_refused_not_published(
    stack: LocalStack, tmp_path: Path
) -> None:
    """The default feed publishes at the bucket's root: its provider's entity `vendor-b` would
    land inside feed vendor-b's folder (`vendor-b/DAY/vendor-b-DAY`), where a consumer takes it
    for vendor-b's data. It ends `error` (`rejected_listing`, reserved), nothing is published
    there, and the default feed's other files complete."""
    day = unique_day()
    local = replace(
        _two_feeds(stack, tmp_path),
        files_by_feed={"default": [*FILES, StubFileSpec("vendor-b", 1_000, CIPHER_GCM)]},
    )
    reports = _by_feed(run_feed_days(stack, local, replace(QUICK, date=day)))
    jobs = JobsTable(stack.clients.dynamodb, stack.settings.jobs_table)
    stranger = jobs.require(make_file_id("vendor-b", day, "default"))
    assert stranger.status is JobStatus.ERROR
    assert "reserved" in (stranger.error_message or ""), stranger.error_message
    bucket = stack.settings.require("destination_bucket")
    listed = stack.clients.s3.list_objects_v2(Bucket=bucket, Prefix=f"vendor-b/{day}/")
    assert [o["Key"] for o in listed.get("Contents", [])] == []
    others = [jobs.require(make_file_id(f.entity, day, "default")) for f in FILES]
    assert {j.status for j in others} == {JobStatus.COMPLETED}
    assert reports["vendor-b"].ok

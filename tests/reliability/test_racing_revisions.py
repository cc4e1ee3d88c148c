"""Racing runs of a restated day: two `dlpipe run --date D` processes start at once on a day the
vendor restated (2 files changed, 1 added, 1 withdrawn) while `dlpipe worker` processes are
SIGKILLed between a file's S3 publish and its completion record (the `published` pause point,
dlpipe/local/testpoints.py) and replaced by fresh ones, and a killed worker's publish of a
changed file reaches S3 only after its successor's. Still one revision: one revision batch
(Revision 2, both runs reporting it, the second having joined the first's), one new object
version per changed file, the added file once, the withdrawn one marked with its object left,
each changed job naming the version it replaced, a manifest whose counts are its entries,
and one `Day Revised`.

The two runs race inside create-batch: until the revision batch exists the stub answers its API
calls in pairs (PairedCalls: each one held until another arrives, at most PAIR_TIMEOUT_S), and
a run sends its calls one at a time, so its preflight listing pairs with the other run's, and
its restatement listing, sent after it read the day's batches, with the other's. Each run has
read the day's batches (the completed one only) before either one's restatement listing
returns, and both try to create the revision (restate.py: its BatchID is derived, so the
second put is refused and that run joins).

The stale publish: before any other worker, a worker whose S3 goes through a fault proxy
(tests/faults/proxy.py) holding its PutObject is SIGKILLed while the request is held; its
claim expires, the sweeper gives the file back, a victim publishes the revision (If-Match on
the original's ETag) and is killed in turn; only then is the held request let through, with
the same If-Match, which S3 refuses: without it the key would get a third version.

A file whose worker died after publishing is completed by whoever comes first: the run's
sweeper (its claim expired, its object the revision's: `job.completed_by_sweeper`, the usual
one at lease 5 s and a poll a second) or a fresh worker that finds the revision published
(revision.py); either records the version it replaced.

Both runs poll the revision batch, so the slower one's progress counts (`record_counts`) can
land between the other's final count and its end of the batch: `finish` writes the deciding
poll's counts again with the status (STALE_COUNTS names what the item, the runs' results and
the Day Revised event said when it did not: `completed` with 4 of 5 completed and 1 pending,
in 3 runs of 9).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dlpipe.adapters.batches_table import BatchesTable
from dlpipe.adapters.jobs_table import JobsTable
from dlpipe.config import ENV_ENDPOINT_URL, ENV_ENDPOINT_URL_S3, ENV_RESEND_AFTER_SECONDS
from dlpipe.domain.cipher_format import CIPHER_CBC, CIPHER_GCM, Cipher
from dlpipe.domain.clock import SystemClock
from dlpipe.domain.manifest import DayPointer, Manifest, parse_manifest, pointer_key
from dlpipe.domain.model import Batch, JobStatus, make_file_id
from dlpipe.local.events import received_events
from dlpipe.local.stub.faults import Faults
from dlpipe.local.stub.publish import ExpectedFile, StubFileSpec
from dlpipe.local.stub.server import StubProvider
from dlpipe.local.testpoints import ENV_TEST_PAUSE_AT
from tests.e2e.test_repair_kit import DLPIPE, Stack, run_settings, write_key
from tests.e2e.test_worker_kit import Queues, WorkerProcess, queues, wait_until, worker_env
from tests.faults.proxy import FaultProxy
from tests.faults.rules import FaultPlan, Rule
from tests.reliability.rig import owner_pid, stopping_all
from tests.support import unique_day

pytestmark = pytest.mark.e2e
pytest_plugins = ["tests.provider_fixtures", "tests.e2e.test_repair_kit"]  # stack

LEASE_S = 5  # a killed worker's claim expires 5 s after its last beat, its message 1 s later
RESEND_S = "10"
POLLS = "120"  # a poll a second: the window outlasts the recovery bound and a lease
# A call waits this long at most for its pair (under the provider client's 30 s read timeout);
# the other run's call arrives as soon as that run, started at the same moment, gets there.
PAIR_TIMEOUT_S = 20.0
VICTIMS = 3  # one per file the revision gives back to the queue (2 changed, 1 added)
MAX_KILLS = 6
MAX_STALE = 3  # stale workers started until one held a changed file's publish (1 file is added)
HOLD_S = 600  # a victim waits at its point until it is killed; a held publish, until released
WAIT_S = 150  # each bounded wait: a day, the revision batch's creation, the racing runs
REVISION = 2
FILES = 5  # the revision's: 2 unchanged, 2 changed, 1 added
STALE_COUNTS = (
    "the slower poller's progress counts (batches_table.record_counts) landed between the"
    " other run's final count and its finish, and outlived the batch's end: {}"
)


class PairedCalls(Faults):
    """The stub's fault switches (none set), and while armed its API calls answered in pairs:
    each call waits until another one arrives (at most PAIR_TIMEOUT_S), then both are answered.
    Arm it after the day is published: a first listing publishes, and takes a snapshot then."""

    def __init__(self) -> None:
        super().__init__()
        self._pairing = threading.Condition()
        self._armed = False
        self._waiting = False  # a call waits for its pair
        self._pairs = 0
        self.unpaired = 0  # calls answered alone: their pair did not come in time

    def arm(self) -> None:
        with self._pairing:
            self._armed = True

    def disarm(self) -> None:
        """Answer every call at once from now on, a waiting one too."""
        with self._pairing:
            self._armed = False
            self._pairing.notify_all()

    def snapshot(self) -> Faults:
        """Taken once per API call, before the stub answers it: the pairing happens here."""
        with self._pairing:
            if self._armed and self._waiting:
                self._waiting, self._pairs = False, self._pairs + 1
                self._pairing.notify_all()
            elif self._armed:
                self._waiting, pairs = True, self._pairs
                paired = self._pairing.wait_for(
                    lambda: self._pairs != pairs or not self._armed, PAIR_TIMEOUT_S
                )
                if self._pairs == pairs:  # disarmed, or the pair never came
                    self._waiting = False
                    self.unpaired += 0 if paired else 1
        return super().snapshot()


@dataclass(frozen=True)
class Kill:
    """A victim SIGKILLed at `published`: its file, and what the store held at that moment."""

    file_id: str
    status: JobStatus  # the job's, when the victim was killed
    versions: int  # of the file's key then (-1: a file the day did not have before)


class HeldPublishes:
    """A fault proxy in front of moto (tests/faults/proxy.py) holding every PutObject sent
    through it until `release`: a worker whose S3 goes through it publishes late, after it
    was killed, as a stale worker's request still in flight lands after its successor's."""

    def __init__(self, moto_url: str) -> None:
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []  # each holding one request
        hold = Rule(service="s3", fault="delay", operations=frozenset({"PutObject"}))
        self.proxy = FaultProxy(moto_url, FaultPlan([hold], sleep=self._hold))

    def _hold(self, _seconds: float) -> None:
        with self._lock:
            self._threads.append(threading.current_thread())
        self._release.wait(HOLD_S)

    @property
    def held(self) -> int:
        """Requests held so far."""
        with self._lock:
            return len(self._threads)

    def release(self, timeout_s: float) -> bool:
        """Forward every held request; True once each one's answer came back from moto (its
        proxy thread ended, the dead client's connection with it)."""
        self._release.set()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout_s)
        return not any(t.is_alive() for t in threads)

    @contextmanager
    def running(self) -> Iterator[HeldPublishes]:
        with self.proxy.running():
            try:
                yield self
            finally:
                self._release.set()


class RunProcess:
    """One `dlpipe run --date D` child process, its output and its log file under `cwd`."""

    def __init__(self, env: dict[str, str], cwd: Path, day: str) -> None:
        cwd.mkdir()
        self.cwd = cwd
        self._out, self._err = cwd / "stdout.txt", cwd / "stderr.txt"
        with self._out.open("wb") as out, self._err.open("wb") as err:
            self.process = subprocess.Popen(  # stopped by PID in stop()
                [str(DLPIPE), "run", "--date", day], env=env, cwd=cwd, stdout=out, stderr=err
            )

    def finished(self, timeout_s: float) -> int:
        """The exit code; AssertionError (with the run's terminal lines) past `timeout_s`."""
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"`dlpipe run` {self.process.pid} still running after {timeout_s}s:\n{self.stderr}"
            ) from None

    def stop(self) -> None:
        """Kill the child by PID if it still runs."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    @property
    def stderr(self) -> str:
        return self._err.read_text(errors="replace")

    def result(self) -> dict[str, Any]:
        """The run's result line (stdout)."""
        lines = self._out.read_text().splitlines()
        assert lines, f"no result line; stderr:\n{self.stderr}"
        result: dict[str, Any] = json.loads(lines[0])
        return result

    def events(self) -> list[dict[str, Any]]:
        """The JSON events of the run's log file (.dlpipe/logs/run-*.jsonl under its cwd)."""
        events = []
        for path in sorted((self.cwd / ".dlpipe" / "logs").glob("run-*.jsonl")):
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("{"):
                    events.append(json.loads(line))
        return events


@dataclass
class KillDriver:
    """Watches the victims' announce file: SIGKILLs each announced victim, then starts a
    replacement, a victim again until every file of `must_kill` was killed once (at most
    MAX_KILLS kills), then workers without a pause point."""

    env: dict[str, str]
    workdir: Path
    jobs: JobsTable
    keys: dict[str, str]  # FileID -> destination key, of the files the day had before
    must_kill: frozenset[str]
    versions_of: Callable[[str], list[dict[str, Any]]]
    pool: list[WorkerProcess] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.announce = self.workdir / "announce.txt"
        self.announce.touch()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kill-driver", daemon=True)

    def start(self, victims: int) -> None:
        for _ in range(victims):
            self._start(victim=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; raise what went wrong in the driver's thread."""
        self._done.set()
        self._thread.join(timeout=30)
        if self.errors:
            raise self.errors[0]

    def start_stale(self, s3_url: str) -> WorkerProcess:
        """A worker without a pause point whose S3 requests go to `s3_url` (HeldPublishes)."""
        worker = WorkerProcess(
            {**self.env, ENV_ENDPOINT_URL_S3: s3_url},
            self.workdir / f"stale{len(self.pool)}.log",
        )
        self.pool.append(worker)
        return worker

    def _start(self, *, victim: bool) -> None:
        extra = {ENV_TEST_PAUSE_AT: f"published:{HOLD_S}:{self.announce}"} if victim else {}
        name = f"{'victim' if victim else 'worker'}{len(self.pool)}"
        self.pool.append(WorkerProcess({**self.env, **extra}, self.workdir / f"{name}.log"))

    def _run(self) -> None:
        seen = 0
        try:
            while not self._done.wait(0.02):
                lines = self.announce.read_text().splitlines()
                for line in lines[seen:]:
                    self._on_announce(*line.split())
                seen = len(lines)
        except BaseException as exc:  # surfaced by stop() in the test's thread
            self.errors.append(exc)

    def _on_announce(self, point: str, pid_text: str, file_id: str) -> None:
        assert point == "published", point
        pid = int(pid_text)
        # What the victim leaves: its file published, its completion not recorded.
        status = self.jobs.require(file_id).status
        key = self.keys.get(file_id)
        versions = len(self.versions_of(key)) if key else -1
        os.kill(pid, signal.SIGKILL)
        next(p for p in self.pool if p.pid == pid).wait(10)
        self.kills.append(Kill(file_id, status, versions))
        killed = {k.file_id for k in self.kills}
        self._start(victim=len(self.kills) < MAX_KILLS and not self.must_kill <= killed)


@dataclass(frozen=True)
class Day:
    """The scenario's files by role, and what the day's first delivery published."""

    ids: dict[str, str]  # role -> FileID
    keys: dict[str, str]  # FileID -> destination key (the first delivery's files)
    original: dict[str, str]  # FileID -> the only version of its key after the first delivery
    batch_id: str  # the first delivery's
    date: str

    def role(self, file_id: str) -> str:
        return next(r for r, i in self.ids.items() if i == file_id)


CHANGED = ("changed1", "changed2")
FIRST = {
    "same1": (256, CIPHER_GCM),
    "same2": (700, CIPHER_CBC),
    "changed1": (256, CIPHER_GCM),
    "changed2": (512, CIPHER_CBC),
    "withdrawn": (300, CIPHER_GCM),
}
RESTATED = {
    "same1": (256, CIPHER_GCM),
    "same2": (700, CIPHER_CBC),
    "changed1": (333, CIPHER_GCM),  # other contents: other size and SHA-256
    "changed2": (640, CIPHER_CBC),
    "added": (256, CIPHER_GCM),
}


def _specs(entities: dict[str, str], files: dict[str, tuple[int, Cipher]]) -> list[StubFileSpec]:
    return [StubFileSpec(entities[role], size, cipher) for role, (size, cipher) in files.items()]


def _versions(stack: Stack, key: str) -> list[dict[str, Any]]:
    """The versions of `key`, newest first."""
    listed: Any = stack.clients.s3.list_object_versions(
        Bucket=str(stack.provisioned.destination_bucket), Prefix=key
    )
    return [v for v in listed.get("Versions", []) if v["Key"] == key]


def _plaintext_sha(stack: Stack, key: str, version_id: str) -> str:
    body = stack.clients.s3.get_object(
        Bucket=str(stack.provisioned.destination_bucket), Key=key, VersionId=version_id
    )["Body"].read()
    return hashlib.sha256(body).hexdigest()


def _env(stack: Stack, q: Queues, key: Path, stub: StubProvider) -> dict[str, str]:
    """The env of the runs and their workers: a lease of LEASE_S, a poll a second."""
    settings = run_settings(stack.provisioned, POLLS, **{ENV_RESEND_AFTER_SECONDS: RESEND_S})
    return worker_env(
        stack.aws_env, stack.provisioned, q.url, key, stub=stub, lease_seconds=LEASE_S, **settings
    )


def _deliver_first(
    stack: Stack, q: Queues, key: Path, jobs: JobsTable, day: str, entities: dict[str, str]
) -> Day:
    """The day delivered by one run and one worker, one version per key."""
    env = _env(stack, q, key, stack.stub_factory(_specs(entities, FIRST)))
    run = RunProcess(env, key.parent / "first", day)
    with stopping_all([WorkerProcess(env, key.parent / "first-worker.log")]):
        try:
            assert run.finished(WAIT_S) == 0, run.stderr
        finally:
            run.stop()
    result = run.result()
    assert result["status"] == "completed", result
    ids = {role: make_file_id(entity, day) for role, entity in entities.items()}
    keys, original = {}, {}
    for role in FIRST:
        job = jobs.require(ids[role])
        assert job.status is JobStatus.COMPLETED, (role, job.status, job.error_message)
        assert job.destination_key is not None
        versions = _versions(stack, job.destination_key)
        assert len(versions) == 1, (role, versions)
        keys[ids[role]], original[ids[role]] = job.destination_key, versions[0]["VersionId"]
    return Day(ids, keys, original, str(result["batch_id"]), day)


def _stale_publishes(
    driver: KillDriver,
    held: HeldPublishes,
    jobs: JobsTable,
    files: list[str],
    changed: set[str],
    first: WorkerProcess,
) -> list[str]:
    """Stale workers, one at a time before any other (`first`, started already): each one's
    publish is held by the proxy, and it is SIGKILLed there, its claim left to expire; until
    one held a changed file's (If-Match on the original version's ETag). The FileIDs whose
    publish is held, in order."""
    stale: list[str] = []
    worker = first
    while not changed & set(stale):
        assert len(stale) < MAX_STALE, f"no stale worker held a changed file: {stale}"
        if stale:
            worker = driver.start_stale(held.proxy.url)
        wait_until(
            lambda: held.held > len(stale), WAIT_S, "a stale worker's publish to reach the proxy"
        )
        owned = [f for f in files if owner_pid(jobs.require(f).lease_owner) == worker.pid]
        assert len(owned) == 1, (worker.pid, owned)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
        stale.append(owned[0])
    return stale


def _race(
    stack: Stack,
    env: dict[str, str],
    tmp_path: Path,
    driver: KillDriver,
    faults: PairedCalls,
    day: Day,
) -> tuple[list[RunProcess], list[str]]:
    """Two runs of the day at once, the stub's pairing of calls lifted once the revision batch
    exists; stale workers (the first one started with the runs: it waits for the revision's
    messages), then victims; both runs waited for, then the held publishes let through.
    Every process is stopped by PID on the way out."""
    batches = BatchesTable(stack.clients.dynamodb, stack.provisioned.batches_table, SystemClock())
    jobs = driver.jobs
    revised = [day.ids[role] for role in (*CHANGED, "added")]
    runs: list[RunProcess] = []
    held = HeldPublishes(stack.aws_env[ENV_ENDPOINT_URL])
    with stopping_all(driver.pool), held.running():
        try:
            runs = [RunProcess(env, tmp_path / f"run-{n}", day.date) for n in "ab"]
            first_stale = driver.start_stale(held.proxy.url)
            wait_until(
                lambda: any(b.revision for b in batches.query_by_date(day.date)),
                WAIT_S,
                "the revision batch to be created",
            )
            faults.disarm()  # both runs are in create-batch, or past it, by now
            changed = set(driver.must_kill)
            stale = _stale_publishes(driver, held, jobs, revised, changed, first_stale)
            driver.start(VICTIMS)
            codes = [run.finished(WAIT_S) for run in runs]
            assert held.release(WAIT_S), "a held publish never got its answer from moto"
        finally:
            for run in runs:
                run.stop()
            driver.stop()
    assert codes == [0, 0], [run.stderr for run in runs]
    return runs, stale


def _one_revision(stack: Stack, day: Day, date: str, runs: list[RunProcess]) -> Batch:
    """The day's one revision batch (Revision 2 over the first), which both runs report: one
    run created it, the other raced into create-batch and joined it."""
    batches = BatchesTable(stack.clients.dynamodb, stack.provisioned.batches_table, SystemClock())
    day_batches = batches.query_by_date(date)
    revisions = [b for b in day_batches if b.revision is not None]
    assert len(day_batches) == 2, [(b.batch_id, b.revision) for b in day_batches]
    assert len(revisions) == 1, [(b.batch_id, b.revision) for b in revisions]
    revision = revisions[0]
    assert (revision.revision, revision.revises) == (REVISION, day.batch_id)
    assert (revision.expected, revision.failed_count, revision.error_count) == (FILES, 0, 0)
    results = [run.result() for run in runs]
    assert [(r["batch_id"], r["status"]) for r in results] == [
        (revision.batch_id, "completed")
    ] * 2, results
    logged = [[e.get("event") for e in run.events()] for run in runs]
    started = [n for n, names in enumerate(logged) if "batch.revision_started" in names]
    joined = [n for n, names in enumerate(logged) if "batch.revision_joined" in names]
    assert len(started) == 1, logged
    assert joined == [1 - started[0]], f"the other run did not race into create-batch: {logged}"
    return revision


def _files(
    stack: Stack,
    jobs: JobsTable,
    day: Day,
    revision: Batch,
    expected: dict[str, ExpectedFile],
) -> None:
    """Versions and jobs of every file: a new version per changed key, its job naming the
    original one; the added file once; the unchanged and withdrawn ones untouched."""
    for role in CHANGED:
        file_id, key = day.ids[role], day.keys[day.ids[role]]
        job = jobs.require(file_id)
        assert job.status is JobStatus.COMPLETED, (role, job.status, job.error_message)
        assert (job.batch_id, job.revision, job.revised_as) == (
            revision.batch_id,
            REVISION,
            "changed",
        )
        assert job.destination_key == key
        versions = [v["VersionId"] for v in _versions(stack, key)]
        assert versions[1:] == [day.original[file_id]], (role, versions)  # one new version
        assert _plaintext_sha(stack, key, versions[0]) == expected[file_id].sha256, role
        assert job.previous_sha256 == _plaintext_sha(stack, key, day.original[file_id]), role
        assert job.previous_version_id == day.original[file_id], (role, job)

    new = jobs.require(day.ids["added"])
    assert new.status is JobStatus.COMPLETED, (new.status, new.error_message)
    assert (new.batch_id, new.revised_as) == (revision.batch_id, "added")
    assert new.destination_key is not None
    added = [v["VersionId"] for v in _versions(stack, new.destination_key)]
    assert len(added) == 1, added
    assert _plaintext_sha(stack, new.destination_key, added[0]) == expected[day.ids["added"]].sha256
    for role in ("same1", "same2"):
        kept = jobs.require(day.ids[role])
        assert (kept.batch_id, kept.revision) == (day.batch_id, None), role
        key = day.keys[day.ids[role]]
        assert [v["VersionId"] for v in _versions(stack, key)] == [day.original[day.ids[role]]]
    gone = jobs.require(day.ids["withdrawn"])
    assert (gone.status, gone.withdrawn_by) == (JobStatus.COMPLETED, revision.batch_id)
    key = day.keys[day.ids["withdrawn"]]
    assert [v["VersionId"] for v in _versions(stack, key)] == [day.original[day.ids["withdrawn"]]]


def _manifest(stack: Stack, day: Day, date: str, revision: Batch) -> Manifest:
    """The revision's manifest, named by the day's pointer: its counts are its entries; each
    changed file's entry names the new version and the one it replaced."""
    bucket = str(stack.provisioned.destination_bucket)
    pointed = stack.clients.s3.get_object(Bucket=bucket, Key=pointer_key("default", date))
    pointer = DayPointer.from_bytes(pointed["Body"].read())
    assert pointer.batch_id == revision.batch_id
    manifest = parse_manifest(
        stack.clients.s3.get_object(Bucket=bucket, Key=pointer.key)["Body"].read()
    )
    header, marks = manifest.header, [e.revised for e in manifest.entries]
    assert header.revision is not None
    assert header.revision.number == REVISION
    assert (header.expected, header.completed, len(manifest.entries)) == (FILES,) * 3
    in_entries = {kind: marks.count(kind) for kind in ("unchanged", "changed", "added")}
    assert header.revision.counts() == {**in_entries, "withdrawn": len(manifest.withdrawn)}
    assert header.revision.counts() == {"unchanged": 2, "changed": 2, "added": 1, "withdrawn": 1}
    assert [w.file_id for w in manifest.withdrawn] == [day.ids["withdrawn"]]
    entries = {e.file_id: e for e in manifest.entries}
    for role in CHANGED:
        entry, key = entries[day.ids[role]], day.keys[day.ids[role]]
        assert entry.version_id == _versions(stack, key)[0]["VersionId"], role
        assert entry.previous_version_id == day.original[day.ids[role]], (role, entry)
    return manifest


def _counts(revision: Batch, runs: list[RunProcess], events: list[dict[str, Any]]) -> list[str]:
    """(completed, pending) as the batch item, each run's result and each event say them:
    (FILES, 0) everywhere, or the stale progress counts of STALE_COUNTS (completed + pending
    = FILES, the pending count a poll of one of the runs logged); those, named."""
    said = {"batch item": (revision.completed, revision.pending)}
    for name, run in zip("ab", runs, strict=True):
        result = run.result()
        said[f"run {name}'s result"] = (result["completed"], result["pending"])
    for n, event in enumerate(events):
        counts = event["detail"]["counts"]
        assert counts["expected"] == FILES, counts
        said[f"event {n}"] = (counts["completed"], counts["pending"])
    polled = {
        e["pending"] for run in runs for e in run.events() if e.get("event") == "batch.polled"
    }
    stale = {where: c for where, c in said.items() if c != (FILES, 0)}
    for where, (completed, pending) in stale.items():
        assert completed + pending == FILES, (where, said)
        assert pending in polled, (where, said, polled)
    return [f"{where} {c}/{FILES} completed, {p} pending" for where, (c, p) in stale.items()]


@pytest.mark.timeout(600)
def test_racing_runs_of_a_restated_day_make_one_revision_through_killed_workers(
    stack: Stack, entity: str, tmp_path: Path, figures: Any
) -> None:
    """A completed day of 5 files restated (2 changed, 1 added, 1 withdrawn); two runs of it at
    once, workers SIGKILLed after publishing and before recording, a dead worker's publish
    landing late: one revision batch both runs report, 2 versions per changed key, 1 for the
    added and the withdrawn files, each changed job naming the original version, the
    manifest's counts its entries, one event."""
    date = unique_day()
    roles = [*FIRST, "added"]
    entities = {role: f"{entity}{n}" for n, role in enumerate(roles)}
    key = write_key(tmp_path, "ours.pem", stack.rsa_keypair[0])
    jobs = JobsTable(stack.clients.dynamodb, stack.provisioned.jobs_table, SystemClock())
    downstream = stack.provisioned.downstream_queue_url
    assert downstream

    with queues(stack.clients, visibility_s=30, max_receive=10) as q:
        day = _deliver_first(stack, q, key, jobs, date, entities)
        received_events(stack.clients, downstream, rounds=1)  # this day's first, earlier tests'
        faults = PairedCalls()
        stub = stack.stub_factory(_specs(entities, RESTATED), faults)
        stub.expected(date)  # the restated day published before the runs' first listing
        faults.arm()
        env = _env(stack, q, key, stub)
        must_kill = frozenset(day.ids[role] for role in CHANGED)
        driver = KillDriver(env, tmp_path, jobs, day.keys, must_kill, lambda k: _versions(stack, k))
        runs, stale = _race(stack, env, tmp_path, driver, faults, day)

    run_events = [e for run in runs for e in run.events()]
    swept = {e["file_id"] for e in run_events if e.get("event") == "job.completed_by_sweeper"}
    revision = _one_revision(stack, day, date, runs)
    events = [
        e
        for e in received_events(stack.clients, downstream)
        if e["detail"].get("batch_id") == revision.batch_id
    ]
    figures(
        stale_publishes=[day.role(f) for f in stale],
        unpaired_calls=faults.unpaired,
        kills=[(day.role(k.file_id), str(k.status), k.versions) for k in driver.kills],
        workers=len(driver.pool),
        completed_by_sweeper=sorted(day.role(f) for f in swept),
        event_deliveries=len(events),
        batch_counts=(revision.completed, revision.pending),
    )

    # The kills landed between publish and record, every changed file's at least once.
    kills = driver.kills
    assert all(k.status is JobStatus.DOWNLOADING for k in kills), kills
    assert must_kill <= {k.file_id for k in kills}, kills
    assert all(k.versions == 2 for k in kills if k.file_id in must_kill), kills

    _files(stack, jobs, day, revision, stub.expected(date))
    _manifest(stack, day, date, revision)

    # One Day Revised: a run that joined re-sends it byte for byte (the same event).
    assert {e["detail-type"] for e in events} == {"Day Revised"}, events
    assert len({json.dumps(e["detail"], sort_keys=True) for e in events}) == 1, events
    assert len({e["detail"]["event_id"] for e in events}) == 1, events
    stale = _counts(revision, runs, events)
    assert not stale, STALE_COUNTS.format("; ".join(stale))

"""pytest plugin: record the session's AWS calls (tests/iam/recorder.py) and run the IAM checker last.

Registered from tests/conftest.py. Each session writes its own file,
.dlpipe/iam/recording-<time>-<pid>.jsonl (the last few are kept); child processes append to it
through tests/iam/site/sitecustomize.py, which the plugin puts on PYTHONPATH. To check
terraform/ again against a finished session's calls without running the suite:
`pytest tests/iam --iam-recording=.dlpipe/iam/recording-....jsonl`.

Under pytest-xdist (`make test` runs `-n 2`) every worker is a session of its own and none
of them sees the others' calls, so no worker can check: the controller creates the one
recording and hands its path to the workers (`pytest_configure_node`), every process appends
to it, and `--iam-defer-check` leaves the checker out of that run and names the recording in
.dlpipe/iam/last-recording; `make test` then runs the checker alone on it
(`pytest tests/iam/test_iam_coverage.py --iam-recording=...`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.iam import recorder

MARKER = "iam_coverage"
SITE_DIR = Path(__file__).resolve().parent / "site"
KEEP_RECORDINGS = 5
LAST_RECORDING = "last-recording"  # names the recording a deferred check is to read
_SESSION = pytest.StashKey["Session"]()


@dataclass(frozen=True)
class Call:
    """One recorded call: who made it, what, on which resources, in which test, from where."""

    component: str | None
    service: str
    operation: str
    resources: tuple[str, ...]
    test: str
    at: str


@dataclass
class Session:
    """What the plugin knows about this session, and the recording the checker reads."""

    path: Path
    tests_root: Path
    saved_env: dict[str, str | None]
    replay: Path | None = None
    complete: bool = True
    why_partial: str = ""
    unused_report: tuple[str, ...] = ()

    @property
    def checked_path(self) -> Path:
        """The recording the checker reads: this session's, or the one named to replay."""
        return self.replay or self.path

    def calls(self) -> list[Call]:
        """Every call recorded so far, by any process of the session."""
        calls = []
        with self.checked_path.open() as handle:
            for line in handle:
                row = json.loads(line)
                if "session" in row:  # the selection the recorded session ran
                    self.complete = row["session"]["complete"]
                    self.why_partial = row["session"]["why_partial"]
                    continue
                calls.append(
                    Call(
                        row["component"],
                        row["service"],
                        row["operation"],
                        tuple(row["resources"]),
                        row["test"],
                        row["at"],
                    )
                )
        return calls


def pytest_addoption(parser: pytest.Parser) -> None:
    """--iam-recording: check a finished session's recording instead of this session's."""
    parser.addoption(
        "--iam-recording",
        default=None,
        help="IAM checker: read the calls of this recording (JSONL) instead of this session's",
    )
    parser.addoption(
        "--iam-defer-check",
        action="store_true",
        help="IAM checker: record only; name the recording in .dlpipe/iam/last-recording",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Start recording: this process now, child processes through sitecustomize."""
    config.addinivalue_line(
        "markers", f"{MARKER}: checks the session's recorded AWS calls; runs after every other test"
    )
    worker_input = getattr(config, "workerinput", None)  # set in a pytest-xdist worker
    if worker_input is not None:
        path = Path(worker_input["iam_recording"])  # the controller's, shared by all workers
    else:
        folder = config.rootpath / ".dlpipe" / "iam"
        folder.mkdir(parents=True, exist_ok=True)
        for old in sorted(folder.glob("recording-*.jsonl"))[: -(KEEP_RECORDINGS - 1) or None]:
            old.unlink(missing_ok=True)
        path = folder / f"recording-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.jsonl"
        path.touch()
        if config.getoption("--iam-defer-check"):
            (folder / LAST_RECORDING).write_text(f"{path}\n")
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", recorder.FILE_ENV)}
    # An xdist controller runs no test: its children are the workers, which record through
    # this plugin. Loaded by sitecustomize too, a worker would hold two recorder modules
    # whose thread patches do not see each other's task origins.
    if worker_input is not None or getattr(config.option, "dist", "no") == "no":
        python_path = [str(SITE_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]
        os.environ["PYTHONPATH"] = os.pathsep.join(python_path)
        os.environ[recorder.FILE_ENV] = str(path)
        recorder.install(str(path))
    replay = config.getoption("--iam-recording")
    config.stash[_SESSION] = Session(
        path, Path(__file__).resolve().parents[1], saved, Path(replay) if replay else None
    )


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, in the controller: each worker records into the controller's file."""
    node.workerinput["iam_recording"] = str(node.config.stash[_SESSION].path)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Give the environment back as it was."""
    session = config.stash.get(_SESSION, None)
    if session is None:
        return
    for name, value in session.saved_env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the checker to the end; note whether this session runs the whole suite."""
    checkers = [item for item in items if item.get_closest_marker(MARKER)]
    if config.getoption("--iam-defer-check"):
        checkers = []  # run later, on the whole recording (module docstring)
    items[:] = [item for item in items if not item.get_closest_marker(MARKER)] + checkers
    session = config.stash[_SESSION]
    here = config.invocation_params.dir
    roots = {(here / str(arg).split("::")[0]).resolve() for arg in config.args}
    if not roots & {session.tests_root, session.tests_root.parent}:
        session.complete = False
        session.why_partial = f"only part of tests/ was selected ({' '.join(config.args)})"


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Write down which selection this recording comes from (whole suite or part)."""
    state = session.config.stash[_SESSION]
    line = {"session": {"complete": state.complete, "why_partial": state.why_partial}}
    with state.path.open("a") as handle:
        handle.write(json.dumps(line) + "\n")


def pytest_deselected(items: list[pytest.Item]) -> None:
    """A -k / -m selection makes the recording partial."""
    if items:
        session = items[0].config.stash[_SESSION]
        session.complete = False
        session.why_partial = f"{len(items)} test(s) were deselected"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Name the running test for this process and for every child it starts."""
    os.environ[recorder.TEST_ENV] = item.nodeid
    try:
        return (yield)
    finally:
        os.environ.pop(recorder.TEST_ENV, None)


@pytest.fixture(scope="session")
def iam_session(request: pytest.FixtureRequest) -> Session:
    """This session's recording."""
    return request.config.stash[_SESSION]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where the recording is, and what the checker found granted but never used."""
    session = terminalreporter.config.stash.get(_SESSION, None)
    if session is None:
        return
    if session.unused_report:
        terminalreporter.write_sep("-", "IAM: granted but never used")
        for line in session.unused_report:
            terminalreporter.write_line(line)
    terminalreporter.write_line(f"AWS calls recorded in {session.path}")
    if session.replay:
        terminalreporter.write_line(f"IAM checker read {session.replay}")

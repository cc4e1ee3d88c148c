"""What `dlpipe run` shows while the poller waits: one line per step that counts (files
queued, each completion check with its counts and the time to the next check); on a terminal
the countdown to the next check redraws every second."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console
from rich.live import Live
from rich.text import Text

from dlpipe.cli.outcome_text import counts_text, outcome_text
from dlpipe.domain.errors import RecordsError
from dlpipe.domain.waiting import idle_warning
from dlpipe.log import get_logger
from dlpipe.services.orchestrator.ports import BatchFlow, CompletionCheck, QueueResult

log = get_logger(component="run")


def _clock_text(seconds: float) -> str:
    whole = max(0, round(seconds))
    return f"{whole // 60}m {whole % 60:02d}s" if whole >= 60 else f"{whole}s"


class PollReporter:
    """Prints the poller's progress on `console`; `clock` is monotonic seconds."""

    def __init__(
        self,
        console: Console,
        poll_interval_s: int,
        max_polls: int,
        clock: Callable[[], float] = time.monotonic,
        idle_probe: Callable[[], int | None] | None = None,
    ) -> None:
        self._console, self._interval_s, self._max_polls = console, poll_interval_s, max_polls
        self._clock = clock
        self._idle_probe = idle_probe  # seconds no worker took the queued work, or None
        self._idle_warned = False  # the warning of the current idle spell is out
        self._state = "starting"
        self._next_check_at: float | None = None

    def queued(self, result: QueueResult) -> None:
        """The listing was read and its files queued (called once per chunk)."""
        if not result.done:
            return
        self._next_check_at = self._clock() + self._interval_s
        if result.unchanged:
            self._say(
                f"{result.expected} file(s), the day's batch ended before this run: unchanged,"
                " nothing queued or written",
                "first check",
            )
            return
        # Listed, and of those sent: a rerun does not queue the files already completed.
        there = f", {result.already_present} already there" if result.already_present else ""
        self._say(f"{result.expected} file(s) listed, {result.sent} queued{there}", "first check")

    def checked(self, poll_number: int, check: CompletionCheck) -> None:
        """A completion check ran: its counts, and the next check or the end."""
        counts = counts_text(check.completed, check.failed, check.error, check.pending)
        head = f"check {poll_number}/{self._max_polls}: {counts}"
        if check.status is not None:
            self._next_check_at = None
            why = outcome_text(check.outcome)
            tail = f"; {why}" if why else ""
            # Provider text (a refused entity's name) is in `tail`: printed as is, never markup.
            self._console.print(
                f"{head}; batch {check.status}{tail}", markup=False, highlight=False, soft_wrap=True
            )
            return
        self._next_check_at = self._clock() + self._interval_s
        self._say(head, "next check")
        if check.pending:
            self._warn_if_idle()

    def _warn_if_idle(self) -> None:
        """Under the check's line, the idle-worker warning when the probe first finds the queue
        undrained, once until a worker takes work again (a line every check said nothing
        new); a probe that cannot read the queue or the index says nothing (the run goes on)."""
        if self._idle_probe is None:
            return
        try:
            idle_s = self._idle_probe()
        except (RecordsError, BotoCoreError, ClientError) as exc:
            log.warning("run.idle_probe_failed", error=str(exc))
            return
        warned, self._idle_warned = self._idle_warned, idle_s is not None
        if idle_s is not None and not warned:
            self._console.print(f"WARNING: {idle_warning(idle_s)}", markup=False, highlight=False)

    def _say(self, head: str, upcoming: str) -> None:
        self._state = f"{head}; {upcoming} in"
        self._console.print(
            f"{self._state} {_clock_text(self._interval_s)}", markup=False, highlight=False
        )

    def countdown(self) -> Text:
        """The live line: the last state and the seconds left to the next check."""
        if self._next_check_at is None:
            return Text("")
        left_s = self._next_check_at - self._clock()
        return Text(f"{self._state} {_clock_text(left_s)}", style="dim")

    @contextmanager
    def live(self) -> Iterator[None]:
        """On a terminal, redraw the countdown every second; elsewhere print lines only."""
        if not self._console.is_terminal:
            yield
            return
        with Live(
            get_renderable=self.countdown,
            console=self._console,
            refresh_per_second=1,
            transient=True,
        ):
            yield


class ReportingFlow:
    """The real flow, reporting each fetch and check to a PollReporter as it happens. A replayed
    step returns its checkpoint without calling the flow, so nothing is reported twice."""

    def __init__(self, inner: BatchFlow, reporter: PollReporter) -> None:
        self._inner, self._reporter = inner, reporter

    def create_batch(self, polling_date: str, rerun: bool = False) -> str:
        """The inner flow's create_batch."""
        return self._inner.create_batch(polling_date, rerun)

    def fetch_and_queue(
        self, batch_id: str, polling_date: str, resume: QueueResult | None = None
    ) -> QueueResult:
        """The inner flow's fetch_and_queue, reported."""
        result = self._inner.fetch_and_queue(batch_id, polling_date, resume)
        _shown(lambda: self._reporter.queued(result))
        return result

    def check_completion(
        self, batch_id: str, poll_number: int, is_last_poll: bool
    ) -> CompletionCheck:
        """The inner flow's check_completion, reported."""
        check = self._inner.check_completion(batch_id, poll_number, is_last_poll)
        _shown(lambda: self._reporter.checked(poll_number, check))
        return check

    def recheck_day(
        self, polling_date: str, start: Callable[[str], str] | None = None
    ) -> dict[str, Any]:
        """The inner flow's recheck_day."""
        return self._inner.recheck_day(polling_date, start)

    def fail_batch(self, batch_id: str, reason: str) -> None:
        """The inner flow's fail_batch."""
        self._inner.fail_batch(batch_id, reason)

    def write_manifest(self, batch_id: str) -> dict[str, Any] | None:
        """The inner flow's write_manifest."""
        return self._inner.write_manifest(batch_id)

    def record_handoff_problem(self, batch_id: str, problem: str) -> None:
        """The inner flow's record_handoff_problem."""
        self._inner.record_handoff_problem(batch_id, problem)

    def publish_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """The inner flow's publish_event."""
        return self._inner.publish_event(event)

    def publish_if_late(self, event: dict[str, Any], deadline_at_ms: int) -> bool:
        """The inner flow's publish_if_late."""
        return self._inner.publish_if_late(event, deadline_at_ms)


def _shown(report: Callable[[], None]) -> None:
    """Run `report`, a progress line printed inside a durable step: whatever goes wrong in it
    is logged and dropped, so showing a day can never change its outcome or its event (a step
    that raised would end the day `check_failed` and send that)."""
    try:
        report()
    except Exception as exc:  # noqa: BLE001 - the display's failure must never be the day's
        log.warning("run.progress_not_shown", error_type=type(exc).__name__, error=str(exc))

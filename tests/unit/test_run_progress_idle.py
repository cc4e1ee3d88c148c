"""`dlpipe run`'s progress lines warn when no worker takes the queued work."""

from __future__ import annotations

import io

from rich.console import Console

from dlpipe.cli.run_progress import PollReporter
from dlpipe.domain.errors import StoreUnavailableError
from dlpipe.services.orchestrator.ports import CompletionCheck


def _reporter(probe: object) -> tuple[PollReporter, io.StringIO]:
    text = io.StringIO()
    console = Console(file=text, width=200)
    return PollReporter(console, 5, 120, clock=lambda: 0.0, idle_probe=probe), text  # type: ignore[arg-type]


def _pending() -> CompletionCheck:
    return CompletionCheck(status=None, completed=0, failed=0, pending=20)


def test_a_check_with_pending_files_and_an_idle_queue_prints_the_warning() -> None:
    """The probe says 10 min idle: the check's line is followed by the warning."""
    reporter, text = _reporter(lambda: 600)
    reporter.checked(1, _pending())
    lines = text.getvalue().splitlines()
    assert lines[0].startswith("check 1/120: 0 completed, 0 failed, 0 error, 20 pending")
    assert lines[1] == (
        "WARNING: no worker has received a message for 10 min while jobs are available"
        " (is one running? start one: dlpipe worker)"
    )


def test_the_warning_is_printed_once_per_idle_spell() -> None:
    """Idle for three checks, consumed, then idle again: two warnings, not one a check."""
    answers = iter([600, 605, 610, None, 30])
    reporter, text = _reporter(lambda: next(answers))
    for poll in range(1, 6):
        reporter.checked(poll, _pending())
    warnings = [line for line in text.getvalue().splitlines() if line.startswith("WARNING")]
    assert [w.split(" for ")[1].split(" while")[0] for w in warnings] == ["10 min", "30 s"]


def test_no_warning_when_the_probe_finds_the_queue_consumed() -> None:
    """The probe answers None: only the check's line."""
    reporter, text = _reporter(lambda: None)
    reporter.checked(1, _pending())
    assert len(text.getvalue().splitlines()) == 1


def test_a_probe_that_cannot_read_the_queue_never_stops_the_run() -> None:
    """The tables or queue unreadable for a moment: the check's line only, no traceback."""

    def broken() -> int | None:
        raise StoreUnavailableError("throttled")

    reporter, text = _reporter(broken)
    reporter.checked(1, _pending())
    assert len(text.getvalue().splitlines()) == 1


def test_provider_text_in_the_final_line_is_printed_as_is_never_read_as_markup() -> None:
    """A cause naming a refused entity `[/]` raised MarkupError inside the durable step that
    checks completion, ending the day `check_failed`: the line is text, never markup."""
    reporter, text = _reporter(lambda: None)
    cause = "refused entity [/] then [bold red]x[/bold red]"
    final = CompletionCheck(status="failed", completed=4, failed=0, pending=0, error=8,
                            outcome={"cause": cause})  # fmt: skip
    reporter.checked(3, final)
    assert cause in text.getvalue()


class _Flow:
    """The inner flow's two reported calls; the rest is never called here."""

    def __init__(self, check: CompletionCheck) -> None:
        self.check = check

    def check_completion(self, batch_id: str, poll_number: int, is_last: bool) -> CompletionCheck:
        return self.check


def test_a_line_that_cannot_be_shown_never_changes_the_day() -> None:
    """Inside the durable step that checks completion, a printing error (rich's MarkupError
    once did it for a refused entity `[/]`) is logged and dropped: the step returns the check,
    so the day ends with its true outcome and event, not `check_failed`."""
    from rich.errors import MarkupError
    from structlog.testing import capture_logs

    from dlpipe.cli.run_progress import ReportingFlow

    final = CompletionCheck(status="failed", completed=4, failed=0, pending=0, error=8)

    class Broken(PollReporter):
        def checked(self, poll_number: int, check: CompletionCheck) -> None:
            raise MarkupError("closing tag '[/]' at position 17 has nothing to close")

    reporter = Broken(Console(file=io.StringIO()), 5, 120)
    flow = ReportingFlow(_Flow(final), reporter)  # type: ignore[arg-type]
    with capture_logs() as logs:
        assert flow.check_completion("batch-x", 3, True) is final
    assert [e["event"] for e in logs] == ["run.progress_not_shown"]

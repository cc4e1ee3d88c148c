"""What `dlpipe run --local` shows of the hand-off: the day's manifest (when the run wrote one)
and the event the stand-in downstream queue received (dlpipe/local/events.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dlpipe.cli.safe_text import plain
from dlpipe.domain.handoff_events import REVISED_COUNTS
from dlpipe.local.events import received_events

if TYPE_CHECKING:
    from rich.console import Console

    from dlpipe.local.day import DayReport
    from dlpipe.local.stack import LocalStack

# The report's result gains what the downstream queue received under this key.
RECEIVED = "downstream_events"


def with_received_events(stack: LocalStack, reports: list[DayReport]) -> list[DayReport]:
    """Each report with its batch's events, taken from the downstream queue in one read
    (the feeds' days share the queue: each event goes to the report of its batch)."""
    url = stack.provisioned.downstream_queue_url
    events = received_events(stack.clients, url, rounds=1) if url else []
    return [
        replace(
            report,
            result={
                **report.result,
                RECEIVED: [
                    e for e in events if e.get("detail", {}).get("batch_id") == report.batch_id
                ],
            },
        )
        for report in reports
    ]


def revision_line(manifest: dict[str, Any]) -> str | None:
    """A revision's line (None for an ordinary manifest): which revision of the day, its
    changed, added and withdrawn files, and the manifest it supersedes."""
    revision = manifest.get("revision")
    if not revision:
        return None
    counts, named = revision.get("counts", {}), revision.get("supersedes", {})
    tally = ", ".join(f"{counts.get(k, 0)} {k}" for k in REVISED_COUNTS)
    return (
        f"revision {revision.get('revision')} of the day ({tally}), superseding"
        f" {named.get('key')} version {named.get('version_id')}"
    )


def render_handoff(out: Console, report: DayReport) -> None:
    """The manifest's path, its JSON Lines file list's, a revision's line and each received
    event, one compact line each."""
    manifest: dict[str, Any] | None = report.result.get("manifest")
    if manifest:  # README, "Hand-off: manifests"
        line = f"day manifest: {manifest.get('uri')}"
        out.print(plain(line), highlight=False, soft_wrap=True)
        if manifest.get("file_list_uri"):  # README, "Reading a day's files"
            line = f"file list (JSON Lines): {manifest['file_list_uri']}"
            out.print(plain(line), highlight=False, soft_wrap=True)
        if revised := revision_line(manifest):
            out.print(plain(revised), highlight=False, soft_wrap=True)
    if RECEIVED not in report.result:
        return  # nobody read the downstream queue (a run without the local stack's consumer)
    events = report.result[RECEIVED]
    if not events:
        out.print("downstream queue: no event received", highlight=False)
    for event in events:
        detail = json.dumps(event.get("detail"), sort_keys=True, separators=(",", ":"))
        line = f"downstream queue received {event.get('detail-type')}: {detail}"
        out.print(plain(line), highlight=False, soft_wrap=True)

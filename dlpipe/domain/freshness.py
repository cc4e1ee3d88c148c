"""When a feed's day is due, and whether it arrived on time: one pure rule for the orchestrator's
`Day Late` event, `dlpipe status` and the web view.

A feed may declare a deadline, a local time "HH:MM" in its IANA time zone. The day D is due at
that time on the local calendar day D + date_offset_days: the day the schedule runs for D (with
the default offset of 1, Monday's files are due on Tuesday at the deadline). A day completed at
or before that instant is on time; a day not completed by it is late until it completes, and
then completed late, by the minutes between the deadline and its completion: delivered, so no
longer a reason to alert, yet never reported as on time. A label says how late in days, hours
and minutes.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass
from typing import Literal

FreshnessKind = Literal["due", "on_time", "late", "completed_late"]


def deadline_ms(polling_date: str, deadline: str, time_zone: str, date_offset_days: int = 1) -> int:
    """Epoch ms at which `polling_date`'s day is due: `deadline` (HH:MM) local time in
    `time_zone` on `polling_date` + `date_offset_days`. ValueError on a malformed input.

    A local time skipped by a daylight-saving change resolves forward (zoneinfo's fold=0
    rule), a repeated one to its first occurrence: never an error, never a day off.
    """
    day = dt.date.fromisoformat(polling_date) + dt.timedelta(days=date_offset_days)
    hour, _, minute = deadline.partition(":")
    local = dt.datetime.combine(
        day, dt.time(int(hour), int(minute)), tzinfo=zoneinfo.ZoneInfo(time_zone)
    )
    return int(local.astimezone(dt.UTC).timestamp() * 1000)


@dataclass(frozen=True)
class Freshness:
    """A day against its deadline: due (not yet complete, deadline ahead), on time, late (not
    complete, deadline passed), or completed late."""

    kind: FreshnessKind
    deadline_ms: int
    minutes_late: int = 0  # whole minutes past the deadline, rounded up; 0 unless late

    @property
    def overdue(self) -> bool:
        """The deadline passed and the day is still not complete: the operator's business."""
        return self.kind == "late"

    def label(self) -> str:
        """`due`, `on time`, `late by` a duration or `completed, ... after its deadline` for
        people (`late_text`), as the CLI and the web view show it."""
        if self.kind == "late":
            return f"late by {late_text(self.minutes_late)}"
        if self.kind == "completed_late":
            return f"completed, {late_text(self.minutes_late)} after its deadline"
        return "on time" if self.kind == "on_time" else "due"


def late_text(minutes: int) -> str:
    """Whole minutes in the two largest units a reader takes in at a glance: `42 min`,
    `3 h 07 min`, `1 day 0 h`, `272 days 7 h` (the minutes dropped past a day)."""
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {rest:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} day{'' if days == 1 else 's'} {hours} h"


def freshness(deadline_at_ms: int, completed_at_ms: int | None, now_ms: int) -> Freshness:
    """The day's state at `now_ms`, given when it completed (None: not completed yet)."""
    finished_or_now = now_ms if completed_at_ms is None else completed_at_ms
    if finished_or_now <= deadline_at_ms:
        kind: FreshnessKind = "due" if completed_at_ms is None else "on_time"
        return Freshness(kind, deadline_at_ms)
    late_ms = finished_or_now - deadline_at_ms
    kind = "late" if completed_at_ms is None else "completed_late"
    return Freshness(kind, deadline_at_ms, -(-late_ms // 60_000))

"""Which polling date a feed's scheduled run covers, and when its schedule ran last: pure, the
time handed in, so the orchestrator, `dlpipe status` and the web view date a day alike.

A run covers the calendar day on which it fires in the feed's time zone, minus
DLPIPE_DATE_OFFSET_DAYS (`run_date`): a feed's schedule runs in its own zone, and 01:00 in
Tokyo is still the day before in UTC. A screen without a date opens on the day the feed's
schedule ran for last (`last_scheduled_date`): the date its last run at or before now covered.
The last run is found from the schedule as EventBridge Scheduler evaluates it in the feed's
zone: a local time that a daylight-saving change skips does not run, a repeated one runs once
(its first occurrence). A `rate(...)` schedule counts from when it was created, which no
setting records, so its last run is taken as now.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass

# cron(minutes hours day-of-month month day-of-week year); day-of-week 1-7 is SUN-SAT.
_MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_MONTHS = {name: n for n, name in enumerate(_MONTH_NAMES, 1)}
_WEEKDAYS = {d: n for n, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], 1)}
# How far back a cron's last run is looked for: 29 February of a year `*` recurs within 8 years.
HORIZON_DAYS = 8 * 366


def run_date(run_at: dt.datetime, time_zone: str, date_offset_days: int) -> str:
    """The polling date a run at `run_at` (an aware time) covers: its calendar day in the feed's
    `time_zone` (IANA), minus `date_offset_days`. OverflowError out of the calendar's range."""
    zone = dt.UTC if time_zone == "UTC" else zoneinfo.ZoneInfo(time_zone)
    return (run_at.astimezone(zone).date() - dt.timedelta(days=date_offset_days)).isoformat()


def last_scheduled_date(schedule: str, time_zone: str, now_ms: int, date_offset_days: int) -> str:
    """The date the feed's schedule ran for last: the one its last run at or before `now_ms`
    covered. ValueError for a cron it cannot read, or one with no run in HORIZON_DAYS."""
    now = dt.datetime.fromtimestamp(now_ms / 1000, tz=dt.UTC)
    return run_date(last_run(schedule, time_zone, now), time_zone, date_offset_days)


def last_run(schedule: str, time_zone: str, now: dt.datetime) -> dt.datetime:
    """The last instant at or before `now` at which `schedule` fires in `time_zone` (`now`
    itself for a rate); ValueError as last_scheduled_date."""
    if schedule.startswith("rate("):
        return now
    cron = Cron.parse(schedule)
    zone = zoneinfo.ZoneInfo(time_zone)
    today = now.astimezone(zone).date()
    for back in range(HORIZON_DAYS):
        day = today - dt.timedelta(days=back)
        if not cron.runs_on(day):
            continue
        for hour in sorted(cron.hours, reverse=True):
            for minute in sorted(cron.minutes, reverse=True):
                at = _local(day, hour, minute, zone)
                if at is not None and at <= now:
                    return at
    raise ValueError(f"{schedule} has no run in the {HORIZON_DAYS} days up to {now.isoformat()}")


def _local(day: dt.date, hour: int, minute: int, zone: zoneinfo.ZoneInfo) -> dt.datetime | None:
    """`day` at hour:minute in `zone` (fold 0: a repeated time's first occurrence), or None if
    a daylight-saving change skips that time (it does not round-trip through UTC)."""
    at = dt.datetime.combine(day, dt.time(hour, minute), tzinfo=zone)
    back = at.astimezone(dt.UTC).astimezone(zone)
    return at if back.replace(tzinfo=None) == at.replace(tzinfo=None) else None


@dataclass(frozen=True)
class Cron:
    """An EventBridge cron expression's six fields, read into the values each one allows."""

    minutes: frozenset[int]
    hours: frozenset[int]
    day_of_month: str
    months: frozenset[int]
    day_of_week: str
    years: frozenset[int]

    @classmethod
    def parse(cls, schedule: str) -> Cron:
        """`cron(...)` read; ValueError for an expression EventBridge would refuse or that
        uses what this reader does not (a field of `L`, `W` or `#` inside a list)."""
        if not (schedule.startswith("cron(") and schedule.endswith(")")):
            raise ValueError(f"{schedule!a} is not a cron(...) expression")
        fields = schedule[5:-1].upper().split(" ")
        if len(fields) != 6 or [fields[2], fields[4]].count("?") != 1:
            raise ValueError(f"{schedule!a}: six fields, exactly one day field '?'")
        minutes, hours, dom, month, dow, year = fields
        cron = cls(
            _values(minutes, 0, 59),
            _values(hours, 0, 23),
            dom,
            _values(month, 1, 12, _MONTHS),
            dow,
            _values(year, 1970, 2199),
        )
        _day_rule(dom, dow, dt.date(2026, 1, 1))  # a day field it cannot read fails now
        return cron

    def runs_on(self, day: dt.date) -> bool:
        """True if the expression fires on some minute of local calendar day `day`."""
        if day.month not in self.months or day.year not in self.years:
            return False
        return _day_rule(self.day_of_month, self.day_of_week, day)


def _day_rule(dom: str, dow: str, day: dt.date) -> bool:
    """Whether `day` is one of the days the two day fields name (one of them is `?`)."""
    last = (dt.date(day.year + day.month // 12, day.month % 12 + 1, 1) - dt.timedelta(days=1)).day
    if dow == "?":
        if dom == "L":
            return day.day == last
        if dom.endswith("W"):
            target = last if dom == "LW" else _number(dom[:-1], {})
            return day == _nearest_weekday(day.replace(day=min(target, last)))
        return day.day in _values(dom, 1, 31)
    weekday = day.isoweekday() % 7 + 1  # SUN=1 .. SAT=7
    if "#" in dow:
        name, _, nth = dow.partition("#")
        return weekday == _number(name, _WEEKDAYS) and (day.day - 1) // 7 + 1 == _number(nth, {})
    if dow.endswith("L") and dow != "L":
        return weekday == _number(dow[:-1], _WEEKDAYS) and day.day + 7 > last
    return weekday in _values("7" if dow == "L" else dow, 1, 7, _WEEKDAYS)


def _nearest_weekday(day: dt.date) -> dt.date:
    """The Monday-to-Friday day nearest `day` within its month (`nW` of a cron)."""
    if day.isoweekday() == 6:  # Saturday: the Friday before, or the Monday after the 1st
        return day - dt.timedelta(days=1) if day.day > 1 else day + dt.timedelta(days=2)
    if day.isoweekday() == 7:  # Sunday: the Monday after, or the Friday before the month's end
        after = day + dt.timedelta(days=1)
        return after if after.month == day.month else day - dt.timedelta(days=2)
    return day


def _values(
    field: str, low: int, high: int, names: Mapping[str, int] | None = None
) -> frozenset[int]:
    """The numbers a list of `*`, `?`, `N`, `N-M`, each with an optional `/STEP`, names."""
    found: set[int] = set()
    for part in field.split(","):
        spec, slash, step_text = part.partition("/")
        step = _number(step_text, {}) if slash else 1
        if spec in ("*", "?"):
            first, last = low, high
        else:
            start, dash, end = spec.partition("-")
            first = _number(start, names or {})
            last = _number(end, names or {}) if dash else (high if slash else first)
        if not low <= first <= last <= high or step < 1:
            raise ValueError(f"{field!a} is not a cron field of {low}-{high}")
        found.update(range(first, last + 1, step))
    return frozenset(found)


def _number(text: str, names: Mapping[str, int]) -> int:
    if text in names:
        return names[text]
    if not text.isdigit():
        raise ValueError(f"{text!a} is not a number in a cron field")
    return int(text)

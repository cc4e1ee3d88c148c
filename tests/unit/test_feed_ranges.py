"""Every duration, count and size field of a feed has a range, enforced when the feed is loaded,
and every numeric option of `dlpipe worker` has one, enforced when the command line is parsed.

A feed value outside its range is one FeedError naming the feed, the field and the range
(large_file_threshold_bytes = 10**30 used to load); the bounds themselves load. A feed's value
overrides the deployment's setting of the same name, so its range lies inside that setting's
(config.py's INT_SETTINGS). A new whole-number field of Feed without a range fails here. A
worker option past its range is one `dlpipe: ` line and exit 2, never a traceback.
"""

from __future__ import annotations

import sys
import typing
from typing import Any

import click
import pytest

from dlpipe.cli.worker import worker_command
from dlpipe.config import INT_SETTINGS
from dlpipe.domain import feeds
from dlpipe.domain.feeds import Feed, FeedError, feed_from_mapping
from dlpipe.log import logging_config, restore_logging

NAMED: dict[str, Any] = {
    "provider_base_url": "https://api.vendor-b.example/",
    "token_secret": "dlpipe/vendor-b/token",
    "private_key_secret": "arn:aws:secretsmanager:eu-west-2:123456789012:secret:dlpipe/key-AbCdEf",
    "schedule": "cron(0 7 * * ? *)",
    "time_zone": "Europe/London",
    "destination_prefix": "vendor-b",
}
HUGE = (10**18, 10**30, 10**40)


def _numeric(hint: object) -> bool:
    """True for an int or float annotation (optional or not), never a bool."""
    kinds = set(typing.get_args(hint)) or {hint}
    return bool(kinds & {int, float}) and bool not in kinds


NUMERIC_FIELDS = sorted(n for n, hint in typing.get_type_hints(Feed).items() if _numeric(hint))


def _ranges() -> typing.Mapping[str, tuple[int, int]]:
    table: typing.Mapping[str, tuple[int, int]] = feeds.FEED_INT_RANGES
    return table


def _refused(field: str, value: object) -> str:
    with pytest.raises(FeedError) as refused:
        feed_from_mapping("vendor-b", {**NAMED, field: value}, local=True)
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_the_feed_has_the_seven_numeric_fields_the_table_was_written_for() -> None:
    """The discovery below finds Feed's numeric fields (a guard on the test itself)."""
    assert {
        "poll_interval_seconds",
        "max_polls",
        "large_file_threshold_bytes",
        "stall_floor_bytes",
        "stall_window_seconds",
        "max_share_percent",
        "restatement_window_days",
    } <= set(NUMERIC_FIELDS)


def test_every_numeric_feed_field_has_a_range_and_only_they_do() -> None:
    """A new duration, count or size field of Feed fails here until it has a range."""
    missing, extra = set(NUMERIC_FIELDS) - set(_ranges()), set(_ranges()) - set(NUMERIC_FIELDS)
    assert (missing, extra) == (set(), set()), "add each missing field to FEED_INT_RANGES"


@pytest.mark.parametrize("field", NUMERIC_FIELDS)
def test_a_numeric_feed_field_loads_its_bounds_and_refuses_past_them(field: str) -> None:
    """The minimum and maximum load as themselves, and None (the deployment's value); one
    past either, or a number too large for any arithmetic, is one line naming the feed, the
    field and its range; so is a fraction, a bool or a string."""
    minimum, maximum = _ranges()[field]
    assert minimum <= maximum
    for value in (minimum, maximum, None):
        loaded = feed_from_mapping("vendor-b", {**NAMED, field: value}, local=True)
        assert getattr(loaded, field) == value
    for bad in (minimum - 1, maximum + 1, *HUGE, *(-v for v in HUGE), 0.5, True, "3"):
        assert _refused(field, bad) == (
            f"feeds.vendor-b.{field}: {bad!a} is not a whole number >= {minimum} and <= {maximum}"
        )


@pytest.mark.parametrize("field", NUMERIC_FIELDS)
def test_a_number_too_large_for_any_arithmetic_is_refused_naming_the_field(field: str) -> None:
    """10**30 bytes, seconds or days: one line naming the field and an upper bound."""
    for value in HUGE:
        message = _refused(field, value)
        assert message.startswith(f"feeds.vendor-b.{field}: {value} is not a whole number >= ")
        assert " and <= " in message


@pytest.mark.parametrize("field", [f for f in NUMERIC_FIELDS if f in INT_SETTINGS])
def test_a_feeds_range_lies_inside_the_setting_it_overrides(field: str) -> None:
    """A feed's value stands for the deployment's setting of the same name: no wider."""
    minimum, maximum = _ranges()[field]
    setting = INT_SETTINGS[field]
    assert (setting.minimum <= minimum, maximum <= setting.maximum) == (True, True)


WORKER_NUMBERS = sorted(
    (
        p
        for p in worker_command.params
        if isinstance(p, click.Option)
        and p.type.name in {"integer range", "float range", "integer", "float"}
    ),
    key=lambda p: p.name or "",
)


def _flag(option: click.Option) -> str:
    return max(option.opts, key=len)


def test_the_worker_has_the_numeric_options_the_table_was_written_for() -> None:
    """The discovery finds every numeric option (a guard on the test itself)."""
    assert {_flag(o) for o in WORKER_NUMBERS} >= {
        "--concurrency",
        "--wait-seconds",
        "--max-messages",
        "--exit-when-idle",
        "--grace-seconds",
        "--time-budget-seconds",
    }


@pytest.mark.parametrize("option", WORKER_NUMBERS, ids=_flag)
def test_every_numeric_worker_option_has_a_minimum_and_a_maximum(option: click.Option) -> None:
    """A ranged type, bounded on both sides (a new option without one fails here)."""
    assert isinstance(option.type, click.IntRange | click.FloatRange)
    assert (option.type.min is not None, option.type.max is not None) == (True, True)


def _worker(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """`dlpipe worker ARGV` through the CLI's own error rendering, with no queue configured:
    a value parsed goes on to the one-line `DLPIPE_QUEUE_URL is not set` (exit 1)."""
    import dlpipe.cli.main

    for name in [n for n in list(__import__("os").environ) if n.startswith(("DLPIPE_", "AWS_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(sys, "argv", ["dlpipe", "worker", *argv])
    before = logging_config()  # a parsed value configures logging to this test's stderr
    try:
        with pytest.raises(SystemExit) as exited:
            dlpipe.cli.main.main()
    finally:
        restore_logging(before)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert (err.startswith("dlpipe: "), err.count("\n")) == (True, 1), err
    return int(exited.value.code or 0), err


def _shown(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


@pytest.mark.parametrize("option", WORKER_NUMBERS, ids=_flag)
def test_a_worker_option_past_its_range_is_one_line_naming_it(
    option: click.Option, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its bounds are parsed (the command goes on to the missing queue URL); one past either,
    10**30, inf or nan is one `dlpipe: ` line naming the option, exit 2."""
    assert isinstance(option.type, click.IntRange | click.FloatRange)
    low, high = option.type.min, option.type.max
    assert low is not None
    assert high is not None
    flag = _flag(option)
    for bound in (low, high):
        code, err = _worker([flag, _shown(bound)], monkeypatch, capsys)
        assert (code, "DLPIPE_QUEUE_URL" in err) == (1, True), err
    past = [_shown(low - 1), _shown(high + 1), str(10**30)]
    if isinstance(option.type, click.FloatRange):
        past += ["inf", "nan", "1e400"]
    for value in past:
        code, err = _worker([flag, value], monkeypatch, capsys)
        assert (code, f"'{flag}'" in err) == (2, True), err

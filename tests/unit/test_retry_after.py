"""Retry-After is read one way (RFC 9110) by the provider client and the download source."""

from __future__ import annotations

import pytest

from dlpipe.adapters.retry_after import RETRY_AFTER_MAX_S, retry_after_seconds

NOW_S = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("12", 12.0),
        ("0", 0.0),
        (" 7\t", 7.0),  # optional whitespace around the field value
        ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),  # IMF-fixdate
        ("Wednesday, 21-Oct-15 07:28:10 GMT", 10.0),  # obsolete RFC 850 form
        ("Wed Oct 21 07:28:10 2015", 10.0),  # obsolete asctime form
        ("Wed Oct  1 07:28:10 2015", 0.0),  # a date in the past means "now"
    ],
)
def test_delay_seconds_and_every_http_date_form_become_seconds(header: str, seconds: float) -> None:
    """delay-seconds and the three HTTP-date forms are honoured; a past date waits 0 s."""
    assert retry_after_seconds(header, now_s=NOW_S) == seconds


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "soon",
        "1.5",  # a fraction is not delay-seconds
        "-5",
        "+5",
        "1e3",
        "\u00b2",  # a superscript two: str.isdigit says yes, int() says no
        "\uff11\uff12",  # full-width digits
        "Wed, 21 Oct 2015 07:28:10 +0000",  # HTTP-dates are GMT, spelled GMT
        "21 Oct 2015 07:28:10 GMT",
        "Wed, 31 Feb 2015 07:28:10 GMT",
        "9" * 65,
    ],
)
def test_anything_else_is_unreadable(header: str | None) -> None:
    """What RFC 9110 does not allow gives None: the caller keeps its own backoff."""
    assert retry_after_seconds(header, now_s=NOW_S) is None


def test_the_answer_is_bounded() -> None:
    """A huge delay or a far-future date is capped at a day, never inf or an overflow."""
    assert retry_after_seconds("9" * 40, now_s=NOW_S) == RETRY_AFTER_MAX_S
    assert retry_after_seconds("Fri, 01 Jan 9999 00:00:00 GMT", now_s=NOW_S) == RETRY_AFTER_MAX_S

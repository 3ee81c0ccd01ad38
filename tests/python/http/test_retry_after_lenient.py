"""The lenient Retry-After dates (docs/retry-after.md), checked against Python's
own mail-date parser.

urllib3's ``Retry.parse_retry_after`` reads dates with
:func:`email.utils.parsedate_tz`; for every lenient form mulligan accepts, the
expected delay here is what parsedate_tz and :func:`calendar.timegm` make of
the same text (an implementation that shares nothing with mulligan's). The
forms mulligan refuses although parsedate_tz reads them are listed with the
reason. The table every front door shares is tests/vectors/retry_after.json.
"""

from __future__ import annotations

import calendar
import email.utils
import random
import time

import pytest

import mulligan

NOW = 784111657.0  # 1994-11-06T08:47:37Z, 120 s before RFC 9110's example date

DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
LONG_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def reference_delay(value: str, now: float) -> float:
    """The delay parsedate_tz gives, its zone applied (urllib3's arithmetic:
    email.utils.mktime_tz is timegm minus the offset)."""
    parsed = email.utils.parsedate_tz(value)
    assert parsed is not None, value
    unix = calendar.timegm(parsed[:6]) - (parsed[9] or 0)
    return max(0.0, float(unix - now))


@pytest.mark.parametrize(
    "value",
    [
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 UT",
        "Sun, 06 Nov 1994 08:49:37 Z",
        "Sun, 06 Nov 1994 09:49:37 +0100",
        "Sun, 06 Nov 1994 03:19:37 -0530",
        "Sun, 06 Nov 1994 08:49:37 -0000",
        "Mon, 07 Nov 1994 08:19:37 +2330",
        "sun, 06 nov 1994 08:49:37 gmt",
        "SUNDAY, 06-NOV-94 08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "06 Nov 1994 08:49:37 GMT",
        "Sun 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
        "Sun,  06 Nov 1994\t08:49:37 GMT",
        "Sun, 06-Nov-1994 08:49:37 GMT",
        "Sun, 06-Nov-94 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994",
        "Wed, 16 Nov 1994 08:49:37 +0000",
        "Sun, 06 Nov 1994 08:47:00 UTC",  # in the past: retry now
    ],
)
def test_each_lenient_form_gives_what_parsedate_tz_gives(value: str) -> None:
    assert mulligan.parse_retry_after(value, NOW) == reference_delay(value, NOW)


def test_seeded_dates_in_every_lenient_form_agree_with_parsedate_tz() -> None:
    rng = random.Random(2024)
    now = 1704067200.0  # 2024-01-01T00:00:00Z
    for _ in range(300):
        unix = rng.randrange(1704067200, 1704067200 + 40 * 365 * 86400)
        offset_minutes = rng.randrange(-1439, 1440)
        local = unix + offset_minutes * 60
        y, mo, d, h, mi, s, wd = time.gmtime(local)[:7]
        sign = "-" if offset_minutes < 0 else "+"
        zone = "%s%02d%02d" % (sign, abs(offset_minutes) // 60, abs(offset_minutes) % 60)
        texts = [
            "%s, %d %s %04d %02d:%02d:%02d %s" % (DAYS[wd], d, MONTHS[mo - 1], y, h, mi, s, zone),
            "%s,  %02d-%s-%04d\t%02d:%02d:%02d %s" % (LONG_DAYS[wd], d, MONTHS[mo - 1].upper(), y,
                                                     h, mi, s, zone),
            ("%02d %s %04d %02d:%02d:%02d %s" % (d, MONTHS[mo - 1].lower(), y, h, mi, s,
                                                 zone)).lower(),
        ]
        for text in texts:
            assert mulligan.parse_retry_after(text, now) == reference_delay(text, now), text
            assert reference_delay(text, now) == float(unix) - now


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("Sun, 06 Nov 1994 08:49:37", "no zone: parsedate_tz guesses UTC"),
        ("Sun, 06 Nov 1994 08:49:37 EST", "zone names other than GMT, UTC, UT, Z"),
        ("Sun, 06 Nov 1994 08:49:37 PDT", "zone names other than GMT, UTC, UT, Z"),
        ("Sun, 06 November 1994 08:49:37 GMT", "full month names"),
        ("Sun, 06 Nov 1994 08.49.37 GMT", "dots between the fields of the time"),
        ("Sun, 06 Nov 1994 08:49:37 +2400", "an offset of 24 h or more"),
        ("Sun, 06 Nov 1994 8:49:37 GMT", "a one-digit hour"),
    ],
)
def test_forms_parsedate_tz_reads_but_mulligan_refuses(value: str, why: str) -> None:
    assert email.utils.parsedate_tz(value) is not None, "parsedate_tz reads it"
    assert mulligan.parse_retry_after(value, NOW) is None, why

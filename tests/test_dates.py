"""The one date syntax of since/until (memfs.dates), at a fixed moment and in a zone that is not UTC."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone

import pytest

from memfs.dates import date_words, day_range, iso, iso_range, parse_moment, time_range, written_date
from memfs.errors import InvalidArgumentError

# 2026-03-31 10:30:00 in New York (EDT, UTC-4) is 14:30 UTC
NOW = datetime(2026, 3, 31, 14, 30, 0, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("2026-11-01", "2026-11-01T04:00:00Z", "2026-11-02T04:59:59Z"),  # a local day (DST ends that night)
        ("2026-11-01T10:00", "2026-11-01T15:00:00Z", "2026-11-01T15:00:00Z"),
        ("2026-11-01 10:00:30", "2026-11-01T15:00:30Z", "2026-11-01T15:00:30Z"),
        ("2026-11-01T10:00Z", "2026-11-01T10:00:00Z", "2026-11-01T10:00:00Z"),
        ("2026-11-01t10:00:00z", "2026-11-01T10:00:00Z", "2026-11-01T10:00:00Z"),
        ("2026-11-01T10:00+02:00", "2026-11-01T08:00:00Z", "2026-11-01T08:00:00Z"),
        ("2026-11-01T10:00:00.750-0500", "2026-11-01T15:00:00Z", "2026-11-01T15:00:00Z"),
        ("now", "2026-03-31T14:30:00Z", "2026-03-31T14:30:00Z"),
        ("today", "2026-03-31T04:00:00Z", "2026-04-01T03:59:59Z"),
        ("  Yesterday ", "2026-03-30T04:00:00Z", "2026-03-31T03:59:59Z"),
        ("2 days ago", "2026-03-29T14:30:00Z", "2026-03-29T14:30:00Z"),
        ("1 day ago", "2026-03-30T14:30:00Z", "2026-03-30T14:30:00Z"),
        ("3 hours ago", "2026-03-31T11:30:00Z", "2026-03-31T11:30:00Z"),
        ("90 Minutes  ago", "2026-03-31T13:00:00Z", "2026-03-31T13:00:00Z"),
        ("45 seconds ago", "2026-03-31T14:29:15Z", "2026-03-31T14:29:15Z"),
        ("2 weeks ago", "2026-03-17T14:30:00Z", "2026-03-17T14:30:00Z"),
        ("1 month ago", "2026-02-28T15:30:00Z", "2026-02-28T15:30:00Z"),  # March 31 back to Feb's last day, EST
        ("1 year ago", "2025-03-31T14:30:00Z", "2025-03-31T14:30:00Z"),
    ],
)
def test_each_form(text: str, start: str, end: str) -> None:
    assert iso(parse_moment(text, now=NOW)) == start
    assert iso(parse_moment(text, end=True, now=NOW)) == end


@pytest.mark.parametrize(
    "text",
    ["", "garbage", "tomorrow", "next week", "last tuesday", "2 days", "days ago", "-2 days ago", "2.5 days ago",
     "20261101", "2026-11", "2026/11/01", "11/01/2026", "2026-W44", "2026-11-01T10", "2026-11-01T10:00 PST",
     "1234567 days ago", "now!"],
)  # fmt: skip
def test_anything_else_is_refused_with_what_works(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="is not a date or time; use a date") as caught:
        parse_moment(text, name="--since", now=NOW)
    assert str(caught.value).startswith(f"--since {text!r}")


@pytest.mark.parametrize("text", ["2026-02-30", "2026-13-01", "2026-11-01T25:00", "0000-01-01", "9999 years ago"])
def test_impossible_dates_are_refused(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="not a real date"):
        parse_moment(text, now=NOW)


def test_datetimes_are_taken_as_they_are_and_naive_ones_as_local() -> None:
    aware = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=1)))
    assert iso(parse_moment(aware)) == "2026-01-01T11:00:00Z"
    assert iso(parse_moment(datetime(2026, 1, 1, 12, 0))) == "2026-01-01T17:00:00Z"
    with pytest.raises(InvalidArgumentError, match="must be text or a datetime"):
        parse_moment(20260101)


def test_ranges_are_checked() -> None:
    assert time_range(None, "", now=NOW) == (None, None)
    assert iso_range("yesterday", "today", now=NOW) == ("2026-03-30T04:00:00Z", "2026-04-01T03:59:59Z")
    assert iso_range(None, "2099-01-01", now=NOW)[1] == "2099-01-02T04:59:59Z"  # an until in the future is fine
    with pytest.raises(InvalidArgumentError, match="since '2026-04-01' is in the future"):
        time_range("2026-04-01", None, now=NOW)
    with pytest.raises(InvalidArgumentError, match="--since 'today' .* is after --until 'yesterday'"):
        time_range("today", "yesterday", names=("--since", "--until"), now=NOW)
    assert time_range("today", "today", now=NOW)[0] is not None  # one whole day


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("1:56 pm on 8 May, 2023", date(2023, 5, 8)),
        ("May 8th, 2023", date(2023, 5, 8)),
        ("8th of May 2023", date(2023, 5, 8)),
        ("Sept. 3 2021", date(2021, 9, 3)),
        ("december 1, 1999", date(1999, 12, 1)),
        ("2023-05-08", date(2023, 5, 8)),
        ("2026-11-22T10:00:01Z", date(2026, 11, 22)),
        (date(2024, 2, 29), date(2024, 2, 29)),
        ("31 April 2023", None),  # no such day
        ("05/08/2023", None),  # May or August: not guessed
        ("last spring", None),
        (None, None),
    ],
)
def test_a_date_as_people_write_it(text: object, day: date | None) -> None:
    assert written_date(text) == day


def test_date_words_name_the_day_as_questions_do() -> None:
    assert date_words(date(2023, 5, 8)) == "8 May 2023"


def test_day_range_is_local_days() -> None:
    assert day_range("2026-03-01", "2026-03-02", now=NOW) == ("2026-03-01", "2026-03-02")
    assert day_range(None, "yesterday", now=NOW) == (None, "2026-03-30")
    with pytest.raises(InvalidArgumentError):
        day_range("someday", None, now=NOW)

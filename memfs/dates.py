"""The one syntax of the dates and times ``since`` and ``until`` take, in the CLI and the library.

- an ISO 8601 date, ``2026-11-01``: a whole day of local time, so ``since`` starts at its first
  second and ``until`` ends at its last;
- an ISO 8601 date and time, ``2026-11-01T10:00`` or ``2026-11-01 10:00:30``, followed by ``Z`` or
  an offset (``+02:00``, ``-0500``) for a time that is not local;
- ``N UNIT ago``, UNIT one of second, minute, hour, day, week, month, year (or a plural): ``2 days
  ago``, ``3 hours ago``; a month back is the same day of the earlier month (or its last day);
- ``now``, ``today`` and ``yesterday`` (days of local time, like a date).

Anything else raises InvalidArgumentError naming what is accepted, and so does a ``since`` in
the future or after the ``until``: such a range can match nothing, and saying so beats an empty
or a silently unfiltered answer.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from .errors import InvalidArgumentError

SYNTAX = (
    "a date (2026-11-01), a time (2026-11-01T10:00, local unless it ends in Z or an offset "
    "such as +02:00), 'N units ago' ('2 days ago', '3 hours ago'; seconds, minutes, hours, days, "
    "weeks, months or years), today, yesterday or now"
)

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DATETIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.\d{1,9})?\s*(Z|[+-]\d{2}:?\d{2})?", re.IGNORECASE
)
_AGO = re.compile(r"(\d{1,6})\s+(second|minute|hour|day|week|month|year)s?\s+ago", re.IGNORECASE)
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}


def parse_moment(value: Any, *, name: str = "since", end: bool = False, now: datetime | None = None) -> datetime:
    """The moment ``value`` names, in UTC and whole seconds.

    Args:
        value: Text in the syntax above, or a datetime (a naive one is local time).
        name: The option's name, for the error message (``since``, ``--until``).
        end: For a whole day (a date, ``today``, ``yesterday``): its last second instead of its first.
        now: The present (for tests); defaults to the clock.

    Raises:
        InvalidArgumentError: ``value`` is not in the syntax, or not a real date.
    """
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.astimezone()
        return aware.astimezone(timezone.utc).replace(microsecond=0)
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be text or a datetime, got {type(value).__name__}")
    text = " ".join(value.split()).lower()
    try:
        moment = _parse(text, end=end, now=now)
    except (ValueError, OverflowError) as exc:  # a month 13, a day 31 in April, a year 0
        raise InvalidArgumentError(f"{name} {value!r} is not a real date or time ({exc})") from None
    if moment is None:
        raise InvalidArgumentError(f"{name} {value!r} is not a date or time; use {SYNTAX}")
    return moment.astimezone(timezone.utc).replace(microsecond=0)


def _parse(text: str, *, end: bool, now: datetime) -> datetime | None:
    local_today = now.astimezone().date()
    if text == "now":
        return now
    if text in ("today", "yesterday"):
        return _day(local_today - timedelta(days=1 if text == "yesterday" else 0), end)
    match = _DATE.fullmatch(text)
    if match:
        return _day(date(int(match[1]), int(match[2]), int(match[3])), end)
    match = _DATETIME.fullmatch(text)
    if match:
        zone = (match[3] or "").upper()
        if zone == "Z":
            zone = "+00:00"
        elif zone and ":" not in zone:
            zone = f"{zone[:3]}:{zone[3:]}"
        moment = datetime.fromisoformat(f"{match[1]}T{match[2]}{zone}")
        return moment if moment.tzinfo else moment.astimezone()
    match = _AGO.fullmatch(text)
    if match:
        count, unit = int(match[1]), match[2].lower()
        if unit in _SECONDS:
            return now - timedelta(seconds=count * _SECONDS[unit])
        wall = now.astimezone().replace(tzinfo=None)  # months are counted on the local calendar and clock
        return _months_back(wall, count * (12 if unit == "year" else 1)).astimezone()
    return None


def _day(day: date, end: bool) -> datetime:
    return datetime.combine(day, time(23, 59, 59) if end else time(0, 0, 0)).astimezone()


def _months_back(moment: datetime, months: int) -> datetime:
    years, month0 = divmod(moment.month - 1 - months, 12)
    year, month = moment.year + years, month0 + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


def time_range(
    since: Any, until: Any, *, names: tuple[str, str] = ("since", "until"), now: datetime | None = None
) -> tuple[datetime | None, datetime | None]:
    """``since`` and ``until`` (either may be None or empty) as moments, checked to make a range.

    Raises:
        InvalidArgumentError: Either is not in the syntax, ``since`` is in the future, or
            ``since`` is after ``until``.
    """
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)
    start = None if since is None or since == "" else parse_moment(since, name=names[0], now=now)
    stop = None if until is None or until == "" else parse_moment(until, name=names[1], end=True, now=now)
    if start is not None and start > now:
        raise InvalidArgumentError(
            f"{names[0]} {_shown(since)} is in the future ({iso(start)}); nothing has changed since then yet"
        )
    if start is not None and stop is not None and start > stop:
        raise InvalidArgumentError(
            f"{names[0]} {_shown(since)} ({iso(start)}) is after {names[1]} "
            f"{_shown(until)} ({iso(stop)}); nothing can match"
        )
    return start, stop


def iso_range(
    since: Any, until: Any, *, names: tuple[str, str] = ("since", "until"), now: datetime | None = None
) -> tuple[str | None, str | None]:
    """:func:`time_range` as memfs stores times (``2026-11-01T10:00:00Z``), for the index's filters."""
    start, stop = time_range(since, until, names=names, now=now)
    return (iso(start) if start else None), (iso(stop) if stop else None)


def iso(moment: datetime) -> str:
    """A moment as memfs stores times: ``2026-11-01T10:00:00Z`` (UTC, whole seconds)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else repr(str(value))


def day_range(since: Any, until: Any, *, now: datetime | None = None) -> tuple[str | None, str | None]:
    """:func:`time_range` as the local days it starts and ends on (``2026-11-01``), for filters by day."""
    start, stop = time_range(since, until, now=now)
    return (start.astimezone().date().isoformat() if start else None), (
        stop.astimezone().date().isoformat() if stop else None
    )


_MONTHS = {m: n for n, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_WRITTEN = (
    re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)"),  # 2023-05-08, 2023-05-08T13:56:00Z
    re.compile(rf"(?<!\w)(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})(?!\d)", re.IGNORECASE),
    re.compile(rf"(?<!\w){_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)", re.IGNORECASE),
)


def written_date(text: Any) -> date | None:
    """The calendar day a date written by people names, or None if none is found.

    Reads ISO dates and the common English forms ("8 May, 2023", "May 8th 2023", "1:56 pm on 8
    May, 2023"), month names in full or abbreviated: what a transcript's ``date`` holds when a
    person or another tool wrote it. Nothing is guessed: "05/08/2023" is May or August.
    """
    if isinstance(value := text, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        return None
    for kind, pattern in enumerate(_WRITTEN):
        match = pattern.search(value)
        if match is None:
            continue
        if kind == 0:
            year, month, day = int(match[1]), int(match[2]), int(match[3])
        elif kind == 1:
            day, month, year = int(match[1]), _MONTHS[match[2][:3].lower()], int(match[3])
        else:
            month, day, year = _MONTHS[match[1][:3].lower()], int(match[2]), int(match[3])
        try:
            return date(year, month, day)
        except ValueError:  # the 31st of April
            return None
    return None


def date_words(day: date) -> str:
    """A day in English words and numbers, as questions name it: ``8 May 2023``."""
    return f"{day.day} {_MONTH_NAMES[day.month - 1]} {day.year}"


_MONTH_NAMES = ("January February March April May June July August September October November December").split()

"""When a memory holds: its validity keys, and the one answer to "is this memory current?".

A memory may say when it is true with five front-matter keys:

- ``valid_from``: it holds from then on (before, it is ``future``);
- ``valid_until``: it held until then (after, it is ``expired``);
- ``expires``: the same as ``valid_until`` for a memory that should go away (``memfs prune``);
- ``supersedes``: the id (or a list of ids) of the memories it replaced;
- ``superseded_by``: the id of the memory that replaced it (it is then ``superseded``, whatever
  its dates say: a newer fact has taken its place).

Times are ISO 8601 dates or times in the syntax of :mod:`memfs.dates`: a date is a whole day of
local time, so ``valid_from: 2026-11-01`` starts at its first second and ``valid_until`` or
``expires: 2026-11-30`` ends at its last. Relative forms (``2 days ago``) are refused in a file:
a file must say the same thing tomorrow.

Everything here is pure: the present is an argument (``now``), so search, injection, listings,
prune and the tests ask the same question the same way. :func:`check` is strict (for writes: a
bad date is an error and nothing is written); :func:`validity` is lenient (for files a person
wrote by hand: an unreadable date is ignored rather than hiding the memory, and `memfs doctor`
is the place to report it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .dates import iso, parse_moment
from .errors import InvalidArgumentError, ValidityError

TIME_KEYS = ("valid_from", "valid_until", "expires")
ID_KEYS = ("supersedes", "superseded_by")
KEYS = TIME_KEYS + ID_KEYS

CURRENT = "current"
SUPERSEDED = "superseded"
EXPIRED = "expired"
FUTURE = "future"
STATES = (CURRENT, SUPERSEDED, EXPIRED, FUTURE)

MAX_ID_CHARS = 200
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+\s*(?:Z|z|[+-]\d{2}:?\d{2})?)?")


@dataclass(frozen=True)
class Validity:
    """What a memory's validity keys say, read and normalised.

    Attributes:
        start: When it starts to hold (``valid_from``), ISO 8601 UTC, or None.
        end: When it stops holding: the earlier of ``valid_until`` and ``expires``, or None.
        superseded_by: The id of the memory that replaced it, or None.
        supersedes: The ids of the memories it replaced.
        expires: Whether ``end`` comes from ``expires`` (what ``memfs prune`` archives).
    """

    start: str | None = None
    end: str | None = None
    superseded_by: str | None = None
    supersedes: tuple[str, ...] = ()
    expires: bool = False

    @property
    def timed(self) -> bool:
        """True when the answer depends on the present (a start or an end)."""
        return self.start is not None or self.end is not None

    @property
    def plain(self) -> bool:
        """True when no validity key says anything: the memory is current at any time."""
        return not self.timed and self.superseded_by is None and not self.supersedes

    def state(self, now: datetime | None = None) -> str:
        """``superseded``, ``expired``, ``future`` or ``current`` at ``now`` (the clock by default)."""
        return self.state_at(iso(now or datetime.now(timezone.utc)))

    def state_at(self, moment: str) -> str:
        """:meth:`state` at a moment written as memfs stores times (``2026-11-01T10:00:00Z``)."""
        if self.superseded_by is not None:
            return SUPERSEDED
        if not self.timed:
            return CURRENT
        if self.end is not None and self.end <= moment:  # ISO UTC strings compare as times
            return EXPIRED
        if self.start is not None and self.start > moment:
            return FUTURE
        return CURRENT


def validity(metadata: Mapping[str, Any]) -> Validity:
    """The validity a memory's front matter gives it; a key that cannot be read is ignored."""
    start = _lenient(metadata.get("valid_from"), end=False)
    until = _lenient(metadata.get("valid_until"), end=True)
    expires = _lenient(metadata.get("expires"), end=True)
    ends = [t for t in (until, expires) if t is not None]
    end = min(ends) if ends else None
    return Validity(
        start,
        end,
        _one_id(metadata.get("superseded_by")),
        _ids(metadata.get("supersedes")),
        expires=expires is not None and end == expires,
    )


def state(metadata: Mapping[str, Any], now: datetime | None = None) -> str:
    """``current``, ``superseded``, ``expired`` or ``future``: see the module's docstring."""
    return validity(metadata).state(now)


def is_current(metadata: Mapping[str, Any], now: datetime | None = None) -> bool:
    """True when the memory holds at ``now``: search, injection and listings show only these by default."""
    return state(metadata, now) == CURRENT


def check(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """Check the validity keys of a memory about to be written; returns the ids they name.

    Whether those ids exist is the store's question (it knows the vault); here only their shape.

    Raises:
        ValidityError: A time that is not an ISO date or time, ``valid_from`` after the end, an id
            that is not a short line of text, or a memory that supersedes itself.
    """
    times = {key: moment(metadata[key], key=key) for key in TIME_KEYS if metadata.get(key) is not None}
    start = times.get("valid_from")
    for key in ("valid_until", "expires"):
        if start is not None and key in times and times[key] < start:
            raise ValidityError(
                f"{key} ({iso(times[key])}) is before valid_from ({iso(start)}); "
                "a memory cannot stop holding before it starts"
            )
    named: list[str] = []
    for key in ID_KEYS:
        value = metadata.get(key)
        if value is None:
            continue
        values = value if isinstance(value, list) and key == "supersedes" else [value]
        if not values:
            raise ValidityError(f"{key} is an empty list; name at least one memory id, or remove the key")
        for item in values:
            if not isinstance(item, str) or not item.strip() or len(item) > MAX_ID_CHARS or "\n" in item:
                what = "an id or a list of ids" if key == "supersedes" else "one memory id"
                raise ValidityError(f"{key} must be {what} (like mem_01J...), got {item!r:.80}")
            if metadata.get("id") is not None and item.strip() == str(metadata["id"]):
                raise ValidityError(f"{key} names the memory itself ({item}); a memory cannot replace itself")
            named.append(item.strip())
    return tuple(dict.fromkeys(named))


def named(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """The ids a memory's ``supersedes`` and ``superseded_by`` name, as far as they can be read."""
    held = validity(metadata)
    return tuple(dict.fromkeys((*held.supersedes, *((held.superseded_by,) if held.superseded_by else ()))))


def moment(value: Any, *, key: str = "valid_until", now: datetime | None = None) -> datetime:
    """A validity time as a moment: an ISO date (a whole local day) or time, or a datetime.

    A date ends at its last second for ``valid_until`` and ``expires``, and starts at its first for
    ``valid_from``.

    Raises:
        ValidityError: Anything else (relative forms like ``tomorrow`` or ``2 days ago`` included).
    """
    end = key != "valid_from"
    if isinstance(value, datetime):
        return parse_moment(value, name=key, end=end)
    if not isinstance(value, str) or not _ISO.fullmatch(value.strip()):
        raise ValidityError(
            f"{key} must be an ISO 8601 date or time (2026-11-30 or 2026-11-30T18:00:00Z), got {value!r:.80}"
        )
    try:
        return parse_moment(value.strip(), name=key, end=end, now=now)
    except InvalidArgumentError as exc:
        raise ValidityError(str(exc)) from None


def _lenient(value: Any, *, end: bool) -> str | None:
    if value is None or value == "":
        return None
    try:
        return iso(moment(value, key="valid_until" if end else "valid_from"))
    except ValidityError:
        return None


def _one_id(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, list):  # a hand-written list: the memory is superseded all the same
        ids = _ids(value)
        return ids[0] if ids else None
    return None


def _ids(value: Any) -> tuple[str, ...]:
    values = value if isinstance(value, list) else [value]
    return tuple(v.strip() for v in values if isinstance(v, str) and v.strip())

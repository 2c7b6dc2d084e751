"""Which turns a search may return: a speaker, a ``[start, end)`` time range, ids to leave out.

A :class:`TurnFilter` is applied to the whole ranking (every candidate is scored first), so a
filtered search returns the best ``k`` turns that pass, not the passing ones among the overall top
``k``. Both retrieval paths of :class:`~langmem_cog.retriever.CogMemRetriever` (the cascade and
plain hybrid search) take one.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.records import make_turn
    >>> f = TurnFilter.build(speaker="leo", start="2023-05-08", end="2023-05-08")
    >>> t = make_turn(id="t0", namespace="doc", speaker="Leo", text="Hi", position=0,
    ...               timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc))
    >>> f.allows(t), f.active
    (True, True)
    >>> TurnFilter.build(exclude_ids=["t0"]).allows(t)
    False
    >>> TurnFilter().active
    False
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from langmem_cog.errors import InvalidInputError
from langmem_cog.records import Turn

__all__ = ["END_OF_TIME", "TurnFilter", "parse_time"]

#: The end bound of the last day or month a date can name (9999-12-31): the latest time there is.
END_OF_TIME = datetime.max.replace(tzinfo=UTC)


def parse_time(value: str | date | datetime | None, *, end: bool = False) -> datetime | None:
    """An aware datetime from an ISO date or datetime (naive means UTC).

    A bare date is the start of that day, or with ``end=True`` the start of the next day (so a
    ``[start, end)`` range of two dates includes both days); the end of 9999-12-31, the last day a
    date can name, is the latest datetime there is.

    Raises:
        InvalidInputError: If a string is not an ISO date or datetime.

    Example:
        >>> parse_time("2023-05-08", end=True).isoformat()
        '2023-05-09T00:00:00+00:00'
        >>> parse_time("9999-12-31", end=True).isoformat()
        '9999-12-31T23:59:59.999999+00:00'
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        raw = value.strip()
        try:
            value = date.fromisoformat(raw)  # a bare date, "2023-05-08" or "20230508"
        except ValueError:
            value = None
        try:
            value = value or datetime.fromisoformat(raw)
        except ValueError:
            raise InvalidInputError(f"{raw!r} is not an ISO date or datetime: use e.g. '2023-05-08'") from None
    if isinstance(value, datetime):
        return value if value.utcoffset() is not None else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        day = datetime.combine(value, time(), tzinfo=UTC)
        if not end:
            return day
        try:
            return day + timedelta(days=1)
        except OverflowError:  # the last day a date can name (9999-12-31)
            return END_OF_TIME
    raise InvalidInputError(f"expected an ISO date string, a date or a datetime, got {type(value).__name__}")


@dataclass(frozen=True)
class TurnFilter:
    """Turns a search may return.

    Attributes:
        speaker: Only this speaker's turns (compared case-insensitively; stored casefolded), or ``None``.
        start: Only turns at or after this time, or ``None`` (an ISO string, date or datetime; naive
            means UTC).
        end: Only turns before this time, or ``None`` (as ``start``; a bare date includes that day).
        exclude_ids: Turn ids never returned (e.g. the messages already in the conversation).
    """

    speaker: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    exclude_ids: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        """Normalise the fields as :meth:`build` does, so a filter built directly means the same.

        Raises:
            InvalidInputError: If a field has a value no filter can use (the message names it).
        """
        speaker = self.speaker
        if speaker is not None and not isinstance(speaker, str):
            raise InvalidInputError(f"speaker={speaker!r} is invalid: pass one speaker's name as a string")
        ids = self.exclude_ids
        if isinstance(ids, str | bytes) or not isinstance(ids, Collection):
            raise InvalidInputError(f"exclude_ids={ids!r} is invalid: pass a list or set of turn ids")
        start, end = parse_time(self.start), parse_time(self.end, end=True)
        if start is not None and end is not None and start >= end:
            raise InvalidInputError(f"start={self.start!r} is not before end={self.end!r}: swap them or widen the range")
        object.__setattr__(self, "speaker", speaker.strip().casefold() or None if speaker is not None else None)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "exclude_ids", frozenset(str(i) for i in ids))

    @classmethod
    def build(cls, *, speaker: str | None = None, start: str | date | datetime | None = None,
              end: str | date | datetime | None = None, exclude_ids: Collection[str] = ()) -> TurnFilter:
        """A filter from user-facing values: ISO strings, dates or datetimes (naive means UTC); a
        bare ``end`` date includes that whole day. The constructor takes the same values.

        Raises:
            InvalidInputError: If a time is not ISO, ``start`` is not before ``end``, ``speaker`` is
                not a string or ``exclude_ids`` is a string rather than a collection of ids.
        """
        return cls(speaker=speaker, start=start, end=end, exclude_ids=exclude_ids)  # type: ignore[arg-type]

    @property
    def active(self) -> bool:
        """Whether the filter can leave any turn out."""
        return bool(self.speaker or self.start or self.end or self.exclude_ids)

    def allows(self, turn: Turn) -> bool:
        """Whether ``turn`` passes."""
        if turn.id in self.exclude_ids or (self.speaker and turn.speaker.casefold() != self.speaker):
            return False
        if self.start is not None and turn.timestamp < self.start:
            return False
        return self.end is None or turn.timestamp < self.end

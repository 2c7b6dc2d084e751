"""Rule-based resolution of time expressions in conversational English.

A turn dated 8 May 2023 that says "I went to a support group yesterday" is about
2023-05-07. This module finds such expressions (relative ones like "yesterday",
"last Friday", "two weeks ago", "last summer", and absolute ones like
"7 May 2023", "2023-05-07", "in 2022") and resolves each to a half-open
interval ``[start, end)`` in the timezone of the turn's timestamp. It is
deterministic, uses only precompiled regular expressions and calendar
arithmetic, and needs no model.

Example:
    >>> from datetime import datetime, timezone
    >>> ref = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)  # a Monday
    >>> [(m.text, m.start.date().isoformat()) for m in
    ...  resolve_time_expressions("I went to a support group yesterday.", ref)]
    [('yesterday', '2023-05-07')]
    >>> normalize_text("We moved here two years ago, last summer we got a dog.", ref)
    'We moved here two years ago [2021], last summer [2022-06-01 to 2022-08-31] we got a dog.'

Rules for ambiguous cases (``D`` is the reference date, weeks run Monday to Sunday):

* Parts of the day: morning 06-12 h, afternoon 12-18 h, evening 18-24 h,
  night (``tonight``, ``last night``, ``Friday night``) 18 h to 06 h the next day.
* ``last <weekday>`` is the most recent such day strictly before ``D``;
  ``next <weekday>`` the first strictly after ``D``; ``this <weekday>`` the one in
  the week of ``D`` (past or future); ``this past``/``this coming`` behave as
  ``last``/``next``.
* A weekday that names a habit is no date: ``every Friday``, ``each Friday``,
  ``Friday evenings``, ``Tuesday and Thursday evenings``.
* Plain ``on Friday`` / ``Friday`` is resolved by tense: if the sentence holds a
  future marker (``will``, ``'ll``, ``going to``, ``gonna``, ``plan(s)``, ``how
  about``, ``let's``, a present progressive such as ``I'm going``, ...) it is
  the first Friday strictly after ``D``, otherwise the most recent one strictly
  before ``D`` (people call the reference day "today", not by its name). The same
  past/future switch applies to every plain form below.
* ``last/this/next week|month|year`` are calendar periods (``last week`` is the
  Monday-Sunday week before the week of ``D``). ``the week before last`` and
  ``the week after next`` shift by two. ``earlier this X`` is ``[start of X, D+1)``,
  ``later this X`` is ``[D, end of X)``.
* ``the past week`` / ``this past month`` / ``the past few days`` / ``the last 3
  weeks`` are rolling windows ``[D - N units, D + 1 day)``. ``the last week`` and
  ``the next month`` (with ``the``, no number) are not matched: they are often
  "the final week of ..." or relative to another event.
* Weekends are Saturday 00:00 to Monday 00:00. ``this weekend`` is the weekend of
  the week of ``D``; ``last``/``next weekend`` the one a week before/after it.
  ``the past weekend``, ``this past weekend`` and plain past-tense ``over the
  weekend`` are the most recent weekend whose Saturday is strictly before ``D``
  (equal to ``last weekend`` except on a Sunday); plain future-tense is
  ``this weekend``.
* ``N days ago`` is one day; ``N weeks ago`` the week containing ``D - 7N``;
  ``N months ago`` the calendar month ``N`` months back; ``N years ago`` the
  calendar year; ``N hours ago`` the clock hour. ``in N <units>`` and ``N <units>
  from now`` mirror these forwards; ``in a day`` is skipped (an idiom: people say
  "tomorrow"), and so is ``in N <units>`` after a negation, "only" or "first time"
  in its sentence ("we haven't talked in a few days" is a duration).
  ``a``/``an``/``one`` = 1, ``a couple (of)`` = 2, ``(a) few`` = 3, number words up
  to twelve, or digits.
* A month without a year: ``last May`` is the most recent May strictly before the
  month of ``D``; ``next May`` the first strictly after it; ``this May`` the May of
  ``D``'s year; ``in May`` / ``since May`` / ``early|mid|late May`` (early = days
  1-10, mid = 11-20, late = 21-end) are the most recent May not after the month of
  ``D`` (future tense: the first not before it; ``since`` is always past).
  ``May 7`` / ``7 May`` without a year is the most recent such date on or before
  ``D`` (future tense: on or after).
* A month or season of a relative year: ``in March last year``, ``March of next
  year``, ``the summer of last year``, ``last year in November``, ``this year,
  in the fall`` are that month or season of ``D``'s year minus one, plus zero or
  plus one. ``last year around October 8th`` stays two expressions (the year, then
  the date).
* "May" is a month only with a day number, a year or one of the prefixes above,
  never when followed by a word that continues a modal verb ("may be", "may
  have", ...). With the prefixes ``this/last/next/early/mid/late``, or after a
  bare day number with no year (``5 may``), a lower-case ``may`` is not taken as
  the month ("this may take a while", "the top 5 may change"). ``the 5th of May``,
  ``5th May`` and ``5 of May`` are always dates.
* Tense cues are looked for in the sentence holding the expression (split at
  ``.``, ``!``, ``?`` and line breaks). This is a heuristic: "I was going to go on
  Friday" reads as future.
* Seasons are meteorological, northern hemisphere: spring March-May, summer
  June-August, fall/autumn September-November, winter December-February (``winter
  2022`` starts in December 2022). ``this summer`` is the summer of ``D``'s year
  (``this winter`` in January or February is the one that began the December
  before); ``last summer`` the most recent one that ended on or before ``D``;
  ``next summer`` the one a year after ``this summer``; ``this coming summer`` the
  first one starting after ``D``; plain ``in the summer`` the most recent one begun
  on or before ``D`` (future tense: the current or next one).
* ``the other day`` is approximated as the seven days before ``D``.
* Years need a prefix (``in 2022``, ``since 2019``, ``mid-2021``; early = January-
  April, mid = May-August, late = September-December). Two-digit decades need
  ``the`` (``the 90s``: 1990s; ``the 20s``: 2020s when that decade has begun by
  ``D``, else 1920s). ISO dates are ``YYYY-MM-DD`` or ``YYYY/MM/DD``; other numeric
  formats (``5/7/23``) are ambiguous and ignored. Vague words ("recently",
  "lately", "a while ago") are ignored.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from typing import Literal, NamedTuple

from langmem_cog.errors import InvalidInputError

__all__ = [
    "Granularity",
    "TimeMention",
    "resolve_time_expressions",
    "normalize_text",
]

#: How precise a resolved mention is.
Granularity = Literal["day", "week", "weekend", "month", "season", "year", "decade", "hour", "part_of_day"]


@dataclass(frozen=True)
class TimeMention:
    """One time expression found in a text, resolved to a half-open interval.

    Attributes:
        text: The expression exactly as written (``text[span[0]:span[1]]`` of the input).
        start: First instant of the interval, timezone-aware, in the reference's tzinfo.
        end: First instant after the interval (exclusive), same tzinfo.
        granularity: The unit the expression speaks in.
        span: Character offsets ``(begin, end)`` of the expression in the input.
        relative: ``True`` if the resolution depended on the reference time.

    Example:
        >>> from datetime import datetime, timezone
        >>> ref = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
        >>> m = resolve_time_expressions("see you next week", ref)[0]
        >>> m.text, m.start.date().isoformat(), m.end.date().isoformat(), m.granularity
        ('next week', '2023-05-15', '2023-05-22', 'week')
        >>> m.span, m.relative
        ((8, 17), True)
    """

    text: str
    start: datetime
    end: datetime
    granularity: Granularity
    span: tuple[int, int]
    relative: bool


# --------------------------------------------------------------------------- vocabularies

_WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3,
    "friday": 4, "saturday": 5, "sunday": 6,
}  # fmt: skip
_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6,
    "july": 7, "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8,
    "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
# hour offsets [start, end) from midnight of the day
_PARTS_OF_DAY = {"morning": (6, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}

_FLAGS = re.IGNORECASE
_WD = r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_POD = r"(?:\s+(?P<pod>morning|afternoon|evening|night))?"
# A weekday that names a habit, not a date: "every Tuesday", "each Friday", "Tuesday evenings",
# "Tuesday and Thursday evenings" (a plural part of the day after it, or after the next weekday).
_NOT_HABIT = r"(?<!\bevery )(?<!\beach )"
_PODS = r"(?:mornings|afternoons|evenings|nights)"
_NOT_HABIT_AFTER = rf"(?!\s+{_PODS}\b)(?!\s+(?:and|or|&)\s+\w+day\s+{_PODS}\b)"
_MONTH_FULL = r"january|february|march|april|may|june|july|august|september|october|november|december"
_MONTH_ANY = _MONTH_FULL + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
_NUM = (
    r"(?P<n>[0-9]{1,4}|a\s+couple\s+of|a\s+couple|couple\s+of|a\s+few|few|an|a|one|two|three"
    r"|four|five|six|seven|eight|nine|ten|eleven|twelve)"
)
_UNIT = r"(?P<unit>hour|day|week|month|year|decade)s?"
_SEASON = r"(?P<s>spring|summer|fall|autumn|winter)"
_YEAR = r"(?P<y>(?:19|20)[0-9]{2})(?![0-9])"
# words after "may" that show it is the modal verb, not the month
_MODAL_NEXT = re.compile(
    r"\s+(?:be|have|not|never|also|well|still|just|only|even|i|we|you|he|she|they|it|take|help"
    r"|need|want|seem|sound|look|come|go|get|make|find|know|feel|cause|lead|happen|work|change"
    r"|mean|depend|vary|affect|apply|require|involve|include|differ|become|ask|add|say|see"
    r"|use|give|try|turn|end|or)\b",
    _FLAGS,
)
_FUTURE = re.compile(
    r"\b(?:will|won't|wont|shall|gonna|going\s+to|plans?|planning|planned\s+to"
    r"|about\s+to|hope\s+to|can't\s+wait|cannot\s+wait|looking\s+forward|upcoming|tomorrow"
    r"|how\s+about|what\s+about|let's|let\s+us|wanna|want\s+to\s+meet|would\s+you\s+like"
    r"|sounds?\s+good|works?\s+for\s+you|are\s+you\s+free)\b|['\u2019]ll\b"
    # present progressive of a person ("I'm going", "we are driving"), not "I'm feeling"
    r"|\b(?:i\s+am|i['\u2019]m|(?:we|you|they)(?:\s+are|['\u2019]re))\s+"
    r"(?!(?:being|feeling|\w*thing)\b)[a-z]+ing\b",
    _FLAGS,
)
# before "in N days": a negation or "first time" makes it a duration ("haven't talked in days")
_DURATION_CUE = re.compile(r"n't\b|n\u2019t\b|\b(?:not|never|first\s+time|only)\b", _FLAGS)
_SENTENCE_END = re.compile(r"[.!?\n]")


# --------------------------------------------------------------------------- calendar helpers


class _Res(NamedTuple):
    """A resolved interval in naive wall-clock time."""

    start: datetime
    end: datetime
    granularity: Granularity
    relative: bool


class _Cues:
    """Sorted, disjoint positions of one cue pattern's matches in a text."""

    __slots__ = ("starts", "ends")

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        for hit in pattern.finditer(text):
            self.starts.append(hit.start())
            self.ends.append(hit.end())

    def any_within(self, lo: int, hi: int, skip_lo: int, skip_hi: int) -> bool:
        """Whether a cue lies inside ``[lo, hi)`` without overlapping ``[skip_lo, skip_hi)``."""
        i = bisect_left(self.starts, lo)
        starts, ends = self.starts, self.ends
        while i < len(starts) and starts[i] < hi:
            if ends[i] <= hi and (ends[i] <= skip_lo or starts[i] >= skip_hi):
                return True
            i += 1
        return False


class _Ctx:
    """Per-call state shared by the resolvers.

    Sentence boundaries and tense cues are found once per text, lazily, so that
    each lookup is a binary search (texts with thousands of expressions stay linear).
    """

    __slots__ = ("text", "today", "now", "_ends", "_future", "_duration")

    def __init__(self, text: str, now: datetime) -> None:
        self.text = text
        self.now = now  # naive wall clock of the reference
        self.today = now.date()
        self._ends: list[int] | None = None
        self._future: _Cues | None = None
        self._duration: _Cues | None = None

    def sentence(self, m: re.Match[str]) -> tuple[int, int]:
        """Offsets ``[begin, end)`` of the sentence holding the match."""
        if self._ends is None:
            self._ends = [hit.start() for hit in _SENTENCE_END.finditer(self.text)]
        ends = self._ends
        i = bisect_left(ends, m.start())
        begin = ends[i - 1] + 1 if i else 0
        j = bisect_left(ends, m.end(), i)
        return begin, ends[j] if j < len(ends) else len(self.text)

    def future(self, m: re.Match[str]) -> bool:
        """Whether the sentence around the match (not the match) has a future-tense marker."""
        if self._future is None:
            self._future = _Cues(_FUTURE, self.text)
        begin, end = self.sentence(m)
        return self._future.any_within(begin, end, m.start(), m.end())

    def duration(self, m: re.Match[str]) -> bool:
        """Whether the sentence before the match has a cue that makes ``in N days`` a duration."""
        if self._duration is None:
            self._duration = _Cues(_DURATION_CUE, self.text)
        begin, _ = self.sentence(m)
        return self._duration.any_within(begin, m.start(), m.start(), m.start())


def _mid(d: date) -> datetime:
    return datetime(d.year, d.month, d.day)


def _days(d: date, n: int = 1, granularity: Granularity = "day", relative: bool = True) -> _Res:
    return _Res(_mid(d), _mid(d + timedelta(days=n)), granularity, relative)


def _month_index(y: int, m: int) -> int:
    return y * 12 + (m - 1)


def _month(idx: int, n: int = 1, relative: bool = True) -> _Res:
    y, m = divmod(idx, 12)
    y2, m2 = divmod(idx + n, 12)
    return _Res(datetime(y, m + 1, 1), datetime(y2, m2 + 1, 1), "month", relative)


def _add_months(d: date, n: int) -> date:
    y, m = divmod(_month_index(d.year, d.month) + n, 12)
    last = (date(y + (m + 1) // 12, (m + 1) % 12 + 1, 1) - timedelta(days=1)).day
    return date(y, m + 1, min(d.day, last))


def _year(y: int, relative: bool = True) -> _Res:
    return _Res(datetime(y, 1, 1), datetime(y + 1, 1, 1), "year", relative)


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _weekend(saturday: date) -> _Res:
    return _days(saturday, 2, "weekend")


def _season(name: str, y: int, relative: bool = True) -> _Res:
    idx = _month_index(y, _SEASON_START[name])
    r = _month(idx, 3, relative)
    return _Res(r.start, r.end, "season", relative)


def _part_of_day(d: date, pod: str) -> _Res:
    lo, hi = _PARTS_OF_DAY[pod]
    base = _mid(d)
    return _Res(base + timedelta(hours=lo), base + timedelta(hours=hi), "part_of_day", True)


def _with_pod(r: _Res, pod: str | None) -> _Res:
    return _part_of_day(r.start.date(), pod.casefold()) if pod else r


def _number(raw: str) -> int:
    words = raw.casefold().split()
    if "couple" in words:
        return 2
    if "few" in words:
        return 3
    word = words[0]
    return int(word) if word.isdigit() else _NUMBERS[word]


def _unit_name(raw: str) -> str:
    unit = raw.casefold()
    return unit[:-1] if unit.endswith("s") else unit


def _shift(ctx: _Ctx, unit: str, n: int) -> _Res:
    """The calendar unit ``n`` units away from the reference (negative = past)."""
    today = ctx.today
    if unit == "hour":
        t = ctx.now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=n)
        return _Res(t, t + timedelta(hours=1), "hour", True)
    if unit == "day":
        return _days(today + timedelta(days=n))
    if unit == "week":
        return _days(_week_start(today) + timedelta(weeks=n), 7, "week")
    if unit == "month":
        return _month(_month_index(today.year, today.month) + n)
    if unit == "year":
        return _year(today.year + n)
    y0 = (today.year + 10 * n) // 10 * 10
    return _Res(datetime(y0, 1, 1), datetime(y0 + 10, 1, 1), "decade", True)


def _may_ok(m: re.Match[str], ctx: _Ctx, strict: bool) -> bool:
    """Whether a matched month word can be the month (not the modal verb "may")."""
    word = ctx.text[m.start("mon") : m.end("mon")]  # as written (m may run on a lower-cased copy)
    if word.casefold() != "may":
        return True
    if _MODAL_NEXT.match(m.string, m.end("mon")):
        return False
    return not strict or word[0] == "M"


def _recent_date(ctx: _Ctx, month: int, day: int, future: bool) -> date:
    """Most recent ``month/day`` on or before today (or first on or after, if future)."""
    today = ctx.today
    step = 1 if future else -1
    for k in range(9):  # nine years always reach a leap year for 29 February
        try:
            d = date(today.year + k * step, month, day)
        except ValueError:
            continue
        if (d >= today) if future else (d <= today):
            return d
    raise ValueError(f"no date {month}/{day} near {today}")


# --------------------------------------------------------------------------- resolvers


def _r_day_word(m: re.Match[str], ctx: _Ctx) -> _Res:
    offset = {"today": 0, "yesterday": -1, "tomorrow": 1}[m.group("w").casefold()]
    return _with_pod(_days(ctx.today + timedelta(days=offset)), m.group("pod"))


def _r_day_two(m: re.Match[str], ctx: _Ctx) -> _Res:
    offset = -2 if m.group("rel").casefold().startswith("before") else 2
    return _with_pod(_days(ctx.today + timedelta(days=offset)), m.group("pod"))


def _r_tonight(m: re.Match[str], ctx: _Ctx) -> _Res:
    return _part_of_day(ctx.today, "night")


def _r_last_night(m: re.Match[str], ctx: _Ctx) -> _Res:
    return _part_of_day(ctx.today - timedelta(days=1), "night")


def _r_this_pod(m: re.Match[str], ctx: _Ctx) -> _Res:
    return _part_of_day(ctx.today, m.group("pod").casefold())


def _r_weekday(m: re.Match[str], ctx: _Ctx) -> _Res:
    wd = _WEEKDAYS[m.group("wd").casefold()]
    mod = " ".join((m.group("mod") or "").casefold().split())
    today = ctx.today
    if mod == "this":
        d = _week_start(today) + timedelta(days=wd)
    else:
        if mod in ("", "on"):
            mod = "next" if ctx.future(m) else "last"
        if mod in ("next", "this coming", "coming"):
            d = today + timedelta(days=(wd - today.weekday()) % 7 or 7)
        else:  # last, this past
            d = today - timedelta(days=(today.weekday() - wd) % 7 or 7)
    return _with_pod(_days(d), m.group("pod"))


def _r_period(m: re.Match[str], ctx: _Ctx) -> _Res:
    mod = " ".join(m.group("mod").casefold().split())
    unit = m.group("unit").casefold()
    if mod in ("last", "this", "next"):
        return _shift(ctx, unit, {"last": -1, "this": 0, "next": 1}[mod])
    r = _shift(ctx, unit, 0)
    day = _mid(ctx.today)
    if mod.startswith("earlier"):
        return _Res(r.start, day + timedelta(days=1), r.granularity, True)
    return _Res(day, r.end, r.granularity, True)


def _r_period_two(m: re.Match[str], ctx: _Ctx) -> _Res:
    n = -2 if m.group("rel").casefold().startswith("before") else 2
    unit = m.group("unit").casefold()
    if unit == "weekend":
        return _weekend(_week_start(ctx.today) + timedelta(days=5 + 7 * n))
    return _shift(ctx, unit, n)


def _r_weekend(m: re.Match[str], ctx: _Ctx) -> _Res:
    today = ctx.today
    this_sat = _week_start(today) + timedelta(days=5)
    mod = " ".join((m.group("mod") or "").casefold().split())
    if not mod:
        mod = "this" if ctx.future(m) else "the past"
    if mod == "this":
        return _weekend(this_sat)
    if mod == "last":
        return _weekend(this_sat - timedelta(days=7))
    if mod == "next":
        return _weekend(this_sat + timedelta(days=7))
    if mod in ("this coming", "coming"):
        return _weekend(today + timedelta(days=(5 - today.weekday()) % 7))
    # the past / this past: most recent Saturday strictly before today
    return _weekend(today - timedelta(days=(today.weekday() - 5) % 7 or 7))


def _r_ago(m: re.Match[str], ctx: _Ctx) -> _Res:
    return _shift(ctx, _unit_name(m.group("unit")), -_number(m.group("n")))


def _r_later(m: re.Match[str], ctx: _Ctx) -> _Res:
    return _shift(ctx, _unit_name(m.group("unit")), _number(m.group("n")))


def _r_in(m: re.Match[str], ctx: _Ctx) -> _Res | None:
    """``in N units``, unless it reads as a duration ("built in a day", "not in years")."""
    unit = _unit_name(m.group("unit"))
    if unit == "day" and m.group("n").casefold() in ("a", "one"):
        return None
    if ctx.duration(m):
        return None
    return _shift(ctx, unit, _number(m.group("n")))


def _r_rolling(m: re.Match[str], ctx: _Ctx) -> _Res:
    n = _number(m.group("n")) if m.group("n") else 1
    unit = _unit_name(m.group("unit"))
    now = ctx.now
    if unit == "hour":
        end = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        return _Res(end - timedelta(hours=n), end, "hour", True)
    today = ctx.today
    if unit in ("day", "week"):
        start = today - timedelta(days=n * (7 if unit == "week" else 1))
    elif unit == "month":
        start = _add_months(today, -n)
    else:
        start = _add_months(today, -n * (12 if unit == "year" else 120))
    gran: Granularity = unit  # type: ignore[assignment]
    return _Res(_mid(start), _mid(today + timedelta(days=1)), gran, True)


def _r_other_day(m: re.Match[str], ctx: _Ctx) -> _Res:
    return _days(ctx.today - timedelta(days=7), 7, "week")


def _r_iso(m: re.Match[str], ctx: _Ctx) -> _Res:
    d = date(int(m.group("y")), int(m.group("m")), int(m.group("d")))
    return _days(d, relative=False)


def _r_day_month(m: re.Match[str], ctx: _Ctx, strict: bool = False) -> _Res | None:
    month = _MONTHS[m.group("mon").casefold()]
    day = int(m.group("d"))
    if m.group("y"):
        if not _may_ok(m, ctx, strict=False):
            return None
        return _days(date(int(m.group("y")), month, day), relative=False)
    if not _may_ok(m, ctx, strict=strict):
        return None
    return _days(_recent_date(ctx, month, day, ctx.future(m)))


def _r_day_month_strict(m: re.Match[str], ctx: _Ctx) -> _Res | None:
    """``7 May``: after a bare number (no ``the``, ordinal or ``of``) "may" may be the modal."""
    if m.group("the") or m.group("ord") or m.group("of"):
        month = _MONTHS[m.group("mon").casefold()]
        year = m.group("y")
        if year:
            return _days(date(int(year), month, int(m.group("d"))), relative=False)
        return _days(_recent_date(ctx, month, int(m.group("d")), ctx.future(m)))
    return _r_day_month(m, ctx, strict=True)


def _r_month_year(m: re.Match[str], ctx: _Ctx) -> _Res | None:
    if not _may_ok(m, ctx, strict=False):
        return None
    r = _month(_month_index(int(m.group("y")), _MONTHS[m.group("mon").casefold()]), relative=False)
    return _part_of_month(r, m.group("mod"))


def _r_part_of_rel_year(m: re.Match[str], ctx: _Ctx) -> _Res | None:
    """"in March last year", "the summer of next year", "last year in June": a month or season of
    the year before, of or after the reference."""
    k = "" if m.group("rel") is not None else "2"  # month or season first; else the year first ("last year in June")
    y = ctx.today.year + {"last": -1, "this": 0, "next": 1}[m.group(f"rel{k}").casefold()]
    mon = m.group(f"mon{k}")
    if mon is None:
        return _season(m.group(f"s{k}").casefold(), y)
    if not k and not _may_ok(m, ctx, strict=m.group("pre") is None):
        return None
    return _part_of_month(_month(_month_index(y, _MONTHS[mon.casefold()])), m.group(f"mod{k}"))


def _part_of_month(r: _Res, mod: str | None) -> _Res:
    if not mod:
        return r
    mod = mod.casefold()
    if mod == "early":
        return _Res(r.start, r.start + timedelta(days=10), r.granularity, r.relative)
    if mod == "mid":
        return _Res(r.start + timedelta(days=10), r.start + timedelta(days=20), r.granularity, r.relative)
    return _Res(r.start + timedelta(days=20), r.end, r.granularity, r.relative)


def _r_month(m: re.Match[str], ctx: _Ctx) -> _Res | None:
    pre = m.group("pre").casefold()
    if not _may_ok(m, ctx, strict=pre in ("this", "last", "next", "early", "mid", "late")):
        return None
    month = _MONTHS[m.group("mon").casefold()]
    today = ctx.today
    ref = _month_index(today.year, today.month)
    if pre == "last":
        idx = ref - ((today.month - month) % 12 or 12)
    elif pre == "next":
        idx = ref + ((month - today.month) % 12 or 12)
    elif pre == "this":
        idx = _month_index(today.year, month)
    elif pre != "since" and ctx.future(m):
        idx = ref + (month - today.month) % 12
    else:
        idx = ref - (today.month - month) % 12
    return _part_of_month(_month(idx), pre if pre in ("early", "mid", "late") else None)


def _r_year(m: re.Match[str], ctx: _Ctx) -> _Res:
    r = _year(int(m.group("y")), relative=False)
    pre = m.group("pre").casefold()
    y = r.start.year
    if pre == "early":
        return _Res(r.start, datetime(y, 5, 1), "year", False)
    if pre == "mid":
        return _Res(datetime(y, 5, 1), datetime(y, 9, 1), "year", False)
    if pre == "late":
        return _Res(datetime(y, 9, 1), r.end, "year", False)
    return r


def _this_season_year(name: str, today: date) -> int:
    if name == "winter" and today.month <= 2:
        return today.year - 1
    return today.year


def _r_season_rel(m: re.Match[str], ctx: _Ctx) -> _Res:
    name = m.group("s").casefold()
    mod = " ".join(m.group("mod").casefold().split())
    today = ctx.today
    y = _this_season_year(name, today)
    if mod == "this":
        return _season(name, y)
    if mod == "next":
        return _season(name, y + 1)
    if mod in ("this coming", "coming"):
        while _season(name, y).start.date() <= today:
            y += 1
        return _season(name, y)
    # last / this past / past: most recent one that ended on or before today
    while _season(name, y).end.date() > today:
        y -= 1
    return _season(name, y)


def _r_season_plain(m: re.Match[str], ctx: _Ctx) -> _Res:
    name = m.group("s").casefold()
    today = ctx.today
    y = _this_season_year(name, today)
    if m.group("pre").casefold() != "since" and ctx.future(m):
        while _season(name, y).end.date() <= today:
            y += 1
        while _season(name, y - 1).end.date() > today:
            y -= 1
        return _season(name, y)
    while _season(name, y).start.date() > today:
        y -= 1
    return _season(name, y)


def _r_season_abs(m: re.Match[str], ctx: _Ctx) -> _Res:
    return _season(m.group("s").casefold(), int(m.group("y")), relative=False)


def _r_decade(m: re.Match[str], ctx: _Ctx) -> _Res:
    if m.group("full"):
        y0 = int(m.group("full"))
        relative = False
    else:
        y0 = 2000 + int(m.group("short"))
        if y0 > ctx.today.year:
            y0 -= 100
        relative = True
    return _Res(datetime(y0, 1, 1), datetime(y0 + 10, 1, 1), "decade", relative)


# --------------------------------------------------------------------------- rule table

_Resolver = Callable[[re.Match[str], _Ctx], "_Res | None"]
_Gate = tuple[tuple[str, ...], ...]


class _Rule(NamedTuple):
    """A pattern, its resolver and its gate.

    The gate is a conjunction of disjunctions of substrings of the lower-cased
    text: the pattern cannot match unless, for every group, one of its strings
    occurs. It lets most turns skip most patterns. ``folded`` is the same pattern
    without IGNORECASE, run on the lower-cased text of ASCII turns (faster).
    """

    pattern: re.Pattern[str]
    folded: re.Pattern[str]
    resolver: _Resolver
    gate: _Gate


def _rule(pattern: str, resolver: _Resolver, *gate: tuple[str, ...]) -> _Rule:
    return _Rule(re.compile(pattern, _FLAGS), re.compile(pattern), resolver, gate)


_DIGITS = tuple("0123456789")
_MONTH_KEYS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_SEASON_KEYS = ("spring", "summer", "fall", "autumn", "winter")
_UNIT_KEYS = ("hour", "day", "week", "month", "year", "decade")
_ISO = r"(?<![0-9])(?P<y>[0-9]{4})(?P<sep>[-/])(?P<m>[0-9]{1,2})(?P=sep)(?P<d>[0-9]{1,2})(?![0-9])"
_DAY_MONTH = (
    rf"\b(?P<the>the\s+)?(?P<d>[0-9]{{1,2}})(?P<ord>st|nd|rd|th)?(?P<of>\s+of)?\s+(?P<mon>{_MONTH_ANY})\b\.?"
    rf"(?:,?\s+(?P<y>[0-9]{{4}})(?![0-9]))?"
)
_MONTH_DAY = (
    rf"\b(?P<mon>{_MONTH_ANY})\b\.?\s+(?:the\s+)?(?P<d>[0-9]{{1,2}})(?:st|nd|rd|th)?(?![0-9])\b"
    rf"(?:,?\s+(?P<y>[0-9]{{4}})(?![0-9]))?"
)
_MONTH_YEAR = (
    rf"\b(?:(?P<mod>early|mid|late)[\s-]+)?(?P<mon>{_MONTH_ANY})\b\.?,?\s+(?:of\s+)?"
    rf"(?P<y>[0-9]{{4}})(?![0-9])"
)
_MONTH_REL = (
    rf"\b(?P<pre>in|last|next|this|since|early|late|mid|until|till|by|during|from|around)[\s-]+"
    rf"(?P<mon>{_MONTH_FULL})\b(?!\s*,?\s*[0-9])"
)

def _part_of_year(k: str) -> str:
    """A month or season, its groups named ``mod{k}``, ``mon{k}`` and ``s{k}``."""
    return rf"(?:(?P<mod{k}>early|mid|late)[\s-]+)?(?:(?P<mon{k}>{_MONTH_FULL})|(?P<s{k}>{'|'.join(_SEASON_KEYS)}))"


_PART_REL_YEAR = (
    rf"\b(?:(?P<pre>in|during|over|since|by|until|till|around)\s+)?(?:the\s+)?{_part_of_year('')},?\s+(?:of\s+)?"
    rf"(?P<rel>last|this|next)\s+year\b"
    rf"|\b(?P<rel2>last|this|next)\s+year,?\s+(?P<pre2>in|during|over|around)\s+(?:the\s+)?{_part_of_year('2')}\b"
    r"(?!\s*,?\s*(?:the\s+)?[0-9])"
)
_YEAR_REL = rf"\b(?P<pre>in|since|during|until|till|by|from|around|circa|early|mid|late|the\s+year)[\s-]+{_YEAR}\b"
_DECADE = r"(?:\bthe\s+)?\b(?P<full>(?:1[89]|20)[0-9]0)'?s\b|\bthe\s+'?(?P<short>[0-9]0)'?s\b"
_NO_YEAR_AFTER = r"\b(?!\s+(?:of\s+)?[0-9])"
_WEEKEND = (
    r"\b(?:(?P<mod>last|this\s+past|the\s+past|this\s+coming|this|next|coming)"
    r"|(?:over|during|on|at|for)\s+the)\s+weekend\b"
)

# Order only breaks ties between equally long matches at the same offset.
_RULES: tuple[_Rule, ...] = (
    _rule(_ISO, _r_iso, _DIGITS, ("-", "/")),
    _rule(_DAY_MONTH, _r_day_month_strict, _DIGITS, _MONTH_KEYS),
    _rule(_MONTH_DAY, _r_day_month, _DIGITS, _MONTH_KEYS),
    _rule(_MONTH_YEAR, _r_month_year, _DIGITS, _MONTH_KEYS),
    _rule(_MONTH_REL, _r_month, _MONTH_KEYS),
    _rule(_PART_REL_YEAR, _r_part_of_rel_year, _MONTH_KEYS + _SEASON_KEYS, ("year",)),
    _rule(_YEAR_REL, _r_year, _DIGITS),
    _rule(_DECADE, _r_decade, ("0s", "0's")),
    _rule(rf"\b(?:(?P<e>early|mid|late)[\s-]+)?{_SEASON}(?:\s+of)?,?\s+{_YEAR}", _r_season_abs, _DIGITS, _SEASON_KEYS),
    _rule(
        rf"\b(?P<mod>last|this\s+past|past|this\s+coming|this|next|coming)\s+{_SEASON}{_NO_YEAR_AFTER}",
        _r_season_rel,
        _SEASON_KEYS,
    ),
    _rule(
        rf"\b(?P<pre>in|over|during|through|throughout|since|for)\s+(?:the\s+)?{_SEASON}{_NO_YEAR_AFTER}",
        _r_season_plain,
        _SEASON_KEYS,
    ),
    _rule(
        rf"\b(?:the\s+)?day\s+(?P<rel>before\s+yesterday|after\s+tomorrow)\b{_POD}\b",
        _r_day_two,
        ("yesterday", "tomorrow"),
    ),
    _rule(
        rf"\b(?:(?:earlier|later)\s+)?(?P<w>today|yesterday|tomorrow)\b{_POD}\b",
        _r_day_word,
        ("today", "yesterday", "tomorrow"),
    ),
    _rule(r"\btonight\b", _r_tonight, ("tonight",)),
    _rule(r"\blast\s+night\b", _r_last_night, ("night",)),
    _rule(r"\bthis\s+(?P<pod>morning|afternoon|evening)\b", _r_this_pod, ("morning", "afternoon", "evening")),
    _rule(
        rf"{_NOT_HABIT}\b(?:(?P<mod>last|this\s+past|this\s+coming|this|next|coming|on)\s+)?{_WD}\b{_POD}\b"
        rf"{_NOT_HABIT_AFTER}",
        _r_weekday,
        ("day",),
    ),
    _rule(
        r"(?<!\bthe )\b(?P<mod>last|this|next|(?:earlier|later)\s+this)\s+(?P<unit>week|month|year)\b",
        _r_period,
        ("week", "month", "year"),
    ),
    _rule(
        r"\bthe\s+(?P<unit>week|weekend|month|year)\s+(?P<rel>before\s+last|after\s+next)\b",
        _r_period_two,
        ("before", "after"),
        ("week", "month", "year"),
    ),
    _rule(_WEEKEND, _r_weekend, ("weekend",)),
    _rule(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", _r_ago, ("ago",), _UNIT_KEYS),
    _rule(rf"\bin\s+{_NUM}\s+{_UNIT}\b", _r_in, ("in",), _UNIT_KEYS),
    _rule(rf"\b{_NUM}\s+{_UNIT}\s+from\s+now\b", _r_later, ("now",), _UNIT_KEYS),
    _rule(rf"\b(?:the|this)\s+past\s+(?:{_NUM}\s+)?{_UNIT}\b", _r_rolling, ("past",), _UNIT_KEYS),
    _rule(rf"\bthe\s+last\s+{_NUM}\s+{_UNIT}\b", _r_rolling, ("last",), _UNIT_KEYS),
    _rule(r"\bthe\s+other\s+day\b", _r_other_day, ("other",)),
)


# --------------------------------------------------------------------------- public API


def _attach(naive: datetime, tz: tzinfo) -> datetime:
    localize = getattr(tz, "localize", None)  # pytz zones need localize()
    if callable(localize):
        return localize(naive)  # type: ignore[no-any-return]
    return naive.replace(tzinfo=tz)


def resolve_time_expressions(text: str, reference: datetime) -> list[TimeMention]:
    """Find the time expressions in ``text`` and resolve them against ``reference``.

    Matches never overlap: where candidates overlap the longest wins (then the
    earliest). Results are in text order. See the module docstring for the rules
    applied to ambiguous expressions.

    Args:
        text: The text of one turn.
        reference: When the turn was said; must be timezone-aware. Results use its tzinfo.

    Returns:
        The mentions, in text order; empty if there are none.

    Raises:
        InvalidInputError: If ``text`` is not a string, or ``reference`` is not a
            timezone-aware datetime.

    Example:
        >>> from datetime import datetime, timezone
        >>> ref = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)  # Monday
        >>> for m in resolve_time_expressions("Last Friday and two weeks ago; may I ask?", ref):
        ...     print(m.text, m.start.date(), m.end.date(), m.granularity, m.span)
        Last Friday 2023-05-05 2023-05-06 day (0, 11)
        two weeks ago 2023-04-24 2023-05-01 week (16, 29)
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
    if not isinstance(reference, datetime):
        raise InvalidInputError(f"reference must be a timezone-aware datetime, got {type(reference).__name__}")
    tz = reference.tzinfo
    if tz is None or reference.utcoffset() is None:
        raise InvalidInputError(
            f"reference {reference.isoformat()} is naive; pass a timezone-aware datetime "
            "(e.g. datetime(..., tzinfo=timezone.utc))"
        )
    if not text:
        return []
    ctx = _Ctx(text, reference.replace(tzinfo=None))
    # ASCII text keeps its length when lower-cased: match case-sensitive patterns on
    # the lower-cased copy (faster); otherwise match IGNORECASE patterns on the text.
    ascii_text = text.isascii()
    low = text.lower() if ascii_text else text.casefold()
    candidates: list[tuple[int, int, int, _Res]] = []
    for priority, rule in enumerate(_RULES):
        if not all(any(key in low for key in group) for group in rule.gate):
            continue
        matches = rule.folded.finditer(low) if ascii_text else rule.pattern.finditer(text)
        for m in matches:
            if m.end() == m.start():
                continue
            try:
                res = rule.resolver(m, ctx)
            except (ValueError, OverflowError, KeyError, IndexError):
                continue  # impossible date (31 February, year 0, ...) or unknown word
            if res is not None and res.start < res.end:
                candidates.append((m.start(), m.end(), priority, res))
    if not candidates:
        return []
    # longest first, then leftmost, then rule order; keep those that overlap nothing kept
    candidates.sort(key=lambda c: (c[0] - c[1], c[0], c[2]))
    starts: list[int] = []  # kept intervals, sorted and disjoint
    ends: list[int] = []
    kept: list[_Res] = []
    for s, e, _, res in candidates:
        i = bisect_right(starts, s)
        if (i and ends[i - 1] > s) or (i < len(starts) and starts[i] < e):
            continue
        starts.insert(i, s)
        ends.insert(i, e)
        kept.insert(i, res)
    mentions = []
    for s, e, res in zip(starts, ends, kept, strict=True):
        try:
            start, end = _attach(res.start, tz), _attach(res.end, tz)
        except (ValueError, OverflowError):
            continue
        mentions.append(TimeMention(text[s:e], start, end, res.granularity, (s, e), res.relative))
    return mentions


def _render(m: TimeMention) -> str:
    start, end = m.start, m.end
    if m.granularity in ("hour", "part_of_day"):
        return start.date().isoformat()
    first = start.date()
    last = (end - timedelta(microseconds=1)).date()
    on_midnights = start.timetz().replace(tzinfo=None) == end.timetz().replace(tzinfo=None)
    if first == last:
        return first.isoformat()
    if on_midnights and first.day == 1 and (last + timedelta(days=1)).day == 1:
        if first.month == 1 and last.month == 12:
            if last.year == first.year:
                return str(first.year)
            if m.granularity == "decade" and first.year % 10 == 0 and last.year == first.year + 9:
                return f"{first.year}s"
        if first.year == last.year and first.month == last.month:
            return f"{first.year:04d}-{first.month:02d}"
    return f"{first.isoformat()} to {last.isoformat()}"


def normalize_text(text: str, reference: datetime) -> str:
    """Return ``text`` with each time expression followed by its resolution in brackets.

    Days render as ``YYYY-MM-DD``, whole months as ``YYYY-MM``, whole years as
    ``YYYY``, decades as ``YYYYs`` and other intervals as ``first to last`` (both
    days inclusive). An expression whose rendering equals its own text (an ISO
    date) is left alone. Useful to index turns so that lexical and dense retrieval
    see absolute dates.

    Args:
        text: The text of one turn.
        reference: When the turn was said; must be timezone-aware.

    Returns:
        The annotated text (``text`` itself if it has no time expression).

    Raises:
        InvalidInputError: As :func:`resolve_time_expressions`.

    Example:
        >>> from datetime import datetime, timezone
        >>> ref = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
        >>> normalize_text("I went yesterday", ref)
        'I went yesterday [2023-05-07]'
        >>> normalize_text("Back in May 2022 and over the weekend.", ref)
        'Back in May 2022 [2022-05] and over the weekend [2023-05-06 to 2023-05-07].'
    """
    mentions = resolve_time_expressions(text, reference)
    if not mentions:
        return text
    parts: list[str] = []
    pos = 0
    for m in mentions:
        rendered = _render(m)
        parts.append(text[pos : m.span[1]])
        if rendered != m.text:
            parts.append(f" [{rendered}]")
        pos = m.span[1]
    parts.append(text[pos:])
    return "".join(parts)

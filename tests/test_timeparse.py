"""Tests of the rule-based time-expression resolver."""

from __future__ import annotations

import doctest
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_cog import timeparse as timeparse_module
from langmem_cog.errors import InvalidInputError
from langmem_cog.timeparse import TimeMention, normalize_text, resolve_time_expressions

#: Monday 8 May 2023, 13:56 UTC (a LoCoMo-style session timestamp).
REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
SUNDAY = datetime(2023, 5, 14, 10, 0, tzinfo=UTC)
FRIDAY = datetime(2023, 5, 12, 9, 0, tzinfo=UTC)
JANUARY = datetime(2024, 1, 15, 12, 0, tzinfo=UTC)
OCTOBER = datetime(2023, 10, 20, 12, 0, tzinfo=UTC)
DECEMBER = datetime(2022, 12, 31, 23, 0, tzinfo=UTC)
LEAP = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)

# (sentence, reference, expected mention text, start, end (exclusive), granularity)
CASES = [
    # days
    ("I went to a support group yesterday.", REF, "yesterday", "2023-05-07", "2023-05-08", "day"),
    ("I'm free today", REF, "today", "2023-05-08", "2023-05-09", "day"),
    ("Earlier today I ran", REF, "Earlier today", "2023-05-08", "2023-05-09", "day"),
    ("see you tomorrow", REF, "tomorrow", "2023-05-09", "2023-05-10", "day"),
    ("It was the day before yesterday", REF, "the day before yesterday", "2023-05-06", "2023-05-07", "day"),
    ("the day after tomorrow works", REF, "the day after tomorrow", "2023-05-10", "2023-05-11", "day"),
    (
        "I leave the day after tomorrow evening",
        REF,
        "the day after tomorrow evening",
        "2023-05-10T18:00",
        "2023-05-11T00:00",
        "part_of_day",
    ),
    ("We met the other day", REF, "the other day", "2023-05-01", "2023-05-08", "week"),
    # parts of the day
    ("We're going out tonight", REF, "tonight", "2023-05-08T18:00", "2023-05-09T06:00", "part_of_day"),
    ("I ran this morning", REF, "this morning", "2023-05-08T06:00", "2023-05-08T12:00", "part_of_day"),
    ("Call me this afternoon", REF, "this afternoon", "2023-05-08T12:00", "2023-05-08T18:00", "part_of_day"),
    ("this evening we cook", REF, "this evening", "2023-05-08T18:00", "2023-05-09T00:00", "part_of_day"),
    ("I slept badly last night", REF, "last night", "2023-05-07T18:00", "2023-05-08T06:00", "part_of_day"),
    ("yesterday morning was cold", REF, "yesterday morning", "2023-05-07T06:00", "2023-05-07T12:00", "part_of_day"),
    ("Friday night was fun", REF, "Friday night", "2023-05-05T18:00", "2023-05-06T06:00", "part_of_day"),
    # weekdays
    ("I saw her last Friday", REF, "last Friday", "2023-05-05", "2023-05-06", "day"),
    ("It's due this Friday", REF, "this Friday", "2023-05-12", "2023-05-13", "day"),
    ("It's due next Friday", REF, "next Friday", "2023-05-12", "2023-05-13", "day"),
    ("I went hiking on Saturday", REF, "on Saturday", "2023-05-06", "2023-05-07", "day"),
    ("I'll go hiking on Saturday", REF, "on Saturday", "2023-05-13", "2023-05-14", "day"),
    ("How about Friday at 5?", REF, "Friday", "2023-05-12", "2023-05-13", "day"),
    ("On Sunday I'm going on a picnic", REF, "On Sunday", "2023-05-14", "2023-05-15", "day"),
    ("We talked last Monday", REF, "last Monday", "2023-05-01", "2023-05-02", "day"),
    ("this past Sunday was calm", REF, "this past Sunday", "2023-05-07", "2023-05-08", "day"),
    ("I saw her last Friday", FRIDAY, "last Friday", "2023-05-05", "2023-05-06", "day"),
    # weeks, weekends
    ("last week was busy", REF, "last week", "2023-05-01", "2023-05-08", "week"),
    ("this week is busy", REF, "this week", "2023-05-08", "2023-05-15", "week"),
    ("next week is busy", REF, "next week", "2023-05-15", "2023-05-22", "week"),
    ("the week before last", REF, "the week before last", "2023-04-24", "2023-05-01", "week"),
    ("later this week", REF, "later this week", "2023-05-08", "2023-05-15", "week"),
    ("last weekend we camped", REF, "last weekend", "2023-05-06", "2023-05-08", "weekend"),
    ("this weekend we camp", REF, "this weekend", "2023-05-13", "2023-05-15", "weekend"),
    ("next weekend we camp", REF, "next weekend", "2023-05-20", "2023-05-22", "weekend"),
    ("I painted over the weekend", REF, "over the weekend", "2023-05-06", "2023-05-08", "weekend"),
    ("the past weekend was great", REF, "the past weekend", "2023-05-06", "2023-05-08", "weekend"),
    ("the past weekend was great", SUNDAY, "the past weekend", "2023-05-13", "2023-05-15", "weekend"),
    ("last weekend was great", SUNDAY, "last weekend", "2023-05-06", "2023-05-08", "weekend"),
    ("the past week was hard", REF, "the past week", "2023-05-01", "2023-05-09", "week"),
    ("the past few days", REF, "the past few days", "2023-05-05", "2023-05-09", "day"),
    # months, years
    ("last month I moved", REF, "last month", "2023-04-01", "2023-05-01", "month"),
    ("this month I move", REF, "this month", "2023-05-01", "2023-06-01", "month"),
    ("next month I move", DECEMBER, "next month", "2023-01-01", "2023-02-01", "month"),
    ("last year I moved", REF, "last year", "2022-01-01", "2023-01-01", "year"),
    ("this year is good", REF, "this year", "2023-01-01", "2024-01-01", "year"),
    ("next year I retire", REF, "next year", "2024-01-01", "2025-01-01", "year"),
    # a month or season of a relative year
    ("we went in March last year", REF, "in March last year", "2022-03-01", "2022-04-01", "month"),
    ("Last year in March I visited Rome", REF, "Last year in March", "2022-03-01", "2022-04-01", "month"),
    ("May last year we met", REF, "May last year", "2022-05-01", "2022-06-01", "month"),
    ("in early June next year", REF, "in early June next year", "2024-06-01", "2024-06-11", "month"),
    ("the summer of last year was hot", REF, "the summer of last year", "2022-06-01", "2022-09-01", "season"),
    ("last year, in the fall, we moved", REF, "last year, in the fall", "2022-09-01", "2022-12-01", "season"),
    ("earlier this year I quit", REF, "earlier this year", "2023-01-01", "2023-05-09", "year"),
    ("the last 3 months", REF, "the last 3 months", "2023-02-08", "2023-05-09", "month"),
    # N units ago / in N units
    ("3 days ago I fell", REF, "3 days ago", "2023-05-05", "2023-05-06", "day"),
    ("two days ago I fell", REF, "two days ago", "2023-05-06", "2023-05-07", "day"),
    ("a few days ago I fell", REF, "a few days ago", "2023-05-05", "2023-05-06", "day"),
    ("few days ago I fell", REF, "few days ago", "2023-05-05", "2023-05-06", "day"),
    ("a week ago I fell", REF, "a week ago", "2023-05-01", "2023-05-08", "week"),
    ("a couple of weeks ago", REF, "a couple of weeks ago", "2023-04-24", "2023-05-01", "week"),
    ("a month ago I fell", REF, "a month ago", "2023-04-01", "2023-05-01", "month"),
    ("ten years ago I fell", REF, "ten years ago", "2013-01-01", "2014-01-01", "year"),
    ("2 hours ago", REF, "2 hours ago", "2023-05-08T11:00", "2023-05-08T12:00", "hour"),
    ("in two weeks we fly", REF, "in two weeks", "2023-05-22", "2023-05-29", "week"),
    ("in 3 days we fly", REF, "in 3 days", "2023-05-11", "2023-05-12", "day"),
    ("in a couple of months", REF, "in a couple of months", "2023-07-01", "2023-08-01", "month"),
    ("five days from now", REF, "five days from now", "2023-05-13", "2023-05-14", "day"),
    # months without a year
    ("We married in May", REF, "in May", "2023-05-01", "2023-06-01", "month"),
    ("We married in June", REF, "in June", "2022-06-01", "2022-07-01", "month"),
    ("We will marry in June", REF, "in June", "2023-06-01", "2023-07-01", "month"),
    ("We married last May", REF, "last May", "2022-05-01", "2022-06-01", "month"),
    ("We marry next May", REF, "next May", "2024-05-01", "2024-06-01", "month"),
    ("this May was rainy", REF, "this May", "2023-05-01", "2023-06-01", "month"),
    ("since March I run", REF, "since March", "2023-03-01", "2023-04-01", "month"),
    ("in early April", REF, "early April", "2023-04-01", "2023-04-11", "month"),
    ("mid-December", REF, "mid-December", "2022-12-11", "2022-12-21", "month"),
    ("on May 5 I flew", REF, "May 5", "2023-05-05", "2023-05-06", "day"),
    ("on the 20th of May I flew", REF, "the 20th of May", "2022-05-20", "2022-05-21", "day"),
    ("on Feb 29 I flew", LEAP, "Feb 29", "2024-02-29", "2024-03-01", "day"),
    # absolute dates
    ("on 7 May 2023", REF, "7 May 2023", "2023-05-07", "2023-05-08", "day"),
    ("on May 7, 2023", REF, "May 7, 2023", "2023-05-07", "2023-05-08", "day"),
    ("on March 3rd 2021", REF, "March 3rd 2021", "2021-03-03", "2021-03-04", "day"),
    ("Dec. 25, 2022 was fun", REF, "Dec. 25, 2022", "2022-12-25", "2022-12-26", "day"),
    ("logged 2023-05-07", REF, "2023-05-07", "2023-05-07", "2023-05-08", "day"),
    ("back in May 2022", REF, "May 2022", "2022-05-01", "2022-06-01", "month"),
    ("in 2022 we met", REF, "in 2022", "2022-01-01", "2023-01-01", "year"),
    ("since 2019", REF, "since 2019", "2019-01-01", "2020-01-01", "year"),
    ("in the 90s", REF, "the 90s", "1990-01-01", "2000-01-01", "decade"),
    ("in the 1980s", REF, "the 1980s", "1980-01-01", "1990-01-01", "decade"),
    # seasons
    ("last summer we sailed", REF, "last summer", "2022-06-01", "2022-09-01", "season"),
    ("last summer we sailed", OCTOBER, "last summer", "2023-06-01", "2023-09-01", "season"),
    ("this summer we sail", REF, "this summer", "2023-06-01", "2023-09-01", "season"),
    ("next summer we sail", REF, "next summer", "2024-06-01", "2024-09-01", "season"),
    ("last winter was cold", REF, "last winter", "2022-12-01", "2023-03-01", "season"),
    ("this winter is cold", JANUARY, "this winter", "2023-12-01", "2024-03-01", "season"),
    ("last fall we moved", REF, "last fall", "2022-09-01", "2022-12-01", "season"),
    ("last autumn we moved", REF, "last autumn", "2022-09-01", "2022-12-01", "season"),
    ("last spring we moved", REF, "last spring", "2022-03-01", "2022-06-01", "season"),
    ("in the summer of 2021", REF, "summer of 2021", "2021-06-01", "2021-09-01", "season"),
]


def _at(value: str, tz: object) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=tz)  # type: ignore[arg-type]


@pytest.mark.parametrize(("sentence", "ref", "expr", "start", "end", "granularity"), CASES)
def test_table(sentence: str, ref: datetime, expr: str, start: str, end: str, granularity: str) -> None:
    mentions = resolve_time_expressions(sentence, ref)
    assert [m.text for m in mentions] == [expr]
    m = mentions[0]
    assert m.start == _at(start, ref.tzinfo)
    assert m.end == _at(end, ref.tzinfo)
    assert m.granularity == granularity
    assert sentence[m.span[0] : m.span[1]] == expr
    assert m.start.tzinfo is ref.tzinfo and m.end.tzinfo is ref.tzinfo


def test_table_is_large() -> None:
    assert len(CASES) >= 45


@pytest.mark.parametrize(
    "sentence",
    [
        "may I ask you something?",
        "May I ask you something?",
        "Maya said hi",
        "this may take a while",
        "the top 5 may change",
        "You may be right",
        "It happened recently",
        "She is in her 90s",
        "Mayday! Mayday!",
        "the last week of the course",
        "the next month was harder",
        "a fall from the roof",
        "I like Sundays",
        "I climb every Tuesday",
        "each Friday we eat out",
        "How does Diego spend Tuesday and Thursday evenings now?",
        "Friday nights are for pizza",
        "call 555-1234 now",
        "Rome wasn't built in a day",
        "We haven't talked in a few days",
        "it may last years",
    ],
)
def test_no_false_positives(sentence: str) -> None:
    assert resolve_time_expressions(sentence, REF) == []


def test_relative_flag() -> None:
    got = {m.text: m.relative for m in resolve_time_expressions("yesterday, on 7 May 2023 and in May", REF)}
    assert got == {"yesterday": True, "7 May 2023": False, "in May": True}


def test_several_mentions_in_text_order_with_offsets() -> None:
    text = "Last Friday I hiked; two weeks ago I swam, and next summer I'll sail. May I ask?"
    mentions = resolve_time_expressions(text, REF)
    assert [m.text for m in mentions] == ["Last Friday", "two weeks ago", "next summer"]
    assert [m.span for m in mentions] == [(0, 11), (21, 34), (47, 58)]
    for m in mentions:
        assert text[m.span[0] : m.span[1]] == m.text


def test_a_month_with_a_day_is_not_the_month_of_a_relative_year() -> None:
    mentions = resolve_time_expressions("last year around October 8th we went", REF)
    assert [(m.text, m.start.date().isoformat()) for m in mentions] == [
        ("last year", "2022-01-01"), ("October 8th", "2022-10-08")]


def test_longest_match_wins() -> None:
    [m] = resolve_time_expressions("It was earlier this year", REF)
    assert m.text == "earlier this year"
    [m] = resolve_time_expressions("in May 2022", REF)
    assert m.text == "May 2022"
    [m] = resolve_time_expressions("last Friday night", REF)
    assert (m.text, m.granularity) == ("last Friday night", "part_of_day")


def test_case_insensitive() -> None:
    [m] = resolve_time_expressions("YESTERDAY", REF)
    assert m.start == datetime(2023, 5, 7, tzinfo=UTC)
    [m] = resolve_time_expressions("LAST WEEKEND", REF)
    assert m.start == datetime(2023, 5, 6, tzinfo=UTC)


def test_non_ascii_text_keeps_offsets() -> None:
    text = "Café 🎉 — yesterday ünd last week"
    mentions = resolve_time_expressions(text, REF)
    assert [m.text for m in mentions] == ["yesterday", "last week"]
    for m in mentions:
        assert text[m.span[0] : m.span[1]] == m.text


def test_uses_reference_timezone_and_local_date() -> None:
    ny = ZoneInfo("America/New_York")
    ref = datetime(2023, 3, 13, 0, 30, tzinfo=ny)  # the day after the spring DST change
    [m] = resolve_time_expressions("yesterday", ref)
    assert m.start == datetime(2023, 3, 12, tzinfo=ny) and m.end == datetime(2023, 3, 13, tzinfo=ny)
    assert m.end.astimezone(UTC) - m.start.astimezone(UTC) == timedelta(hours=23)
    # the same instant is a day later in Tokyo, and so is "yesterday"
    late = datetime(2023, 3, 12, 22, 0, tzinfo=ny)
    [m] = resolve_time_expressions("yesterday", late)
    assert m.start.date().isoformat() == "2023-03-11"
    [m] = resolve_time_expressions("yesterday", late.astimezone(ZoneInfo("Asia/Tokyo")))
    assert m.start.date().isoformat() == "2023-03-12"
    assert str(m.start.tzinfo) == "Asia/Tokyo"


def test_naive_reference_raises() -> None:
    with pytest.raises(InvalidInputError, match="naive"):
        resolve_time_expressions("yesterday", datetime(2023, 5, 8))
    with pytest.raises(ValueError):  # InvalidInputError is a ValueError
        normalize_text("yesterday", datetime(2023, 5, 8))


def test_bad_types_raise() -> None:
    with pytest.raises(InvalidInputError):
        resolve_time_expressions(None, REF)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        resolve_time_expressions("yesterday", "2023-05-08")  # type: ignore[arg-type]


def test_empty_text() -> None:
    assert resolve_time_expressions("", REF) == []
    assert normalize_text("", REF) == ""


def test_invalid_calendar_dates_are_skipped() -> None:
    assert resolve_time_expressions("on 2023-02-30 and Feb 30", REF) == []


def test_normalize_text() -> None:
    assert normalize_text("I went yesterday", REF) == "I went yesterday [2023-05-07]"
    assert (
        normalize_text("Last week, in June and next summer; logged 2023-05-07 in the 90s.", REF)
        == "Last week [2023-05-01 to 2023-05-07], in June [2022-06] and next summer"
        " [2024-06-01 to 2024-08-31]; logged 2023-05-07 in the 90s [1990s]."
    )
    assert normalize_text("last year and last night", REF) == "last year [2022] and last night [2023-05-07]"
    assert normalize_text("nothing here", REF) == "nothing here"


def test_mention_is_frozen() -> None:
    [m] = resolve_time_expressions("today", REF)
    assert isinstance(m, TimeMention)
    with pytest.raises(AttributeError):
        m.text = "x"  # type: ignore[misc]


def test_doctests() -> None:
    result = doctest.testmod(timeparse_module)
    assert result.attempted > 0 and result.failed == 0


FRAGMENTS = [
    "yesterday", "last Friday", "May", "may", "Maya", "in May", "7 May 2023", "2023-05-07", "2023-02-30",
    "last summer", "this winter", "the 90s", "the 20s", "3 days ago", "9999 years ago", "in 9999 years",
    "the past 9999 decades", "a few weeks ago", "next weekend", "over the weekend", "tonight", "Feb 29",
    "the day after tomorrow", "I'll", "will", ".", "\n", "on Sunday night", "earlier this year", "since 1900",
    "the other day", "in 2099", "mid-", "early", "ſunday", "İn May", "K", "0s", "'90s", "of", ",",
]  # fmt: skip

ZONES = [UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)), ZoneInfo("America/New_York")]

texts = st.lists(st.one_of(st.text(max_size=20), st.sampled_from(FRAGMENTS)), max_size=12).map(" ".join)


def _check(text: str, ref: datetime) -> None:
    mentions = resolve_time_expressions(text, ref)
    last_end = 0
    for m in mentions:
        assert m.start < m.end
        assert text[m.span[0] : m.span[1]] == m.text and m.text
        assert m.span[0] >= last_end  # non-overlapping, in text order
        last_end = m.span[1]
        assert m.start.tzinfo is ref.tzinfo
    normalize_text(text, ref)


@settings(max_examples=300, deadline=None)
@given(
    text=texts,
    ref=st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.sampled_from(ZONES)),
)
def test_property_never_raises(text: str, ref: datetime) -> None:
    _check(text, ref)


@settings(max_examples=200, deadline=None)
@given(text=texts, ref=st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-12))])))
def test_property_extreme_references(text: str, ref: datetime) -> None:
    _check(text, ref)

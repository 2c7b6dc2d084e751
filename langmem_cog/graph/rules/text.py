"""Self-contained text helpers of the rule-based extractor.

Small, pure functions that the stages of
:class:`~langmem_cog.graph.rules.extractor.RuleExtractor` share, none of which
knows about the extractor itself:

* text: :func:`prepare_text` (ASCII quotes and a lower-cased copy of equal length),
  :func:`split_sentences` and :func:`split_clauses` (spans, not strings), :func:`clean_np`,
  :func:`occurrences` (whole-token matches) and the place/title context tests
  :func:`is_place_context` and :func:`is_work_context`;
* words: :func:`lemma` (irregular table plus suffix rules) and :func:`gerund`;
* sentiment: :func:`sentiment`, VADER's compound score with one analyser shared
  by all threads and created on first use;
* time: :func:`resolve_times`, the time resolver behind a cheap pre-gate on the
  keys its rules need (:func:`_time_pregate`).

The tables these helpers read live in :mod:`langmem_cog.graph.rules.lexicon`; the
per-turn state the stages share is in :mod:`langmem_cog.graph.rules.context`.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from langmem_cog.graph.rules.lexicon import (
    ABBREV_RE,
    ADD_E_RE,
    BE_FROM,
    CLAUSE_SPLIT_RE,
    DOUBLE,
    IRREGULAR,
    LOC_PREV,
    MOTION_TO,
    NORMALIZE,
    SENT_END_RE,
    STEM_FIX,
    TOKEN_PUNCT,
    TRAIL_STRIP,
    WORK_PREV,
)
from langmem_cog.timeparse import TimeMention, resolve_time_expressions

__all__ = [
    "prepare_text", "fold", "split_sentences", "split_clauses", "clean_np", "occurrences", "is_place_context",
    "is_work_context", "lemma", "gerund", "sentiment", "resolve_times",
]

# =========================================================================== text


def prepare_text(raw: str) -> tuple[str, str]:
    """``(text, low)``: typographic quotes made ASCII, and a lower-cased copy of the same length."""
    text = raw.translate(NORMALIZE)
    low = text.lower()
    if len(low) != len(text):  # a few characters change length when lower-cased
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return text, low


def fold(word: str) -> str:
    """``word`` without its accents, the key the English gazetteers and stoplists are looked up with
    ("zürich" -> "zurich"); an ASCII word is returned as it is.

    Example:
        >>> fold("zürich"), fold("são paulo"), fold("paris")
        ('zurich', 'sao paulo', 'paris')
    """
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``[begin, end)`` (end includes the final punctuation), blanks skipped."""
    spans: list[tuple[int, int]] = []
    begin = 0
    for m in SENT_END_RE.finditer(text):
        if m.group().startswith(".") and ABBREV_RE.search(text, max(0, m.start() - 5), m.start() + 1):
            continue
        spans.append((begin, m.end()))
        begin = m.end()
    spans.append((begin, len(text)))
    out = []
    for b, e in spans:
        while b < e and text[b].isspace():
            b += 1
        while e > b and text[e - 1].isspace():
            e -= 1
        if e > b:
            out.append((b, e))
    return out


def split_clauses(low: str, b: int, e: int) -> list[tuple[int, int]]:
    """Clause spans of the sentence ``[b, e)`` of ``low``, split where ``CLAUSE_SPLIT_RE`` matches."""
    out = []
    for m in CLAUSE_SPLIT_RE.finditer(low, b, e):
        if m.start() > b:
            out.append((b, m.start()))
        b = m.end()
    if e > b:
        out.append((b, e))
    return out


def clean_np(name: str) -> str:
    """``name`` without the punctuation, quotes and blanks around it."""
    return name.strip(TRAIL_STRIP).strip()


def occurrences(low: str, word: str) -> Iterable[tuple[int, int]]:
    """Spans of ``word`` as a whole token of ``low``."""
    n, size = len(word), len(low)
    pos = low.find(word)
    while pos >= 0:
        end = pos + n
        if (pos == 0 or not (low[pos - 1].isalnum() or low[pos - 1] in TOKEN_PUNCT)) and (
            end >= size or not (low[end].isalnum() or low[end] in TOKEN_PUNCT)
        ):
            yield pos, end
        pos = low.find(word, pos + 1)


#: Words before "in" that make what follows a place beyond doubt ("live in Leith", "based in Oslo").
_STAY_IN = frozenset({"live", "lives", "lived", "living", "based", "stay", "stays", "stayed", "staying", "grew", "born"})
#: Words right before a name that make it a place beyond doubt ("visited Kyoto").
_VISIT = frozenset({"visit", "visits", "visited", "visiting", "explore", "explored", "exploring"})


def is_place_context(before: str, *, strong: bool = False) -> bool:
    """Whether the text right before a name makes it a place.

    With ``strong``, only contexts that leave no doubt: a motion to it ("going to", "moved to"), an
    origin ("is from"), a visit ("visited"), or a stay ("live in", "based in"); the weaker ones ("in",
    "on", "at") also precede products, teams and people.
    """
    prev = before.lower().split()[-3:]
    if not prev:
        return False
    last = prev[-1]
    prior = prev[-2] if len(prev) >= 2 else ""
    if last == "to" and prior in MOTION_TO or last == "from" and prior in BE_FROM:
        return True
    if strong:
        return last in _VISIT or (last == "in" and prior in _STAY_IN)
    return last in LOC_PREV


def is_work_context(before: str) -> bool:
    """Whether the text right before a name makes it a title."""
    prev = before.lower().split()[-3:]
    if not prev:
        return False
    if prev[-1] == "the" and len(prev) >= 2:
        prev = prev[:-1]
    return prev[-1] in WORK_PREV or (prev[-1] == "to" and len(prev) >= 2 and prev[-2].startswith("listen"))


# =========================================================================== words


def lemma(word: str) -> str:
    """A verb's lemma from a small irregular table and suffix rules (good enough for labels).

    >>> [lemma(w) for w in ("went", "adopted", "tried", "stopped", "loved", "hiking", "running", "painted", "visited")]
    ['go', 'adopt', 'try', 'stop', 'love', 'hike', 'run', 'paint', 'visit']
    """
    w = word.lower()
    if w in IRREGULAR:
        return IRREGULAR[w]
    if w.endswith("ied") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("ed") and len(w) > 3 and not w.endswith("eed"):
        stem = w[:-2]
    elif w.endswith("ing") and len(w) > 4:
        stem = w[:-3]
    else:
        return w
    if stem in STEM_FIX:
        return STEM_FIX[stem]
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsfz" and stem[-1] not in "aeiou":
        return stem[:-1]
    if ADD_E_RE.search(stem):
        return stem + "e"
    return stem


def gerund(verb: str) -> str:
    """``paint`` -> ``painting``, ``hike`` -> ``hiking``, ``run`` -> ``running``."""
    v = verb.lower()
    if v.endswith("ing") or not v.isalpha():
        return v
    if v in ("be", "see", "flee", "agree", "ski"):
        return v + "ing"
    if v.endswith("ie"):
        return v[:-2] + "ying"
    if v.endswith("e") and not v.endswith("ee"):
        return v[:-1] + "ing"
    if v in DOUBLE:
        return v + v[-1] + "ing"
    return v + "ing"


# =========================================================================== sentiment and time


_VADER: Any = None
_VADER_LOCK = threading.Lock()


def sentiment(text: str) -> float:
    """VADER's compound score of ``text`` (one analyser, created on first use, shared)."""
    global _VADER
    if _VADER is None:
        with _VADER_LOCK:
            if _VADER is None:
                from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

                analyzer = SentimentIntensityAnalyzer()
                analyzer.lexicon.update({"overrated": -1.5, "underrated": 1.0, "pointless": -1.5, "meh": -0.5})
                _VADER = analyzer
    return float(_VADER.polarity_scores(text)["compound"])


def _time_pregate() -> tuple[str, ...] | None:
    """Substrings one of which every time expression needs (from the resolver's own rule gates).

    Each rule of :mod:`langmem_cog.timeparse` only runs when every group of its gate
    has a key in the lower-cased text, so the union of one group per rule is a
    necessary condition: text containing none of these keys has no time expression
    and the (comparatively slow) resolver is skipped. Returns None (always resolve)
    if the resolver's rules cannot be read.
    """
    try:
        from langmem_cog import timeparse

        rules = timeparse._RULES  # noqa: SLF001 - read-only use of the resolver's gates
        common = {"-", "/", "in", "now", "past", "last", "other", "after", "before", "day", "may", "mar", "dec", "oct"}
        keys: set[str] = set()
        for rule in rules:
            gate = rule.gate
            if not gate:
                return None
            best = min(gate, key=lambda g: (sum(k in common for k in g), -min(len(k) for k in g)))
            keys.update(best)
        return tuple(sorted(keys, key=lambda k: (len(k), k)))
    except Exception:  # pragma: no cover - a changed resolver: no pre-gate
        return None


_TIME_KEYS = _time_pregate()


def resolve_times(text: str, low: str, reference: datetime) -> list[TimeMention]:
    """Time expressions of ``text`` resolved against ``reference`` (none if ``low`` has no pre-gate key)."""
    if _TIME_KEYS is not None and text.isascii() and not any(k in low for k in _TIME_KEYS):
        return []
    return resolve_time_expressions(text, reference)

"""Self-contained text helpers and per-turn state of the rule-based extractor.

Small, pure functions that the stages of
:class:`~langmem_cog.graph.rule_extractor.RuleExtractor` share, none of which
knows about the extractor itself:

* text: :func:`_prepare` (ASCII quotes and a lower-cased copy of equal length),
  :func:`_sentences` and :func:`_clauses` (spans, not strings), :func:`_clean_np`,
  :func:`_occurrences` (whole-token matches) and the place/title context tests
  :func:`_is_place_context` and :func:`_is_work_context`;
* words: :func:`_lemma` (irregular table plus suffix rules) and :func:`_gerund`;
* sentiment: :func:`_sentiment`, VADER's compound score with one analyser shared
  by all threads and created on first use;
* time: :func:`_resolve_times`, the time resolver behind a cheap pre-gate on the
  keys its rules need (:func:`_time_pregate`).

It also holds the per-turn working state: :class:`_Ctx` and the span records
:class:`_Concept` and :class:`_Person`. The tables these helpers read live in
:mod:`langmem_cog.graph.lexicon`.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from langmem_cog.graph.lexicon import (
    _ABBREV_RE,
    _ADD_E_RE,
    _BE_FROM,
    _CLAUSE_SPLIT_RE,
    _DOUBLE,
    _IRREGULAR,
    _LOC_PREV,
    _MOTION_TO,
    _NORMALIZE,
    _SENT_END_RE,
    _STEM_FIX,
    _TOKEN_PUNCT,
    _TRAIL_STRIP,
    _WORK_PREV,
)
from langmem_cog.timeparse import TimeMention, resolve_time_expressions

__all__ = [
    "_prepare", "_sentences", "_clauses", "_clean_np", "_occurrences", "_is_place_context", "_is_work_context",
    "_lemma", "_gerund", "_sentiment", "_time_pregate", "_resolve_times", "_Concept", "_Person", "_Ctx", "_fold",
]

# =========================================================================== text


def _prepare(raw: str) -> tuple[str, str]:
    """``(text, low)``: typographic quotes made ASCII, and a lower-cased copy of the same length."""
    text = raw.translate(_NORMALIZE)
    low = text.lower()
    if len(low) != len(text):  # a few characters change length when lower-cased
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return text, low


def _fold(word: str) -> str:
    """``word`` without its accents, the key the English gazetteers and stoplists are looked up with
    ("zürich" -> "zurich"); an ASCII word is returned as it is.

    Example:
        >>> _fold("zürich"), _fold("são paulo"), _fold("paris")
        ('zurich', 'sao paulo', 'paris')
    """
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def _sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``[begin, end)`` (end includes the final punctuation), blanks skipped."""
    spans: list[tuple[int, int]] = []
    begin = 0
    for m in _SENT_END_RE.finditer(text):
        if m.group().startswith(".") and _ABBREV_RE.search(text, max(0, m.start() - 5), m.start() + 1):
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


def _clauses(low: str, b: int, e: int) -> list[tuple[int, int]]:
    """Clause spans of the sentence ``[b, e)`` of ``low``, split where ``_CLAUSE_SPLIT_RE`` matches."""
    out = []
    for m in _CLAUSE_SPLIT_RE.finditer(low, b, e):
        if m.start() > b:
            out.append((b, m.start()))
        b = m.end()
    if e > b:
        out.append((b, e))
    return out


def _clean_np(name: str) -> str:
    """``name`` without the punctuation, quotes and blanks around it."""
    return name.strip(_TRAIL_STRIP).strip()


def _occurrences(low: str, word: str) -> Iterable[tuple[int, int]]:
    """Spans of ``word`` as a whole token of ``low``."""
    n, size = len(word), len(low)
    pos = low.find(word)
    while pos >= 0:
        end = pos + n
        if (pos == 0 or not (low[pos - 1].isalnum() or low[pos - 1] in _TOKEN_PUNCT)) and (
            end >= size or not (low[end].isalnum() or low[end] in _TOKEN_PUNCT)
        ):
            yield pos, end
        pos = low.find(word, pos + 1)


def _is_place_context(before: str) -> bool:
    """Whether the text right before a name makes it a place."""
    prev = before.lower().split()[-3:]
    if not prev:
        return False
    last = prev[-1]
    if last in _LOC_PREV:
        return True
    return len(prev) >= 2 and (last == "to" and prev[-2] in _MOTION_TO or last == "from" and prev[-2] in _BE_FROM)


def _is_work_context(before: str) -> bool:
    """Whether the text right before a name makes it a title."""
    prev = before.lower().split()[-3:]
    if not prev:
        return False
    if prev[-1] == "the" and len(prev) >= 2:
        prev = prev[:-1]
    return prev[-1] in _WORK_PREV or (prev[-1] == "to" and len(prev) >= 2 and prev[-2].startswith("listen"))


# =========================================================================== words


def _lemma(word: str) -> str:
    """A verb's lemma from a small irregular table and suffix rules (good enough for labels).

    >>> [_lemma(w) for w in ("went", "adopted", "tried", "stopped", "loved", "hiking", "running", "painted", "visited")]
    ['go', 'adopt', 'try', 'stop', 'love', 'hike', 'run', 'paint', 'visit']
    """
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w.endswith("ied") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("ed") and len(w) > 3 and not w.endswith("eed"):
        stem = w[:-2]
    elif w.endswith("ing") and len(w) > 4:
        stem = w[:-3]
    else:
        return w
    if stem in _STEM_FIX:
        return _STEM_FIX[stem]
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsfz" and stem[-1] not in "aeiou":
        return stem[:-1]
    if _ADD_E_RE.search(stem):
        return stem + "e"
    return stem


def _gerund(verb: str) -> str:
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
    if v in _DOUBLE:
        return v + v[-1] + "ing"
    return v + "ing"


# =========================================================================== sentiment and time


_VADER: Any = None
_VADER_LOCK = threading.Lock()


def _sentiment(text: str) -> float:
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


def _resolve_times(text: str, low: str, reference: datetime) -> list[TimeMention]:
    """Time expressions of ``text`` resolved against ``reference`` (none if ``low`` has no pre-gate key)."""
    if _TIME_KEYS is not None and text.isascii() and not any(k in low for k in _TIME_KEYS):
        return []
    return resolve_time_expressions(text, reference)


# =========================================================================== per-turn state


class _Concept(NamedTuple):
    """A concept found in the turn: name, kind, character span and priority (lower wins)."""
    name: str
    kind: str
    start: int
    end: int
    prio: int


class _Person(NamedTuple):
    """A person mentioned in the turn, with the character span of the mention."""
    name: str
    start: int
    end: int


class _Ctx:
    """Per-turn working state."""

    __slots__ = (
        "turn", "speaker", "addressee", "text", "low", "sents", "clauses", "times", "concepts", "persons",
        "prev_concepts", "prev_persons", "known", "pets", "pstarts", "words", "vocatives", "speakers", "pet_names",
    )  # fmt: skip

    def __init__(self, turn: Any, text: str, low: str, words: set[str], addressee: str | None, known: set[str],
                 pets: set[str], prev_concepts: list[str], prev_persons: list[str]) -> None:  # fmt: skip
        self.turn = turn
        self.speaker: str = turn.speaker
        self.addressee = addressee
        self.text = text
        self.low = low
        self.sents: list[tuple[int, int]] = []
        self.clauses: list[tuple[int, int]] = []
        self.times: list[TimeMention] = []
        self.concepts: list[_Concept] = []
        self.persons: list[_Person] = []
        self.known = known
        self.pets = pets
        self.prev_concepts = prev_concepts
        self.prev_persons = prev_persons
        self.pstarts: frozenset[int] = frozenset()
        self.words = words
        self.vocatives: set[int] = set()
        self.speakers: frozenset[str] = frozenset()
        self.pet_names: frozenset[str] = frozenset(p.lower() for p in pets)

"""Cheap per-candidate features for the first-stage fusion scorer.

A query's candidates are scored by the raw store (dense cosine, BM25) and, optionally,
by the CogMem operator loop (which turns it grounded, through which node types, and the
time window and names it routed). :func:`candidate_features` turns those into one row of
:data:`FEATURE_NAMES` per candidate. Everything here is a pure function of its inputs: no
model runs, no store is read.

Example:
    >>> from datetime import datetime, timedelta, timezone
    >>> from langmem_cog.records import make_turn
    >>> t0 = datetime(2023, 5, 8, tzinfo=timezone.utc)
    >>> turns = [make_turn(id=f"t{i}", namespace="doc", speaker=s, text=x, position=i,
    ...                    timestamp=t0 + timedelta(minutes=i))
    ...          for i, (s, x) in enumerate([("Leo", "I am allergic to shellfish."),
    ...                                      ("Maya", "Oh no, since when?"), ("Leo", "Since I was a kid.")])]
    >>> pool = CandidatePool(turns=turns, dense=np.array([0.8, 0.1, 0.3]), lexical=np.array([2.0, 0.0, 0.0]))
    >>> X = candidate_features(pool, "What is Leo allergic to?")
    >>> X.shape == (3, len(FEATURE_NAMES))
    True
    >>> X[:, FEATURE_NAMES.index("speaker_match")].tolist()
    [1.0, 0.0, 1.0]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

import numpy as np

from langmem_cog.errors import InvalidInputError
from langmem_cog.fusion import zscore, zscore_fuse
from langmem_cog.graph.provenance import TurnRecords
from langmem_cog.records import Turn

__all__ = ["CONTEXT_FEATURES", "FEATURE_NAMES", "CandidatePool", "GraphSignals", "candidate_features", "first_name",
           "name_tokens", "neighbour_max"]

FEATURE_NAMES: tuple[str, ...] = (
    "dense_z",          # z-scored cosine over the pool
    "lexical_z",        # z-scored BM25 over the pool
    "dense_rr",         # 1 / (1 + dense rank)
    "lexical_rr",       # 1 / (1 + BM25 rank)
    "lexical_zero",     # no query term in the turn
    "window1",          # best hybrid z of the same session's turns at distance 1
    "window2",          # best hybrid z of the same session's turns at distance <= 2
    "graph_grounded",   # the operator loop grounded this turn
    "graph_rr",         # 1 / (1 + its rank among grounded turns)
    "graph_event",      # grounded through an Event
    "graph_fact",       # grounded through a consolidated Fact
    "graph_claim",      # grounded through a Claim
    "graph_entity",     # grounded through a Person or Concept
    "in_window",        # said inside the question's routed time window
    "speaker_match",    # the speaker is named in the question
    "position",         # chronological position in the pool, 0 (oldest) .. 1 (newest)
    "log_len",          # log(1 + words)
    "is_question",      # the turn ends with a question mark
    # Added after the first shipped scorer was fitted; a scorer fitted without them gives them weight 0.
    "dense_window2",    # best dense z of the same session's turns at distance <= 2
    "lexical_window2",  # best BM25 z of the same session's turns at distance <= 2
    "session_best",     # best hybrid z in the turn's session (the turn included)
    "session_mean",     # mean hybrid z of the turn's session
    "session_rr",       # 1 / (1 + the turn's hybrid rank within its session)
    "grounded_near",    # a same-session neighbour (distance 1) was grounded by the operator loop
    "when_number",      # the question asks when / how long, and the turn holds a digit
    "when_time_word",   # the question asks when / how long, and the turn names a time (month, weekday, 'last', ...)
    "dense_x_lexical",  # z(dense) * z(BM25)
    # Answer-type matches (session 5): the question asks for a kind of answer and the turn holds one.
    "who_name",         # asks who, and the turn names someone other than the conversation's speakers
    "where_place",      # asks where, and the turn names a place ('in Paris', 'the beach', ...)
    "count_number",     # asks how many / much / often / old / long, and the turn holds a number
    "title_name",       # asks for a book, film, song, name, ..., and the turn quotes or names a title
    "like_preference",  # asks about likes or favourites, and the turn states one
    "why_reason",       # asks why, and the turn gives a reason ('because', 'so that', ...)
    "proper_overlap",   # share of the question's capitalised words (not speakers) found in the turn
    "bigram_overlap",   # log(1 + word bigrams shared by question and turn)
    # Context (sessions 6-7): the turn with the two previous turns of its session (langmem_cog.context),
    # embedded (session 6 held one previous turn) and, since session 7, scored by BM25.
    "context_z",        # z-scored cosine of the query and the turn's context vector (0 when the pool has none)
    "context_rr",       # 1 / (1 + rank by that cosine)
    "context_lex_z",    # z-scored BM25 of the query against the turn's context text (0 when the pool has none)
    "context_lex_rr",   # 1 / (1 + rank by that BM25)
    # Attribution (session 11): the graph's claims, against what the operator loop routed the question as.
    "opinion_record_q",  # the turn voices an opinion (holds a Claim) and the question asks for a record
    "opinion_belief_q",  # the turn voices an opinion and the question asks what someone thinks (BELIEF)
)

#: The features computed from ``CandidatePool.context`` and ``context_lexical`` (zero without them).
CONTEXT_FEATURES: tuple[str, ...] = ("context_z", "context_rr", "context_lex_z", "context_lex_rr")

_WORD = re.compile(r"[A-Za-z0-9']+")
_ASKS_TIME = re.compile(r"^\s*when\b|\b(what|which) (year|month|day|date|time|week)\b|\bhow long\b", re.I)
_TIME_WORD = re.compile(
    r"\b(yesterday|today|tomorrow|tonight|last|next|ago|recently|week|weekend|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|"
    r"august|september|october|november|december|(19|20)\d\d)\b",
    re.I,
)
_DIGIT = re.compile(r"\d")
# Answer types. A capitalised word that does not open a sentence (a name, a place, a title).
_CAPITAL = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")
_ASKS_WHO = re.compile(r"^\s*(who|whom|whose)\b", re.I)
_ASKS_WHERE = re.compile(r"\bwhere\b", re.I)
_ASKS_COUNT = re.compile(r"\bhow (many|much|often|old|long)\b", re.I)
_ASKS_TITLE = re.compile(r"\b(book|books|movie|movies|film|song|songs|show|band|game|games|name|title|artist|author|"
                         r"novel|series)\b", re.I)
_ASKS_LIKE = re.compile(r"\b(like|likes|enjoy|enjoys|favorite|favourite|love|loves|prefer|hobby|hobbies|interest|"
                        r"interested)\b", re.I)
_ASKS_WHY = re.compile(r"\bwhy\b", re.I)
_NUMBER = re.compile(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twice|once|dozen|couple|"
                     r"few|several|hundred)\b", re.I)
_PLACE = re.compile(r"\b(in|at|to|from|near|visited|visit|went)\s+(the\s+)?[A-Z][a-z]+|\b(city|country|park|beach|lake|"
                    r"mountain|museum|restaurant|cafe|school|town|trip|camping)\b")
_TITLE = re.compile(r"[\"“”]|\b[A-Z][a-z]+\s+[A-Z][a-z]+")
_LIKE = re.compile(r"\b(love|loved|like|liked|enjoy|enjoyed|favorite|favourite|fan of|passion|into)\b", re.I)
_REASON = re.compile(r"\b(because|since|so that|reason|due to|that's why|helps? me)\b", re.I)
_STOP = frozenset({
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "is", "are", "was", "were", "be",
    "been", "do", "does", "did", "what", "when", "where", "who", "why", "how", "which", "that", "this",
    "with", "about", "from", "by", "as", "it", "its", "his", "her", "their", "they", "he", "she", "you", "i",
    "my", "your", "me", "we", "our",
})


@dataclass
class CandidatePool:
    """A query's candidates with their raw-store scores (aligned sequences).

    Attributes:
        turns: The candidate turns.
        dense: Cosine similarity of each turn to the query.
        lexical: BM25 score of each turn.
        context: Cosine similarity of each turn's context vector (the turn with the previous turns of its
            session, :mod:`langmem_cog.context`) to the query; ``None`` leaves ``context_z`` and
            ``context_rr`` at zero.
        context_lexical: BM25 score of each turn's context text; ``None`` leaves ``context_lex_z`` and
            ``context_lex_rr`` at zero.
    """

    turns: Sequence[Turn]
    dense: np.ndarray
    lexical: np.ndarray
    context: np.ndarray | None = None
    context_lexical: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.dense = np.asarray(self.dense, dtype=np.float64)
        self.lexical = np.asarray(self.lexical, dtype=np.float64)
        if self.context is not None:
            self.context = np.asarray(self.context, dtype=np.float64)
        if self.context_lexical is not None:
            self.context_lexical = np.asarray(self.context_lexical, dtype=np.float64)
        n_context = len(self.turns) if self.context is None else len(self.context)
        n_context_lexical = len(self.turns) if self.context_lexical is None else len(self.context_lexical)
        if not (len(self.turns) == len(self.dense) == len(self.lexical) == n_context == n_context_lexical):
            raise InvalidInputError(
                f"candidate pool is misaligned: {len(self.turns)} turns, {len(self.dense)} dense, "
                f"{len(self.lexical)} lexical, {n_context} context and {n_context_lexical} context BM25 scores; "
                "pass one score of each per turn"
            )

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.turns]

    def hybrid(self, lexical_weight: float = 1.0) -> np.ndarray:
        """Plain hybrid search's score of every candidate: ``z(dense) + lexical_weight * z(BM25)``."""
        return zscore_fuse([self.dense, self.lexical], [1.0, lexical_weight])


@dataclass
class GraphSignals:
    """What the operator loop found for a query (all optional).

    Attributes:
        grounded: Turn ids the loop grounded, best first.
        via_types: Per grounded turn id, the node types that named it.
        window: The routed time window ``(start, end)`` (either may be ``None``), or ``None``.
        intent: The routed intent.
    """

    grounded: Sequence[str] = ()
    via_types: Mapping[str, Sequence[str]] = field(default_factory=dict)
    window: tuple[datetime | None, datetime | None] | None = None
    intent: str = ""
    #: Per turn id, the claims (with reconciled status) and events the graph derived from it
    #: (:func:`~langmem_cog.graph.provenance.turn_records`); empty when not collected.
    records: Mapping[str, TurnRecords] = field(default_factory=dict)

    @property
    def asks_current_belief(self) -> bool:
        """The question asks what someone thinks, with no past time window (so: what they think now)."""
        return self.intent == "BELIEF" and self.window is None

    @classmethod
    def from_state(cls, state: Mapping[str, object], records: Mapping[str, TurnRecords] | None = None) -> GraphSignals:
        """Signals from an operator-loop state (:class:`~langmem_cog.graph.loop.OperatorState`) and the
        graph's per-turn records."""
        evidence = state.get("evidence") or []
        grounded = [str(e["turn_id"]) for e in evidence]  # type: ignore[index, union-attr]
        via = {str(e["turn_id"]): list(e.get("via_types") or [e.get("node_type")]) for e in evidence}  # type: ignore[union-attr]
        window = None
        raw = state.get("time_window")
        if isinstance(raw, Sequence) and len(raw) == 2:
            window = tuple(datetime.fromisoformat(v) if v else None for v in raw)  # type: ignore[arg-type]
        return cls(grounded=grounded, via_types=via, window=window, intent=str(state.get("intent") or ""),  # type: ignore[arg-type]
                   records=dict(records or {}))


def _rank_recip(scores: np.ndarray) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    r = np.empty(len(scores), dtype=np.float64)
    r[order] = np.arange(len(scores))
    return 1.0 / (1.0 + r)


def _chrono_order(turns: Sequence[Turn]) -> list[int]:
    return sorted(range(len(turns)), key=lambda i: (turns[i].timestamp, turns[i].position, turns[i].id))


@lru_cache(maxsize=200_000)
def _static(text: str, speaker: str) -> tuple[float, float, str, float, float]:
    """Per-turn features that do not depend on the query: log length, question flag, first name,
    holds a digit, names a time."""
    first = first_name(speaker)
    return (math.log1p(len(_WORD.findall(text))), float(text.rstrip().endswith("?")), first,
            float(bool(_DIGIT.search(text))), float(bool(_TIME_WORD.search(text))))


def _bigrams(text: str) -> frozenset[tuple[str, str]]:
    words = [w.lower() for w in _WORD.findall(text)]
    return frozenset(zip(words, words[1:], strict=False))


#: The answer types a turn may hold, each found by one pattern (computed per turn text only when a
#: question asks for that type: a namespace's first query pays only for what it needs).
_TYPE_PATTERNS = {"place": _PLACE, "number": _NUMBER, "title": _TITLE, "like": _LIKE, "reason": _REASON}


@lru_cache(maxsize=400_000)
def _holds(kind: str, text: str) -> bool:
    return bool(_TYPE_PATTERNS[kind].search(text))


@lru_cache(maxsize=200_000)
def _capitals(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _CAPITAL.findall(text))


@lru_cache(maxsize=200_000)
def _lower(text: str) -> str:
    return text.lower()


@lru_cache(maxsize=200_000)
def _turn_bigrams(text: str) -> frozenset[tuple[str, str]]:
    return _bigrams(text)


def _answer_type_features(query: str, turns: Sequence[Turn], speakers: set[str]) -> np.ndarray:
    """The eight answer-type columns (``who_name`` .. ``bigram_overlap``) of a pool.

    Only the columns the question asks for are computed (most questions ask for one kind at most).
    """
    out = np.zeros((len(turns), 8))
    texts = [t.text for t in turns]
    if _ASKS_WHO.search(query):
        out[:, 0] = [bool(_capitals(x) - speakers) for x in texts]
    for j, (asks, kind) in enumerate(((_ASKS_WHERE, "place"), (_ASKS_COUNT, "number"), (_ASKS_TITLE, "title"),
                                      (_ASKS_LIKE, "like"), (_ASKS_WHY, "reason")), start=1):
        if asks.search(query):
            out[:, j] = [_holds(kind, x) for x in texts]
    proper = {w.lower() for w in _CAPITAL.findall(query)} - speakers
    if proper:
        out[:, 6] = [sum(p in _lower(x) for p in proper) / len(proper) for x in texts]
    qgrams = {g for g in _bigrams(query) if not (g[0] in _STOP and g[1] in _STOP)}
    if qgrams:
        out[:, 7] = np.log1p([len(qgrams & _turn_bigrams(x)) for x in texts])
    return out


def _session_stats(values: np.ndarray, turns: Sequence[Turn]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per turn: the best and the mean value of its session, and 1 / (1 + its rank in the session)."""
    n = len(turns)
    best, mean, rr = np.empty(n), np.empty(n), np.empty(n)
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(turns):
        groups.setdefault(t.session_id, []).append(i)
    for idx in groups.values():
        ix = np.asarray(idx)
        v = values[ix]
        best[ix], mean[ix] = v.max(), v.mean()
        rank = np.empty(len(ix))
        rank[np.argsort(-v, kind="stable")] = np.arange(len(ix))
        rr[ix] = 1.0 / (1.0 + rank)
    return best, mean, rr


def neighbour_max(values: np.ndarray, turns: Sequence[Turn], radius: int, order: Sequence[int] | None = None) -> np.ndarray:
    """Per turn, the best value among the same session's turns within ``radius`` places of it.

    Turns are put in chronological order (timestamp, position, id); the turn itself is excluded.
    A turn with no neighbour gets the pool's minimum.

    Example:
        >>> from datetime import datetime, timezone
        >>> from langmem_cog.records import make_turn
        >>> ts = datetime(2023, 1, 1, tzinfo=timezone.utc)
        >>> turns = [make_turn(id=f"t{i}", namespace="d", speaker="a", text="x", position=i, timestamp=ts,
        ...                    session_id="1" if i < 3 else "2") for i in range(4)]
        >>> neighbour_max(np.array([1.0, 5.0, 2.0, 9.0]), turns, 1).tolist()
        [5.0, 2.0, 5.0, 1.0]
    """
    n = len(turns)
    if n == 0:
        return np.zeros(0)
    floor = float(values.min())
    order = list(order) if order is not None else _chrono_order(turns)
    sess = np.array([turns[i].session_id for i in order], dtype=object)
    v = values[order]
    best = np.full(n, floor)
    for d in range(1, radius + 1):
        if n <= d:
            continue
        same_next = sess[:-d] == sess[d:]
        fwd = np.where(same_next, v[d:], floor)  # neighbour after
        bwd = np.where(same_next, v[:-d], floor)  # neighbour before
        best[:-d] = np.maximum(best[:-d], fwd)
        best[d:] = np.maximum(best[d:], bwd)
    out = np.empty(n)
    out[order] = best
    return out


def first_name(speaker: str) -> str:
    """The lower-cased first word of a speaker's name (``""`` for a blank one): the word a question
    must hold to name the speaker (see :func:`name_tokens`)."""
    return speaker.split()[0].lower() if speaker.strip() else ""


def name_tokens(query: str) -> set[str]:
    """The lower-cased words of a question, possessives also without their ``'s`` (a speaker is named
    when their first name is among them: "What is Leo's job?" names Leo)."""
    words = {w.lower().strip("'") for w in _WORD.findall(query)}
    return words | {w[:-2] for w in words if w.endswith("'s") and len(w) > 2}


def candidate_features(
    pool: CandidatePool, query: str, graph: GraphSignals | None = None, *, lexical_weight: float = 1.0
) -> np.ndarray:
    """The feature matrix of a pool: one row per candidate, columns :data:`FEATURE_NAMES`.

    Args:
        pool: The candidates and their raw scores.
        query: The question (for the speaker feature).
        graph: What the operator loop found; ``None`` leaves the graph features at zero.
        lexical_weight: BM25's weight in the hybrid score the neighbour window uses.

    Returns:
        A float64 array of shape ``(len(pool.turns), len(FEATURE_NAMES))``.
    """
    turns = pool.turns
    n = len(turns)
    X = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float64)
    if n == 0:
        return X
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    zd, zl = zscore(pool.dense), zscore(pool.lexical)
    hybrid = zd + lexical_weight * zl
    X[:, col["dense_z"]] = zd
    X[:, col["lexical_z"]] = zl
    X[:, col["dense_rr"]] = _rank_recip(pool.dense)
    X[:, col["lexical_rr"]] = _rank_recip(pool.lexical)
    X[:, col["lexical_zero"]] = (pool.lexical <= 0).astype(np.float64)
    order = _chrono_order(turns)
    X[:, col["window1"]] = neighbour_max(hybrid, turns, 1, order)
    X[:, col["window2"]] = neighbour_max(hybrid, turns, 2, order)
    words = name_tokens(query)
    rel = np.empty(n)
    rel[order] = np.arange(n) / max(n - 1, 1)
    X[:, col["position"]] = rel
    static = [_static(t.text, t.speaker) for t in turns]
    X[:, col["log_len"]] = [s[0] for s in static]
    X[:, col["is_question"]] = [s[1] for s in static]
    X[:, col["speaker_match"]] = [1.0 if s[2] and s[2] in words else 0.0 for s in static]
    X[:, col["dense_window2"]] = neighbour_max(zd, turns, 2, order)
    X[:, col["lexical_window2"]] = neighbour_max(zl, turns, 2, order)
    best, mean, rr = _session_stats(hybrid, turns)
    X[:, col["session_best"]], X[:, col["session_mean"]], X[:, col["session_rr"]] = best, mean, rr
    if _ASKS_TIME.search(query):
        X[:, col["when_number"]] = [s[3] for s in static]
        X[:, col["when_time_word"]] = [s[4] for s in static]
    X[:, col["dense_x_lexical"]] = zd * zl
    speakers = {s[2] for s in static if s[2]}
    X[:, col["who_name"] : col["bigram_overlap"] + 1] = _answer_type_features(query, turns, speakers)
    if pool.context is not None:
        X[:, col["context_z"]] = zscore(pool.context)
        X[:, col["context_rr"]] = _rank_recip(pool.context)
    if pool.context_lexical is not None:
        X[:, col["context_lex_z"]] = zscore(pool.context_lexical)
        X[:, col["context_lex_rr"]] = _rank_recip(pool.context_lexical)
    if graph is not None:
        rank = {tid: r for r, tid in enumerate(graph.grounded)}
        start, end = graph.window if graph.window else (None, None)
        for i, t in enumerate(turns):
            r = rank.get(t.id)
            if r is not None:
                X[i, col["graph_grounded"]] = 1.0
                X[i, col["graph_rr"]] = 1.0 / (1.0 + r)
                via = {str(v).lower() for v in graph.via_types.get(t.id, ())}
                X[i, col["graph_event"]] = float("event" in via)
                X[i, col["graph_fact"]] = float("fact" in via)
                X[i, col["graph_claim"]] = float("claim" in via)
                X[i, col["graph_entity"]] = float(bool(via & {"person", "concept"}))
            if graph.window is not None:
                ts = t.timestamp
                inside = (start is None or ts >= start) and (end is None or ts <= end)
                X[i, col["in_window"]] = float(inside)
        if rank:
            X[:, col["grounded_near"]] = neighbour_max(X[:, col["graph_grounded"]], turns, 1, order)
        if graph.records:
            opinion = np.array([bool((r := graph.records.get(t.id)) and r.claims) for t in turns], dtype=np.float64)
            X[:, col["opinion_belief_q" if graph.intent == "BELIEF" else "opinion_record_q"]] = opinion
    return X

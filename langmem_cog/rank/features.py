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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from langmem_cog.errors import InvalidInputError
from langmem_cog.fusion import zscore, zscore_fuse
from langmem_cog.graph.provenance import TurnRecords
from langmem_cog.records import Turn

if TYPE_CHECKING:
    from langmem_cog.graph.loop import LoopResult

__all__ = ["CONTEXT_FEATURES", "FEATURES", "FEATURE_NAMES", "Feature", "FeatureInputs", "CandidatePool", "Echo", "GraphSignals", "candidate_features", "first_name", "rank_recip",
           "name_tokens", "neighbour_max"]


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


@dataclass(frozen=True)
class Echo:
    """A later turn of an anchor's speaker, from another session, like the anchor
    (:func:`~langmem_cog.rank.updates.find_echoes`).

    Attributes:
        anchor: The anchor's turn id.
        turn: The echo's turn id.
        z: Its likeness to the anchor (the hybrid score of a search for the anchor's text).
        stance: Whether the learned stance reader (:class:`~langmem_cog.rank.stance.StanceModel`) reads
            the echo as a stance (``False`` where none applies: the stance lexicon still may).
    """

    anchor: str
    turn: str
    z: float
    stance: bool = False


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
        echoes: For a question about a state now, the best candidates' echoes: their speakers' most
            similar later turns of other sessions (:func:`~langmem_cog.rank.updates.find_echoes`).
        reactions: For a question about a named person's judgement, that person's turns most like the
            best candidates someone else said (:func:`~langmem_cog.rank.updates.find_reactions`).
        state_match: For a question about one named person's state, how much more like a plain statement
            of that state each turn is (:meth:`~langmem_cog.rank.slots.StateStatements.match`; 0 for the
            other people's turns), else ``None``.
    """

    turns: Sequence[Turn]
    dense: np.ndarray
    lexical: np.ndarray
    context: np.ndarray | None = None
    context_lexical: np.ndarray | None = None
    echoes: tuple[Echo, ...] = ()
    reactions: tuple[Echo, ...] = ()
    state_match: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.dense = np.asarray(self.dense, dtype=np.float64)
        self.lexical = np.asarray(self.lexical, dtype=np.float64)
        if self.context is not None:
            self.context = np.asarray(self.context, dtype=np.float64)
        if self.context_lexical is not None:
            self.context_lexical = np.asarray(self.context_lexical, dtype=np.float64)
        n_context = len(self.turns) if self.context is None else len(self.context)
        n_context_lexical = len(self.turns) if self.context_lexical is None else len(self.context_lexical)
        if self.state_match is not None:
            self.state_match = np.asarray(self.state_match, dtype=np.float64)
            if len(self.state_match) != len(self.turns):
                raise InvalidInputError(f"candidate pool is misaligned: {len(self.turns)} turns and "
                                        f"{len(self.state_match)} state matches; pass one per turn")
        if not (len(self.turns) == len(self.dense) == len(self.lexical) == n_context == n_context_lexical):
            raise InvalidInputError(
                f"candidate pool is misaligned: {len(self.turns)} turns, {len(self.dense)} dense, "
                f"{len(self.lexical)} lexical, {n_context} context and {n_context_lexical} context BM25 scores; "
                "pass one score of each per turn"
            )

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.turns]

    @property
    def max_position(self) -> int:
        """The latest turn position in the pool (0 for none)."""
        return max((t.position for t in self.turns), default=0)

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
    def from_result(cls, result: LoopResult, records: Mapping[str, TurnRecords] | None = None) -> GraphSignals:
        """Signals from what the operator loop found (:class:`~langmem_cog.graph.loop.LoopResult`) and the
        graph's per-turn records."""
        return cls(grounded=result.turn_ids,
                   via_types={e.turn_id: list(e.via_types or (e.node_type,)) for e in result.evidence},
                   window=result.time_window, intent=result.intent, records=records if records is not None else {})

    @classmethod
    def from_state(cls, state: Mapping[str, Any], records: Mapping[str, TurnRecords] | None = None) -> GraphSignals:
        """Signals from a final operator-loop state (:class:`~langmem_cog.graph.loop.OperatorState`)."""
        from langmem_cog.graph.loop import LoopResult

        return cls.from_result(LoopResult.from_state(state), records)


def rank_recip(scores: np.ndarray) -> np.ndarray:
    """``1 / (1 + rank)`` of every score (rank 0 = highest; ties keep their order).

    Example:
        >>> rank_recip(np.array([0.2, 0.9, 0.5])).tolist()
        [0.3333333333333333, 1.0, 0.5]
    """
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


class FeatureInputs:
    """What one pool's features are computed from; each shared intermediate (z-scores, chronological
    order, per-turn text facts, session statistics, graph columns) is computed once, on first use, so
    a feature nobody asks for costs nothing.

    Args:
        pool: The candidates and their raw scores.
        query: The question.
        graph: What the operator loop found (``None``: the graph features are zero).
        lexical_weight: BM25's weight in the hybrid score the windows and session statistics use.
    """

    def __init__(self, pool: CandidatePool, query: str, graph: GraphSignals | None, lexical_weight: float) -> None:
        self.pool, self.query, self.graph, self.lexical_weight = pool, query, graph, lexical_weight
        self.turns = pool.turns
        self.n = len(pool.turns)

    def zeros(self) -> np.ndarray:
        return np.zeros(self.n)

    @cached_property
    def zd(self) -> np.ndarray:
        return zscore(self.pool.dense)

    @cached_property
    def zl(self) -> np.ndarray:
        return zscore(self.pool.lexical)

    @cached_property
    def hybrid(self) -> np.ndarray:
        return self.zd + self.lexical_weight * self.zl

    @cached_property
    def order(self) -> list[int]:
        return _chrono_order(self.turns)

    @cached_property
    def static(self) -> list[tuple[float, float, str, float, float]]:
        return [_static(t.text, t.speaker) for t in self.turns]

    @cached_property
    def speakers(self) -> set[str]:
        return {s[2] for s in self.static if s[2]}

    @cached_property
    def texts(self) -> list[str]:
        return [t.text for t in self.turns]

    @cached_property
    def session(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return _session_stats(self.hybrid, self.turns)

    def near(self, values: np.ndarray, radius: int) -> np.ndarray:
        return neighbour_max(values, self.turns, radius, self.order)

    @cached_property
    def graph_columns(self) -> dict[str, np.ndarray]:
        """The columns the operator loop's grounding fills (``graph_*``, ``in_window``)."""
        names = ("graph_grounded", "graph_rr", "graph_event", "graph_fact", "graph_claim", "graph_entity", "in_window")
        cols = {name: np.zeros(self.n) for name in names}
        graph = self.graph
        if graph is None:
            return cols
        rank = {tid: r for r, tid in enumerate(graph.grounded)}
        start, end = graph.window if graph.window else (None, None)
        for i, t in enumerate(self.turns):
            r = rank.get(t.id)
            if r is not None:
                cols["graph_grounded"][i] = 1.0
                cols["graph_rr"][i] = 1.0 / (1.0 + r)
                via = {str(v).lower() for v in graph.via_types.get(t.id, ())}
                cols["graph_event"][i] = float("event" in via)
                cols["graph_fact"][i] = float("fact" in via)
                cols["graph_claim"][i] = float("claim" in via)
                cols["graph_entity"][i] = float(bool(via & {"person", "concept"}))
            if graph.window is not None:
                ts = t.timestamp
                cols["in_window"][i] = float((start is None or ts >= start) and (end is None or ts <= end))
        return cols

    def opinion(self, belief: bool) -> np.ndarray:
        """1 for a turn that holds a Claim, when the question is (``belief``) or is not routed BELIEF."""
        graph = self.graph
        if graph is None or not graph.records or (graph.intent == "BELIEF") != belief:
            return self.zeros()
        return np.array([bool((r := graph.records.get(t.id)) and r.claims) for t in self.turns], dtype=np.float64)


def _position(x: FeatureInputs) -> np.ndarray:
    rel = np.empty(x.n)
    rel[x.order] = np.arange(x.n) / max(x.n - 1, 1)
    return rel


def _speaker_match(x: FeatureInputs) -> np.ndarray:
    words = name_tokens(x.query)
    return np.array([1.0 if s[2] and s[2] in words else 0.0 for s in x.static])


def _when(j: int) -> Callable[[FeatureInputs], np.ndarray]:
    def feature(x: FeatureInputs) -> np.ndarray:
        return np.array([s[j] for s in x.static]) if _ASKS_TIME.search(x.query) else x.zeros()
    return feature


def _who_name(x: FeatureInputs) -> np.ndarray:
    if not _ASKS_WHO.search(x.query):
        return x.zeros()
    return np.array([float(bool(_capitals(t) - x.speakers)) for t in x.texts])


def _answer(asks: re.Pattern[str], kind: str) -> Callable[[FeatureInputs], np.ndarray]:
    def feature(x: FeatureInputs) -> np.ndarray:
        return np.array([float(_holds(kind, t)) for t in x.texts]) if asks.search(x.query) else x.zeros()
    return feature


def _proper_overlap(x: FeatureInputs) -> np.ndarray:
    proper = {w.lower() for w in _CAPITAL.findall(x.query)} - x.speakers
    if not proper:
        return x.zeros()
    return np.array([sum(p in _lower(t) for p in proper) / len(proper) for t in x.texts])


def _bigram_overlap(x: FeatureInputs) -> np.ndarray:
    qgrams = {g for g in _bigrams(x.query) if not (g[0] in _STOP and g[1] in _STOP)}
    if not qgrams:
        return x.zeros()
    return np.log1p([len(qgrams & _turn_bigrams(t)) for t in x.texts])


def _context(attr: str, rank: bool) -> Callable[[FeatureInputs], np.ndarray]:
    def feature(x: FeatureInputs) -> np.ndarray:
        values = getattr(x.pool, attr)
        if values is None:
            return x.zeros()
        return rank_recip(values) if rank else zscore(values)
    return feature


def _graph(name: str) -> Callable[[FeatureInputs], np.ndarray]:
    return lambda x: x.graph_columns[name]


def _grounded_near(x: FeatureInputs) -> np.ndarray:
    if x.graph is None or not x.graph.grounded:
        return x.zeros()
    return x.near(x.graph_columns["graph_grounded"], 1)


@dataclass(frozen=True)
class Feature:
    """One column of the fusion scorer's input: its name, its family and the function computing it
    from a pool's :class:`FeatureInputs` (one value per candidate)."""

    name: str
    family: str
    compute: Callable[[FeatureInputs], np.ndarray]
    doc: str = ""


#: Every feature, in column order. To add one: write its function over :class:`FeatureInputs` (a new
#: shared intermediate goes there as a ``cached_property``) and append a :class:`Feature` here; a scorer
#: fitted before it gives it weight 0.
FEATURES: tuple[Feature, ...] = (
    Feature("dense_z", "raw", lambda x: x.zd, "z-scored cosine over the pool"),
    Feature("lexical_z", "raw", lambda x: x.zl, "z-scored BM25 over the pool"),
    Feature("dense_rr", "raw", lambda x: rank_recip(x.pool.dense), "1 / (1 + dense rank)"),
    Feature("lexical_rr", "raw", lambda x: rank_recip(x.pool.lexical), "1 / (1 + BM25 rank)"),
    Feature("lexical_zero", "raw", lambda x: (x.pool.lexical <= 0).astype(np.float64), "no query term in the turn"),
    Feature("window1", "window", lambda x: x.near(x.hybrid, 1), "best hybrid z of the same session's turns at distance 1"),
    Feature("window2", "window", lambda x: x.near(x.hybrid, 2), "best hybrid z of the same session's turns at distance <= 2"),
    Feature("graph_grounded", "graph", _graph("graph_grounded"), "the operator loop grounded this turn"),
    Feature("graph_rr", "graph", _graph("graph_rr"), "1 / (1 + its rank among grounded turns)"),
    Feature("graph_event", "graph", _graph("graph_event"), "grounded through an Event"),
    Feature("graph_fact", "graph", _graph("graph_fact"), "grounded through a consolidated Fact"),
    Feature("graph_claim", "graph", _graph("graph_claim"), "grounded through a Claim"),
    Feature("graph_entity", "graph", _graph("graph_entity"), "grounded through a Person or Concept"),
    Feature("in_window", "graph", _graph("in_window"), "said inside the question's routed time window"),
    Feature("speaker_match", "names", _speaker_match, "the speaker is named in the question"),
    Feature("position", "style", _position, "chronological position in the pool, 0 (oldest) .. 1 (newest)"),
    Feature("log_len", "style", lambda x: np.array([s[0] for s in x.static]), "log(1 + words)"),
    Feature("is_question", "style", lambda x: np.array([s[1] for s in x.static]), "the turn ends with a question mark"),
    Feature("dense_window2", "window", lambda x: x.near(x.zd, 2), "best dense z of the same session's turns at distance <= 2"),
    Feature("lexical_window2", "window", lambda x: x.near(x.zl, 2), "best BM25 z of the same session's turns at distance <= 2"),
    Feature("session_best", "session", lambda x: x.session[0], "best hybrid z in the turn's session (the turn included)"),
    Feature("session_mean", "session", lambda x: x.session[1], "mean hybrid z of the turn's session"),
    Feature("session_rr", "session", lambda x: x.session[2], "1 / (1 + the turn's hybrid rank within its session)"),
    Feature("grounded_near", "graph", _grounded_near, "a same-session neighbour (distance 1) was grounded by the loop"),
    Feature("when_number", "answer_type", _when(3), "the question asks when / how long, and the turn holds a digit"),
    Feature("when_time_word", "answer_type", _when(4), "asks when / how long, and the turn names a time"),
    Feature("dense_x_lexical", "raw", lambda x: x.zd * x.zl, "z(dense) * z(BM25)"),
    Feature("who_name", "answer_type", _who_name, "asks who, and the turn names someone other than the speakers"),
    Feature("where_place", "answer_type", _answer(_ASKS_WHERE, "place"), "asks where, and the turn names a place"),
    Feature("count_number", "answer_type", _answer(_ASKS_COUNT, "number"), "asks how many / much / ..., and the turn holds a number"),
    Feature("title_name", "answer_type", _answer(_ASKS_TITLE, "title"), "asks for a book, film, name, ..., and the turn names a title"),
    Feature("like_preference", "answer_type", _answer(_ASKS_LIKE, "like"), "asks about likes, and the turn states one"),
    Feature("why_reason", "answer_type", _answer(_ASKS_WHY, "reason"), "asks why, and the turn gives a reason"),
    Feature("proper_overlap", "names", _proper_overlap, "share of the question's capitalised words (not speakers) in the turn"),
    Feature("bigram_overlap", "names", _bigram_overlap, "log(1 + word bigrams shared by question and turn)"),
    Feature("context_z", "context", _context("context", False), "z-scored cosine of the query and the turn's context vector"),
    Feature("context_rr", "context", _context("context", True), "1 / (1 + rank by that cosine)"),
    Feature("context_lex_z", "context", _context("context_lexical", False), "z-scored BM25 against the turn's context text"),
    Feature("context_lex_rr", "context", _context("context_lexical", True), "1 / (1 + rank by that BM25)"),
    Feature("opinion_record_q", "attribution", lambda x: x.opinion(False), "the turn voices an opinion, the question asks for a record"),
    Feature("opinion_belief_q", "attribution", lambda x: x.opinion(True), "the turn voices an opinion, the question asks what someone thinks"),
)


#: The column names of :func:`candidate_features`, in order (from :data:`FEATURES`).
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)

#: The features computed from ``CandidatePool.context`` and ``context_lexical`` (zero without them).
CONTEXT_FEATURES: tuple[str, ...] = tuple(f.name for f in FEATURES if f.family == "context")


def candidate_features(
    pool: CandidatePool, query: str, graph: GraphSignals | None = None, *, lexical_weight: float = 1.0,
    only: Collection[str] | None = None,
) -> np.ndarray:
    """The feature matrix of a pool: one row per candidate, columns :data:`FEATURE_NAMES`.

    Args:
        pool: The candidates and their raw scores.
        query: The question (for the speaker feature).
        graph: What the operator loop found; ``None`` leaves the graph features at zero.
        lexical_weight: BM25's weight in the hybrid score the neighbour window uses.
        only: Compute these features only and leave the other columns at zero (a scorer's
            :attr:`~langmem_cog.rank.scorer.FusionScorer.active_features`: its scores are the same);
            ``None``: every feature.

    Returns:
        A float64 array of shape ``(len(pool.turns), len(FEATURE_NAMES))``.

    Raises:
        InvalidInputError: If ``only`` names an unknown feature.
    """
    if only is not None and (unknown := set(only) - set(FEATURE_NAMES)):
        raise InvalidInputError(f"unknown features {sorted(unknown)}: use names of FEATURE_NAMES")
    X = np.zeros((len(pool.turns), len(FEATURES)), dtype=np.float64)
    if not pool.turns:
        return X
    inputs = FeatureInputs(pool, query, graph, lexical_weight)
    for j, feature in enumerate(FEATURES):
        if only is None or feature.name in only:
            X[:, j] = feature.compute(inputs)
    return X

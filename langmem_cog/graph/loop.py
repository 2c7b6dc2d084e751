"""The CogMem operator loop as a LangGraph subgraph.

:func:`build_operator_graph` compiles a ``StateGraph`` that answers a question from a
namespace's PEC2F graph by chaining the pure operators of
:mod:`langmem_cog.graph.operators`::

    START -> route -> anchor -> (intersect | traverse)* -> ground -> check -> ... -> END

* ``route`` reads the intent, time window and names (:func:`~langmem_cog.graph.router.route`
  or an :class:`~langmem_cog.graph.router.LLMRouter`) and picks the operator plan of the intent;
* ``anchor`` finds entry nodes (Claims only for ``BELIEF``; Events, Facts and Claims outside
  the time window are dropped);
* ``traverse`` expands the best not-yet-expanded frontier nodes one hop along the intent's
  edge types (inside the window) to nodes not yet in the frontier, ``intersect`` (``COMPARE``) finds what the named entities share;
* ``ground`` turns the new frontier nodes into raw turns (``memory.store.get_turns``); hub
  nodes whose provenance holds more than ``hub_turns`` turns (a Person: every turn they
  speak in) are expanded but not grounded; a node naming ``n`` turns gives each its score
  times ``1 / (1 + ln n)``; with a time window, Events, Facts and Claims count by their own
  time and Persons and Concepts keep only the turns said inside it;
* ``check`` asks the sufficiency check (:class:`~langmem_cog.graph.router.RuleSufficiency` by
  default) and loops back to the next operator of the plan, or ends.

At most ``max_steps`` operator steps (``anchor``, ``traverse``, ``intersect``, ``ground``) run;
an expansion is started only when its grounding step fits in the budget too.

Plans (after ``anchor``):

=========  ==================================================  ===========================
intent     operators                                           traverse edge types
=========  ==================================================  ===========================
COMPARE    intersect, ground, traverse, ground                  LIKES, USES, PARTICIPATED_IN,
                                                               MENTIONS, HAS_ATTR
BELIEF     ground, traverse, ground, traverse, ground           CLAIMS, ABOUT, SUPERSEDES,
                                                               CONFLICTS_WITH, LIKES,
                                                               DISLIKES, MENTIONS
TEMPORAL   ground, traverse, ground, traverse, ground           NEXT, PARTICIPATED_IN,
                                                               MENTIONS, SUPPORTED_BY, HAS_ATTR
DETAIL     ground, traverse, ground, traverse, ground           record edges (no claim edges)
OTHER      ground, traverse, ground, traverse, ground           record edges (no claim edges)
=========  ==================================================  ===========================

The state (:class:`OperatorState`) is JSON data plus datetimes (``now`` and the routed
``time_window``), all of which LangGraph's checkpoint serializer saves and restores; the trace
holds the window as ISO strings. Evidence and trace items are dicts (:class:`EvidenceItem`,
:class:`TraceStep`), what a parent graph sharing the ``evidence`` key, a sufficiency check and a
checkpointer receive; :class:`LoopResult` (:meth:`GraphRetrieval.result`) is a run's typed view.
Every run starts afresh at ``route`` (a thread's earlier evidence is replaced, not merged).
Evidence is ranked by its node's score, ties broken by the turn's own cosine to the query
(``turn_score``).

Node functions have no broad exception handlers, so LangGraph's control-flow exceptions
(``GraphBubbleUp``: interrupts, parent commands) always reach the runtime.

Example:
    >>> from langmem_cog import CogMemConfig, load_locomo
    >>> from langmem_cog.memory import CogMemory
    >>> mem = CogMemory(CogMemConfig.preset("ephemeral"))  # doctest: +SKIP
    >>> conv = load_locomo("langmem_cog/data/sample_conversation.json")[0]  # doctest: +SKIP
    >>> mem.add_turns(conv.turns)  # doctest: +SKIP
    >>> loop = build_operator_graph(mem)  # doctest: +SKIP
    >>> out = loop.invoke({"query": "What is Leo allergic to?", "namespace": conv.sample_id})  # doctest: +SKIP
    >>> out["intent"], out["evidence"][0]["turn_id"]  # doctest: +SKIP
    ('OTHER', 'D1:18')
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

import networkx as nx
import numpy as np
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langmem_cog.checks import positive_int
from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.operators import (
    AnchorTexts,
    NodeVectors,
    TimeWindow,
    anchor,
    anchor_texts,
    ground,
    in_window,
    intersect,
    node_text,
    traverse,
)
from langmem_cog.graph.resolve import FUZZY_THRESHOLD, NAME_SIMILARITY, normalize_name
from langmem_cog.graph.revisions import RevisionCache
from langmem_cog.graph.router import (
    Route,
    Router,
    RuleSufficiency,
    Sufficiency,
    node_types,
)
from langmem_cog.graph.router import route as rule_route
from langmem_cog.graph.schema import RELATION_EDGES, EdgeType, NodeType

if TYPE_CHECKING:
    from langmem_cog.store import TurnStore

__all__ = [
    "Evidence",
    "EvidenceItem",
    "LoopMemory",
    "LoopResult",
    "OperatorState",
    "OperatorInput",
    "TraceStep",
    "PLANS",
    "EDGE_TYPES",
    "build_operator_graph",
    "operator_node",
    "GraphRetrieval",
    "graph_search",
]

logger = logging.getLogger(__name__)

_E = EdgeType
_CLAIM_EDGES = frozenset({_E.CLAIMS, _E.ABOUT, _E.SUPERSEDES, _E.CONFLICTS_WITH})
_RECORD_EDGES = frozenset(str(e) for e in EdgeType if e not in _CLAIM_EDGES)
_EXPAND = ["ground", "traverse", "ground", "traverse", "ground"]

#: Operators run after ``anchor``, per intent.
PLANS: dict[str, tuple[str, ...]] = {
    "COMPARE": ("intersect", "ground", "traverse", "ground"),
    "BELIEF": tuple(_EXPAND),
    "TEMPORAL": tuple(_EXPAND),
    "DETAIL": tuple(_EXPAND),
    "OTHER": tuple(_EXPAND),
}

#: Edge types ``traverse`` follows, per intent.
EDGE_TYPES: dict[str, frozenset[str]] = {
    "COMPARE": frozenset(str(e) for e in RELATION_EDGES),
    "BELIEF": frozenset(str(e) for e in (*_CLAIM_EDGES, _E.LIKES, _E.DISLIKES, _E.MENTIONS)),
    "TEMPORAL": frozenset(str(e) for e in (_E.NEXT, _E.PARTICIPATED_IN, _E.MENTIONS, _E.SUPPORTED_BY, _E.HAS_ATTR)),
    "DETAIL": _RECORD_EDGES,
    "OTHER": _RECORD_EDGES,
}

_ANCHOR_LIMIT = 15
#: Node texts of anchoring kept per (namespace, node-type filter), most recently used first out last.
_ANCHOR_TEXTS_KEPT = 64

#: Node types filtered by their own time when a window is set (Persons and Concepts are entry points
#: at ``anchor``; at ``ground`` they keep only the turns said inside the window).
_DATED = frozenset({NodeType.EVENT, NodeType.FACT, NodeType.CLAIM})


class OperatorInput(TypedDict, total=False):
    """What a run needs: the question, its namespace and (optionally) when it is asked.

    ``now`` is a datetime (naive: UTC) or an ISO date / datetime string; ``route`` reads it once.
    """

    query: str
    namespace: str
    now: datetime | str | None


class EvidenceItem(TypedDict):
    """One grounded turn in the state (JSON data; :class:`Evidence` is its typed view).

    Keys: ``turn_id``, ``speaker``, ``timestamp`` (ISO datetime), ``text``, ``turn_score`` (the
    turn's cosine to the question), ``via_types`` (types of every grounded node naming it, sorted),
    ``score`` (of the best node it came through), ``node`` (that node), ``node_type`` and ``step``
    (of that node's grounding).
    """

    turn_id: str
    speaker: str
    timestamp: str
    text: str
    turn_score: float
    via_types: list[str]
    score: float
    node: str
    node_type: str
    step: int


class TraceStep(TypedDict):
    """One operator step in the state's trace (JSON data).

    Keys: ``step`` (1-based), ``operator``, ``args`` (the operator's arguments, sets as sorted
    lists, the time window as ISO strings), ``n_results``, ``top`` (the first five nodes or turns)
    and ``ms``.
    """

    step: int
    operator: str
    args: dict[str, Any]
    n_results: int
    top: list[str]
    ms: float


class OperatorState(TypedDict, total=False):
    """The loop's state: JSON data plus the datetimes ``now`` and ``time_window``.

    Attributes:
        query: The question.
        namespace: The namespace whose graph and turns are searched.
        now: When the question is asked, as given (a datetime, naive = UTC, or an ISO date / datetime
            string; ``None``: now, UTC); only ``route`` reads it.
        intent: The routed intent.
        time_window: The routed ``(start, end)`` aware datetimes (end exclusive; either may be
            ``None``), or ``None``.
        entities: Names found in the question.
        plan: Operators still to run.
        frontier: ``[node, score]`` pairs found so far, best first.
        expanded: Nodes already used as ``traverse`` seeds.
        grounded: Nodes already grounded (or skipped as hubs).
        evidence: Grounded turns (:class:`EvidenceItem`), best first by ``score``, then
            ``turn_score``, then ``turn_id``.
        trace: One :class:`TraceStep` per operator step.
        steps: Operator steps run.
        done: Whether the loop has finished.
        reason: The last sufficiency verdict (or why the loop stopped).
    """

    query: str
    namespace: str
    now: datetime | str | None
    intent: str
    time_window: TimeWindow | None
    entities: list[str]
    plan: list[str]
    frontier: list[list[Any]]
    expanded: list[str]
    grounded: list[str]
    evidence: list[EvidenceItem]
    trace: list[TraceStep]
    steps: int
    done: bool
    reason: str


@dataclass(frozen=True)
class Evidence:
    """One grounded turn of a loop run: the typed view of an :class:`EvidenceItem` (``timestamp`` a
    datetime, ``via_types`` a tuple).

    Attributes:
        turn_id: The turn.
        score: The score of the best node it was grounded through.
        turn_score: The turn's cosine to the question (ties between equal node scores).
        node: That best node; ``node_type`` its type; ``step`` the step that grounded it.
        via_types: The types of every grounded node that names the turn.
        speaker, timestamp, text: The turn as stored (``timestamp`` ``None`` if the state item has none).
    """

    turn_id: str
    score: float
    turn_score: float
    node: str
    node_type: str
    step: int
    via_types: tuple[str, ...]
    speaker: str
    timestamp: datetime | None
    text: str

    @classmethod
    def from_state(cls, item: Mapping[str, Any]) -> Evidence:
        """An evidence item of the loop's state (an :class:`EvidenceItem`; missing keys read as empty), typed."""
        ts = item.get("timestamp")
        return cls(turn_id=str(item["turn_id"]), score=float(item.get("score", 0.0)),
                   turn_score=float(item.get("turn_score", 0.0)), node=str(item.get("node", "")),
                   node_type=str(item.get("node_type", "")), step=int(item.get("step", 0)),
                   via_types=tuple(str(v) for v in item.get("via_types") or ()), speaker=str(item.get("speaker", "")),
                   timestamp=datetime.fromisoformat(ts) if isinstance(ts, str) else ts, text=str(item.get("text", "")))


@dataclass(frozen=True)
class LoopResult:
    """What one run of the operator loop found (:meth:`GraphRetrieval.result`), typed.

    Attributes:
        intent: The routed intent.
        time_window: The routed ``(start, end)`` window (either may be ``None``), or ``None``.
        entities: Names found in the question.
        evidence: Grounded turns, best first.
        steps: Operator steps run.
        reason: The last sufficiency verdict (or why the loop stopped).
        trace: One :class:`TraceStep` per operator step.
    """

    intent: str
    time_window: TimeWindow | None
    entities: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    steps: int
    reason: str
    trace: tuple[TraceStep, ...]

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> LoopResult:
        """The result held by a final :class:`OperatorState`."""
        return cls(intent=str(state.get("intent") or ""), time_window=_window(state),
                   entities=tuple(state.get("entities") or ()),
                   evidence=tuple(Evidence.from_state(e) for e in state.get("evidence") or ()),
                   steps=int(state.get("steps") or 0), reason=str(state.get("reason") or ""),
                   trace=tuple(state.get("trace") or ()))

    @property
    def turn_ids(self) -> list[str]:
        """The grounded turns' ids, best first."""
        return [e.turn_id for e in self.evidence]


# ---------------------------------------------------------------------------- helpers
def _parse_now(value: Any) -> datetime | None:
    """``now`` from the state: ``None``, an aware datetime, or an ISO date / datetime (naive = UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.utcoffset() is not None else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInputError(f"now={value!r} is not an ISO date or datetime (e.g. '2023-11-12')") from None
        return dt if dt.utcoffset() is not None else dt.replace(tzinfo=UTC)
    raise InvalidInputError(f"now must be an ISO string, a datetime or None, got {type(value).__name__}")


def _at_offset(now: datetime) -> datetime:
    """``now`` with its zone read as the UTC offset at that instant (what its ISO form carries), so a
    datetime and its ISO string route alike."""
    return now if now.tzinfo is None or isinstance(now.tzinfo, timezone) else datetime.fromisoformat(now.isoformat())


def _pair(window: Sequence[datetime | None] | None) -> TimeWindow | None:
    """A routed window as a ``(start, end)`` tuple (``None`` for none)."""
    if not window:
        return None
    start, end = window
    return (start, end)


def _window(state: Mapping[str, Any]) -> TimeWindow | None:
    """The state's routed window (a checkpoint restores the pair as a list)."""
    return _pair(state.get("time_window"))


def _window_iso(window: TimeWindow | None) -> list[str | None] | None:
    """The window as ISO strings, for the trace (which stays JSON data)."""
    return None if window is None else [d.isoformat() if d is not None else None for d in window]


def _route_of(state: Mapping[str, Any]) -> Route:
    return Route(
        state.get("intent") or "OTHER",
        _window(state),
        tuple(state.get("entities") or ()),
        None,
    )


def _said_in(ts: Any, window: TimeWindow) -> bool:
    start, end = window
    return (start is None or ts >= start) and (end is None or ts < end)


def _specificity(G: nx.MultiDiGraph, node: Any) -> float:
    """``1 / (1 + ln n)`` for a node whose provenance holds ``n`` turns (1.0 for one turn)."""
    n = len(G.nodes[node].get("provenance", ()))
    return 1.0 / (1.0 + math.log(n)) if n > 1 else 1.0


def _ground_hits(
    G: nx.MultiDiGraph, scored: Sequence[tuple[Any, float]], window: TimeWindow | None
) -> tuple[list[tuple[str, float, Any]], dict[str, set[str]]]:
    """Grounded ``(turn_id, score, node)`` best first, and the node types naming each turn.

    A node naming many turns says less about each: its turns get its score / (1 + ln n).
    With a window, dated records (Events, Facts, Claims) count by their own time, and
    Persons and Concepts keep only the turns said inside it.
    """
    said = G.graph.get("turns") or {}
    best: dict[str, tuple[str, float, Any]] = {}
    via: dict[str, set[str]] = {}
    for node, score in scored:
        kind = G.nodes[node].get("type")
        dated = kind in _DATED
        if window is not None and dated and not in_window(G, node, window):
            continue
        for tid, s, n in ground(G, [(node, score * _specificity(G, node))]):
            if window is not None and not dated and not (tid in said and _said_in(said[tid], window)):
                continue
            via.setdefault(tid, set()).add(str(kind))
            if tid not in best or s > best[tid][1]:
                best[tid] = (tid, s, n)
    return sorted(best.values(), key=lambda h: (-h[1], h[0])), via


def _merge(frontier: Sequence[Sequence[Any]], new: Sequence[tuple[Any, float]]) -> list[list[Any]]:
    best: dict[Any, float] = {n: float(s) for n, s in frontier}
    for n, s in new:
        if s > best.get(n, -np.inf):
            best[n] = float(s)
    return [[n, s] for n, s in sorted(best.items(), key=lambda kv: (-kv[1], str(kv[0])))]


def _summary(args: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in args.items():
        if isinstance(v, frozenset | set):
            out[k] = sorted(str(x) for x in v)
        elif isinstance(v, tuple):
            out[k] = list(v)
        else:
            out[k] = v
    return out


class _Budget:
    """Whether the next operators of a plan fit in the step budget."""

    def __init__(self, max_steps: int) -> None:
        self.max_steps = max_steps

    def segment(self, plan: Sequence[str]) -> int:
        """Steps up to and including the next ``ground`` (the whole plan if none)."""
        for i, op in enumerate(plan):
            if op == "ground":
                return i + 1
        return len(plan)

    def fits(self, state: Mapping[str, Any]) -> bool:
        plan = state.get("plan") or []
        return bool(plan) and int(state.get("steps", 0)) + self.segment(plan) <= self.max_steps


class LoopMemory(Protocol):
    """What the operator loop reads of a memory (:class:`~langmem_cog.memory.CogMemory` is one).

    The loop depends on this shape, not on the memory class, so the memory module may build the loop
    without the two importing each other.
    """

    store: TurnStore
    node_vectors: NodeVectors

    def graph(self, namespace: str) -> nx.MultiDiGraph:
        """The namespace's graph (repaired from the raw store first if it lags)."""
        ...

    def graph_revision(self, namespace: str) -> int:
        """A number that grows with every change made in memory to the namespace's graph object."""
        ...

    @property
    def retrieval(self) -> GraphRetrieval:
        """The memory's shared :class:`GraphRetrieval`."""
        ...


class _Runtime:
    """What the node functions of one built graph share: the memory and caches."""

    def __init__(self, memory: LoopMemory, *, hub_turns: int, seeds_per_step: int, per_hop: int, per_entity: int) -> None:
        self.memory = memory
        self.hub_turns = hub_turns
        self.seeds_per_step = seeds_per_step
        self.per_hop = per_hop
        self.per_entity = per_entity
        self.vectors = memory.node_vectors  # warmed at ingest (CogMemory.add_turns)
        self._texts: RevisionCache[AnchorTexts] = RevisionCache(size=_ANCHOR_TEXTS_KEPT)

    def anchor_texts(self, namespace: str, G: nx.MultiDiGraph, types: Collection[str] | None) -> AnchorTexts:
        """:func:`~langmem_cog.graph.operators.anchor_texts` of the namespace's graph, made again only when the
        graph object or its revision changed (on a 30,000-turn graph, some 20 ms a query otherwise)."""
        return self._texts.get(namespace, G, self.memory.graph_revision(namespace), lambda: anchor_texts(G, types),
                               variant=None if types is None else frozenset(types))

    def query_vector(self, query: str) -> np.ndarray:
        """The query's normalised vector (cached by the store, which the raw scores share)."""
        return np.asarray(self.memory.store.embed_query(query), dtype=np.float32)

    def relevance(self, G: nx.MultiDiGraph, qv: np.ndarray) -> Callable[[Any], float]:
        def rel(node: Any) -> float:
            return float(self.vectors.vectors([node_text(G, node)])[0] @ qv)

        return rel


def _step(state: Mapping[str, Any], operator: str, args: Mapping[str, Any], results: Sequence[Any], t0: float,
          top: Sequence[Any]) -> tuple[int, list[TraceStep]]:
    steps = int(state.get("steps", 0)) + 1
    entry: TraceStep = {
        "step": steps,
        "operator": operator,
        "args": _summary(args),
        "n_results": len(results),
        "top": [str(x) for x in top[:5]],
        "ms": round((time.perf_counter() - t0) * 1000, 3),
    }
    return steps, [*(state.get("trace") or []), entry]


def _pop(plan: Sequence[str] | None, op: str) -> list[str]:
    plan = list(plan or [])
    if plan and plan[0] == op:
        plan.pop(0)
    return plan


def _resolve_entities(G: nx.MultiDiGraph, names: Sequence[str], anchored: Sequence[Sequence[Any]]) -> list[Any]:
    """Graph nodes of the names a question mentions (Persons first, then Concepts; a name matches the
    most similar node when :data:`~langmem_cog.graph.resolve.NAME_SIMILARITY` reaches
    :data:`~langmem_cog.graph.resolve.FUZZY_THRESHOLD`, as at ingest), topped up with anchored Persons."""
    found: list[Any] = []
    by_type: dict[str, list[tuple[Any, str]]] = {NodeType.PERSON: [], NodeType.CONCEPT: []}
    for n, d in G.nodes(data=True):
        kind = d.get("type")
        if kind in by_type:
            by_type[kind].append((n, normalize_name(str(d.get("name") or n))))
    for name in names:
        key = normalize_name(name)
        if not key:
            continue
        for kind in (NodeType.PERSON, NodeType.CONCEPT):
            best = max(((NAME_SIMILARITY(key, nm), str(n), n) for n, nm in by_type[kind]), default=None)
            if best is not None and best[0] >= FUZZY_THRESHOLD and best[2] not in found:
                found.append(best[2])
                break
    if len(found) < 2:
        for n, _ in anchored:
            if n in G and G.nodes[n].get("type") == NodeType.PERSON and n not in found:
                found.append(n)
            if len(found) >= 2:
                break
    return found


# ---------------------------------------------------------------------------- the graph
def build_operator_graph(
    memory: LoopMemory,
    *,
    router: Router | Callable[..., Route] | None = None,
    sufficiency: Sufficiency | Callable[..., Any] | None = None,
    max_steps: int = 5,
    checkpointer: Any = None,
    hub_turns: int = 12,
    seeds_per_step: int = 5,
    per_hop: int = 15,
    per_entity: int = 10,
    name: str = "cogmem_operators",
) -> CompiledStateGraph:
    """Compile the operator loop over a :class:`~langmem_cog.memory.CogMemory`.

    The compiled graph works alone (``.invoke({"query": ..., "namespace": ...})``), as a
    node of a parent ``StateGraph`` (shared keys ``query`` / ``namespace`` / ``evidence``,
    or through :func:`operator_node` for other key names), with a checkpointer, and
    ``.stream(..., stream_mode="updates")`` yields one update per node run. One node-vector
    cache (:class:`~langmem_cog.graph.operators.NodeVectors`) serves every run of the
    returned graph.

    Args:
        memory: The memory whose graphs and raw turns are searched.
        router: ``router(query, now) -> Route`` (default: the rule-based
            :func:`~langmem_cog.graph.router.route`; or an ``LLMRouter``).
        sufficiency: ``check(query, route, evidence) -> Verdict`` (default:
            :class:`~langmem_cog.graph.router.RuleSufficiency`; or an ``LLMSufficiency``).
        max_steps: At most this many operator steps per run (at least 2: anchor and ground).
        checkpointer: A LangGraph checkpointer (e.g. ``InMemorySaver()``); ``None`` when the
            graph is a subgraph of a parent that has one.
        hub_turns: Nodes with more provenance turns than this are expanded but not grounded.
        seeds_per_step: Frontier nodes a ``traverse`` step starts from.
        per_hop: ``traverse`` keeps at most this many new nodes.
        per_entity: ``intersect`` candidates per entity.
        name: The compiled graph's name (its node name in a parent).

    Returns:
        The compiled graph; its state is :class:`OperatorState`.

    Raises:
        InvalidInputError: If ``max_steps`` < 2 or a limit is not positive.

    Example:
        >>> import uuid
        >>> from datetime import datetime, timezone
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langmem_cog import CogMemConfig, make_turn
        >>> from langmem_cog.memory import CogMemory
        >>> mem = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
        >>> def make_turns(ns, texts, speaker):
        ...     return [make_turn(id=f"t{i}", namespace=ns, speaker=speaker, text=text, position=i,
        ...                       timestamp=datetime(2023, 5, 8, 12, i, tzinfo=timezone.utc))
        ...             for i, text in enumerate(texts)]
        >>> ns = "doc-loop-" + uuid.uuid4().hex[:8]
        >>> _ = mem.add_turns(make_turns(ns, ["I adopted a beagle named Pickle.", "Pickle loves the beach."], "Leo"))
        >>> out = build_operator_graph(mem).invoke({"query": "Who is Pickle?", "namespace": ns})
        >>> out["intent"], sorted(e["turn_id"] for e in out["evidence"])
        ('OTHER', ['t0', 't1'])
        >>> [t["operator"] for t in out["trace"]][:2]
        ['anchor', 'ground']
    """
    for label, value, low in (("max_steps", max_steps, 2), ("hub_turns", hub_turns, 1),
                              ("seeds_per_step", seeds_per_step, 1), ("per_hop", per_hop, 1),
                              ("per_entity", per_entity, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InvalidInputError(f"{label}={value!r} must be an integer >= {low}")
    router = router or rule_route
    sufficiency = sufficiency or RuleSufficiency()
    rt = _Runtime(memory, hub_turns=hub_turns, seeds_per_step=seeds_per_step, per_hop=per_hop,
                  per_entity=per_entity)
    budget = _Budget(max_steps)

    def route_node(state: OperatorState) -> dict[str, Any]:
        query = state.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError(f"the state's query must be a non-empty string, got {query!r}")
        namespace = state.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            raise InvalidInputError(f"the state's namespace must be a non-empty string, got {namespace!r}")
        r = router(query, _parse_now(state.get("now")))
        if not isinstance(r, Route):
            raise InvalidInputError(f"the router returned a {type(r).__name__}, not a Route")
        return {
            "intent": r.intent,
            "time_window": _pair(r.time_window),
            "entities": list(r.entities),
            "plan": list(PLANS[r.intent]),
            "frontier": [],
            "expanded": [],
            "grounded": [],
            "evidence": [],
            "trace": [],
            "steps": 0,
            "done": False,
            "reason": f"routed to {r.intent}" + (f" ({r.cue})" if r.cue else ""),
        }

    def anchor_node(state: OperatorState) -> dict[str, Any]:
        t0 = time.perf_counter()
        G = memory.graph(state["namespace"])
        intent = state["intent"]
        types = node_types(intent)
        window = _window(state)
        qv = rt.query_vector(state["query"])
        texts = rt.anchor_texts(state["namespace"], G, types)
        if window is None:
            found = anchor(G, state["query"], types=types, vectors=rt.vectors, query_vector=qv, limit=_ANCHOR_LIMIT,
                           texts=texts)
        else:  # look deeper, then keep the best entry points that fit the window
            found = anchor(G, state["query"], types=types, vectors=rt.vectors, query_vector=qv,
                           limit=3 * _ANCHOR_LIMIT, texts=texts)
            found = [(n, s) for n, s in found
                     if G.nodes[n].get("type") not in _DATED or in_window(G, n, window)][:_ANCHOR_LIMIT]
        args = {"types": sorted(types) if types else "all", "time_window": _window_iso(window)}
        steps, trace = _step(state, "anchor", args, found, t0, [n for n, _ in found])
        return {"frontier": _merge([], found), "steps": steps, "trace": trace}

    def traverse_node(state: OperatorState) -> dict[str, Any]:
        t0 = time.perf_counter()
        G = memory.graph(state["namespace"])
        intent = state["intent"]
        expanded = list(state.get("expanded") or [])
        done = set(expanded)
        seeds = [(n, s) for n, s in state.get("frontier") or [] if n not in done][: rt.seeds_per_step]
        edge_types = EDGE_TYPES[intent]
        window = _window(state)
        types = node_types(intent)
        qv = rt.query_vector(state["query"])
        known = [n for n, _ in state.get("frontier") or []]
        found = traverse(G, seeds, edge_types=edge_types, time_window=window, types=types, per_hop=rt.per_hop,
                         depth=1, relevance=rt.relevance(G, qv), exclude=known)
        args = {"seeds": [n for n, _ in seeds], "edge_types": edge_types, "time_window": _window_iso(window),
                "depth": 1, "per_hop": rt.per_hop}
        steps, trace = _step(state, "traverse", args, found, t0, [n for n, _ in found])
        return {
            "frontier": _merge(state.get("frontier") or [], found),
            "expanded": expanded + [n for n, _ in seeds],
            "plan": _pop(state.get("plan"), "traverse"),
            "steps": steps,
            "trace": trace,
        }

    def intersect_node(state: OperatorState) -> dict[str, Any]:
        t0 = time.perf_counter()
        G = memory.graph(state["namespace"])
        entities = _resolve_entities(G, state.get("entities") or [], state.get("frontier") or [])
        qv = rt.query_vector(state["query"])
        found = intersect(G, entities, per_entity=rt.per_entity, types=node_types(state["intent"]),
                          relevance=rt.relevance(G, qv)) if len(entities) >= 2 else []
        # Scaled to the best entry score: a node every entity shares fully ranks first.
        top = max((s for _, s in state.get("frontier") or []), default=1.0)
        boosted = [(n, s * max(top, 1e-9) + 1e-6) for n, s in found]
        args = {"entities": entities, "relations": RELATION_EDGES, "per_entity": rt.per_entity}
        steps, trace = _step(state, "intersect", args, found, t0, [n for n, _ in found])
        return {
            "frontier": _merge(state.get("frontier") or [], boosted),
            "plan": _pop(state.get("plan"), "intersect"),
            "steps": steps,
            "trace": trace,
        }

    def ground_node(state: OperatorState) -> dict[str, Any]:
        t0 = time.perf_counter()
        ns = state["namespace"]
        G = memory.graph(ns)
        grounded = list(state.get("grounded") or [])
        seen = set(grounded)
        todo = [(n, s) for n, s in state.get("frontier") or [] if n not in seen]
        usable = [(n, s) for n, s in todo if n in G and len(G.nodes[n].get("provenance", ())) <= rt.hub_turns]
        hits, via_types = _ground_hits(G, usable, _window(state))
        evidence: dict[str, EvidenceItem] = {e["turn_id"]: e for e in state.get("evidence") or []}
        step_no = int(state.get("steps", 0)) + 1
        new_ids = [tid for tid, s, _ in hits if tid not in evidence or s > evidence[tid]["score"]]
        turns = {t.id: t for t in memory.store.get_turns(ns, [t for t in new_ids if t not in evidence])}
        dense = memory.store.dense_scores(ns, turns, rt.query_vector(state["query"])) if turns else {}
        for tid, prev in evidence.items():
            if tid in via_types and not via_types[tid] <= set(prev["via_types"]):
                evidence[tid] = {**prev, "via_types": sorted(via_types[tid] | set(prev["via_types"]))}
        for tid, score, node in hits:
            old = evidence.get(tid)
            if old is not None and score <= old["score"]:
                continue
            node_type = str(G.nodes[node].get("type"))
            if old is None:
                turn = turns.get(tid)
                if turn is None:  # provenance names a turn the raw store no longer holds
                    continue
                evidence[tid] = {
                    "turn_id": tid,
                    "speaker": turn.speaker,
                    "timestamp": turn.timestamp.isoformat(),
                    "text": turn.text,
                    "turn_score": dense.get(tid, 0.0),
                    "via_types": sorted(via_types.get(tid, ())),
                    "score": float(score),
                    "node": str(node),
                    "node_type": node_type,
                    "step": step_no,
                }
            else:
                evidence[tid] = {**old, "score": float(score), "node": str(node), "node_type": node_type, "step": step_no}
        ranked = sorted(evidence.values(), key=lambda e: (-e["score"], -e["turn_score"], e["turn_id"]))
        args = {"nodes": len(usable), "hubs_skipped": len(todo) - len(usable)}
        new_turns = [tid for tid in dict.fromkeys(new_ids) if tid in evidence]
        steps, trace = _step(state, "ground", args, new_turns, t0, new_turns)
        return {
            "evidence": ranked,
            "grounded": grounded + [n for n, _ in todo],
            "plan": _pop(state.get("plan"), "ground"),
            "steps": steps,
            "trace": trace,
        }

    def check_node(state: OperatorState) -> dict[str, Any]:
        verdict = sufficiency(state["query"], _route_of(state), state.get("evidence") or [])
        reason = verdict.reason
        plan = state.get("plan") or []
        done = bool(verdict.sufficient)
        if not done:
            if not state.get("frontier"):
                done, reason = True, f"{reason}; no entry node found"
            elif not plan:
                done, reason = True, f"{reason}; plan finished"
            elif not budget.fits(state):
                done, reason = True, f"{reason}; step budget ({max_steps}) spent"
            elif plan[0] == "traverse" and not {n for n, _ in state["frontier"]} - set(state.get("expanded") or []):
                done, reason = True, f"{reason}; nothing left to expand"
        logger.debug("check after %s steps: done=%s (%s)", state.get("steps"), done, reason)
        return {"done": done, "reason": reason}

    def after_expansion(state: OperatorState) -> str:
        plan = state.get("plan") or []
        if not plan:
            return "check"
        if budget.fits(state):
            return plan[0]
        if int(state.get("steps", 0)) < max_steps:
            return "ground"  # no room for the next expansion: ground what was found
        return "check"

    def after_check(state: OperatorState) -> str:
        if state.get("done"):
            return END
        return (state.get("plan") or ["check"])[0]

    ops = ["ground", "traverse", "intersect", "check"]
    builder = StateGraph(OperatorState, input_schema=OperatorInput)
    builder.add_node("route", route_node)
    builder.add_node("anchor", anchor_node)
    builder.add_node("traverse", traverse_node)
    builder.add_node("intersect", intersect_node)
    builder.add_node("ground", ground_node)
    builder.add_node("check", check_node)
    builder.add_edge(START, "route")
    builder.add_edge("route", "anchor")
    for node in ("anchor", "traverse", "intersect"):
        builder.add_conditional_edges(node, after_expansion, ops)
    builder.add_edge("ground", "check")
    builder.add_conditional_edges("check", after_check, ["traverse", "intersect", "ground", END])
    return builder.compile(checkpointer=checkpointer, name=name)


def operator_node(
    graph: CompiledStateGraph,
    *,
    query_key: str = "question",
    namespace_key: str = "namespace",
    namespace: str | None = None,
    now_key: str = "now",
    outputs: Mapping[str, str] | None = None,
) -> Callable[[Mapping[str, Any], RunnableConfig], dict[str, Any]]:
    """A parent-graph node that runs the operator loop on a parent state with other key names.

    The parent's config is passed on, so the loop runs as a subgraph of the parent (its
    checkpoints, streaming and callbacks included).

    Args:
        graph: A graph from :func:`build_operator_graph`.
        query_key: The parent key holding the question.
        namespace_key: The parent key holding the namespace (used when ``namespace`` is ``None``).
        namespace: A fixed namespace.
        now_key: The parent key holding ``now`` (optional in the parent state).
        outputs: Loop key -> parent key to write back (default ``{"evidence": "evidence"}``).

    Returns:
        A function ``(state, config) -> update`` for ``StateGraph.add_node``.

    Example:
        >>> node = operator_node(object(), query_key="question", namespace="alice")  # doctest: +SKIP
        >>> parent.add_node("recall", node)  # doctest: +SKIP
    """
    mapping = dict(outputs or {"evidence": "evidence"})

    def run(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        ns = namespace if namespace is not None else state.get(namespace_key)
        result = graph.invoke({"query": state.get(query_key), "namespace": ns, "now": state.get(now_key)}, config)
        return {parent: result.get(key) for key, parent in mapping.items()}

    return run


class GraphRetrieval:
    """Ranked retrieval through the operator loop (one compiled graph, its caches reused).

    Args:
        memory: The memory to search.
        **kwargs: Passed to :func:`build_operator_graph` (``router``, ``sufficiency``, ``max_steps``, ...).

    Example:
        >>> import uuid
        >>> from datetime import datetime, timezone
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langmem_cog import CogMemConfig, make_turn
        >>> from langmem_cog.memory import CogMemory
        >>> mem = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
        >>> def make_turns(ns, texts, speaker):
        ...     return [make_turn(id=f"t{i}", namespace=ns, speaker=speaker, text=text, position=i,
        ...                       timestamp=datetime(2023, 5, 8, 12, i, tzinfo=timezone.utc))
        ...             for i, text in enumerate(texts)]
        >>> ns = "doc-retrieval-" + uuid.uuid4().hex[:8]
        >>> _ = mem.add_turns(make_turns(ns, ["I am allergic to shellfish.", "Nice weather."], "Leo"))
        >>> hits = GraphRetrieval(mem).search(ns, "What is Leo allergic to?", k=3)
        >>> [h["rank"] for h in hits], "t0" in [h["turn_id"] for h in hits]
        ([1, 2], True)
    """

    def __init__(self, memory: LoopMemory, **kwargs: Any) -> None:
        self.memory = memory
        self.graph = build_operator_graph(memory, **kwargs)

    def run(self, namespace: str, query: str, *, now: datetime | str | None = None,
            config: RunnableConfig | None = None) -> OperatorState:
        """Run the loop once; returns the final :class:`OperatorState`."""
        when = _at_offset(now) if isinstance(now, datetime) else now
        out: Any = self.graph.invoke({"query": query, "namespace": namespace, "now": when}, config)
        return cast(OperatorState, out)

    def result(self, namespace: str, query: str, *, now: datetime | str | None = None,
               config: RunnableConfig | None = None) -> LoopResult:
        """Run the loop once; returns what it found, typed (:class:`LoopResult`)."""
        return LoopResult.from_state(self.run(namespace, query, now=now, config=config))

    def search(self, namespace: str, query: str, k: int = 10, *, now: datetime | str | None = None) -> list[dict[str, Any]]:
        """The best ``k`` grounded turns: the evidence dicts plus a 1-based ``rank``.

        Raises:
            InvalidInputError: If ``k`` is not a positive integer or the query is empty.
        """
        k = positive_int(k, "k")
        state = self.run(namespace, query, now=now)
        return [{**e, "rank": r} for r, e in enumerate(state.get("evidence") or [], 1)][:k]


def graph_search(memory: LoopMemory, namespace: str, query: str, k: int = 10,
                 now: datetime | str | None = None) -> list[dict[str, Any]]:
    """Grounded turns for ``query``, ranked, through a :class:`GraphRetrieval` kept per memory.

    Each result has ``turn_id``, ``rank``, ``score``, ``turn_score``, ``speaker``,
    ``timestamp``, ``text``, ``node``, ``node_type`` and ``step``. Turns the loop never
    grounds are absent (fewer than ``k`` results is normal).

    Example:
        >>> graph_search(mem, "alice", "What is Leo allergic to?", k=5)  # doctest: +SKIP
    """
    return memory.retrieval.search(namespace, query, k, now=now)

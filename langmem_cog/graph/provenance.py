"""What the graph says about each raw turn: its claims (with their reconciled status) and its events.

:func:`turn_records` is a pure function of a PEC2F graph: for every turn that is the provenance of
a Claim, an Event or a reconciled state Fact it lists those records (a read-only map that makes a turn's
records on its first lookup). The retriever puts them in each returned document's
metadata, and :func:`prefer_current` puts a reconciled CURRENT claim first, before the claim it
superseded, when a question asks what someone thinks now. :func:`prefer_records` keeps one
speaker's opinion from answering a question about another person's record: an opinion is a Claim
attributed to its speaker, never a fact about whoever it mentions.

Example:
    >>> import networkx as nx
    >>> G = nx.MultiDiGraph()
    >>> G.add_node("claim:a", type="Claim", provenance={"t1"}, status="SUPERSEDED", polarity=-1)
    >>> G.add_node("claim:b", type="Claim", provenance={"t9"}, status="CURRENT", polarity=1)
    >>> _ = G.add_edge("claim:b", "claim:a", key="SUPERSEDES")
    >>> recs = turn_records(G)
    >>> recs["t1"].claims[0].status, recs["t1"].claims[0].superseded_by_turn
    ('SUPERSEDED', 't9')
    >>> prefer_current(["t1", "t5", "t9"], recs)
    ['t9', 't1', 't5']
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any

import networkx as nx

from langmem_cog.graph.reconcile import FUNCTIONAL_PREDICATES
from langmem_cog.graph.schema import ClaimStatus, EdgeType, NodeType

__all__ = ["TurnClaim", "TurnEvent", "TurnFact", "TurnRecordMap", "TurnRecords", "current_state_first", "state_facts",
           "state_value_first", "subject_name", "turn_records",
           "prefer_current", "prefer_earlier", "prefer_records"]


@dataclass(frozen=True)
class TurnClaim:
    """A claim whose provenance is the turn."""

    claim_id: str
    status: str
    polarity: int
    #: The turn of the claim that superseded this one (``None`` unless SUPERSEDED).
    superseded_by_turn: str | None = None
    #: The name of what the claim is about (its ``ABOUT`` edge's target: "running", "Sam"), or ``""``.
    target: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"claim_id": self.claim_id, "status": self.status, "polarity": self.polarity,
                "superseded_by_turn": self.superseded_by_turn, "target": self.target}


@dataclass(frozen=True)
class TurnEvent:
    """An event whose provenance is the turn, with its resolved time interval (ISO 8601, or ``None``)."""

    event_id: str
    start: str | None
    end: str | None


@dataclass(frozen=True)
class TurnFact:
    """A state fact (:func:`~langmem_cog.graph.reconcile.fact_slot`) whose provenance is the turn."""

    fact_id: str
    status: str
    #: The turn of the fact that superseded this one (``None`` unless SUPERSEDED).
    superseded_by_turn: str | None = None
    #: The turn of the CURRENT fact of the same state, where this one was superseded (the end of the chain
    #: of ``SUPERSEDES`` edges: Panda -> Jazz -> Yaris gives the Yaris's turn), else ``None``.
    current_turn: str | None = None
    #: The person the state is of (a Person node id) and the state's predicate (``lives_in``, ``drives``, ...).
    subject: str = ""
    predicate: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"fact_id": self.fact_id, "status": self.status, "superseded_by_turn": self.superseded_by_turn}


@dataclass(frozen=True)
class TurnRecords:
    """The claims, events and state facts of one turn."""

    claims: tuple[TurnClaim, ...] = ()
    events: tuple[TurnEvent, ...] = ()
    facts: tuple[TurnFact, ...] = ()


def _iso(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def _first_turn(G: nx.MultiDiGraph, node: str) -> str | None:
    prov = G.nodes[node].get("provenance") or ()
    return min(prov) if prov else None


def _superseding(G: nx.MultiDiGraph, node: str, skip: Collection[str] = ()) -> str | None:
    """The newest node (not in ``skip``) that SUPERSEDES ``node``, or ``None`` when none does."""
    newer = [u for u, keys in G.pred[node].items() if EdgeType.SUPERSEDES in keys and u not in skip]
    return max(newer) if newer else None


def _superseded_by(G: nx.MultiDiGraph, node: str) -> str | None:
    """The first turn of the newest node that SUPERSEDES ``node`` (``None`` when none does)."""
    newer = _superseding(G, node)
    return _first_turn(G, newer) if newer is not None else None


def _current_of(G: nx.MultiDiGraph, node: str) -> str | None:
    """The first turn of the CURRENT node at the end of ``node``'s chain of ``SUPERSEDES`` edges (newest
    first at each step), or ``None`` when the chain ends at no CURRENT node."""
    seen = {node}
    while (newer := _superseding(G, node, seen)) is not None:
        node = newer
        seen.add(node)
    return _first_turn(G, node) if G.nodes[node].get("status") == ClaimStatus.CURRENT else None


def turn_records(G: nx.MultiDiGraph) -> TurnRecordMap:
    """Per turn id, the Claims, Events and reconciled state Facts whose provenance includes it (turns
    with none are absent), computed for a turn when it is first looked up (:class:`TurnRecordMap`)."""
    return TurnRecordMap(G)


class TurnRecordMap(Mapping[str, TurnRecords]):
    """The records of each turn of a graph (:func:`turn_records`): which nodes name a turn is listed once, a
    turn's :class:`TurnRecords` are made on its first lookup.

    A query looks up a few hundred turns of a namespace that may hold tens of thousands; making every
    turn's records took 150 ms of the first query after each change of a 30,000-turn graph.

    Args:
        G: The graph (read when a turn is looked up; nodes removed since are skipped).
    """

    def __init__(self, G: nx.MultiDiGraph) -> None:
        self._G = G
        self._nodes: dict[str, list[Any]] = {}
        self._states: dict[str, set[str]] = {}  # predicate -> turns holding a state fact of it
        for node, d in G.nodes(data=True):
            kind = d.get("type")
            if kind == NodeType.CLAIM or kind == NodeType.EVENT or (kind == NodeType.FACT and d.get("status")):
                turns = [str(t) for t in d.get("provenance") or ()]
                for t in turns:
                    self._nodes.setdefault(t, []).append(node)
                if kind == NodeType.FACT:
                    self._states.setdefault(str(d.get("predicate")), set()).update(turns)
        self._done: dict[str, TurnRecords] = {}
        self._made: dict[Any, TurnClaim | TurnEvent | TurnFact] = {}

    def __getitem__(self, turn: str) -> TurnRecords:
        rec = self._done.get(turn)
        if rec is None:
            rec = self._done[turn] = self._make(self._nodes[turn])
        return rec

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, turn: object) -> bool:
        return turn in self._nodes

    def state_turns(self, predicates: Collection[str]) -> set[str]:
        """The turns that hold a state fact of one of ``predicates``."""
        return set().union(*(self._states.get(p, ()) for p in predicates))

    def __reduce__(self) -> tuple[type, tuple[dict[str, TurnRecords]]]:
        """Pickled as a plain dict of every turn's records (not the graph)."""
        return dict, (dict(self.items()),)

    def _make(self, nodes: list[Any]) -> TurnRecords:
        claims: list[TurnClaim] = []
        events: list[TurnEvent] = []
        facts: list[TurnFact] = []
        for node in nodes:
            item = self._made.get(node)
            if item is None:
                if node not in self._G:
                    continue
                item = self._made[node] = _node_record(self._G, node)
            if isinstance(item, TurnClaim):
                claims.append(item)
            elif isinstance(item, TurnEvent):
                events.append(item)
            else:
                facts.append(item)
        return TurnRecords(_sorted(claims, "claim_id"), _sorted(events, "event_id"), _sorted(facts, "fact_id"))


def _node_record(G: nx.MultiDiGraph, node: Any) -> TurnClaim | TurnEvent | TurnFact:
    """What a Claim, Event or state Fact node says of the turns in its provenance."""
    d = G.nodes[node]
    kind = d.get("type")
    if kind == NodeType.CLAIM:
        by = _superseded_by(G, node) if d.get("status") == ClaimStatus.SUPERSEDED else None
        about = next((v for _, v, k in G.out_edges(node, keys=True) if k == EdgeType.ABOUT), None)
        target = "" if about is None else str(G.nodes[about].get("name") or about)
        return TurnClaim(str(node), str(d.get("status") or ""), int(d.get("polarity") or 0), by, target)
    if kind == NodeType.EVENT:
        return TurnEvent(str(node), _iso(d.get("start")), _iso(d.get("end")))
    subject, predicate = str(d.get("subject") or ""), str(d.get("predicate") or "")
    if d.get("status") != ClaimStatus.SUPERSEDED:
        return TurnFact(str(node), str(d["status"]), subject=subject, predicate=predicate)
    return TurnFact(str(node), str(d["status"]), _superseded_by(G, node), _current_of(G, node), subject, predicate)


def _sorted(items: list[Any] | None, key: str) -> tuple[Any, ...]:
    """``items`` as a tuple sorted by the attribute ``key`` (most turns hold none or one of a kind)."""
    if not items:
        return ()
    if len(items) == 1:
        return (items[0],)
    return tuple(sorted(items, key=attrgetter(key)))


def _held(records: Mapping[str, TurnRecords], turn: str, facts: bool,
          about: Callable[[TurnClaim], bool] | None) -> tuple[TurnClaim | TurnFact, ...]:
    """A turn's claims (those ``about`` accepts, where given), and with ``facts`` its state facts."""
    rec = records.get(turn)
    if rec is None:
        return ()
    claims = rec.claims if about is None else tuple(c for c in rec.claims if about(c))
    return (*claims, *rec.facts) if facts else claims


def prefer_current(turn_ids: Sequence[str], records: Mapping[str, TurnRecords], *, facts: bool = False,
                   about: Callable[[TurnClaim], bool] | None = None) -> list[str]:
    """``turn_ids`` reordered for a question about what someone thinks now (with ``facts``: or about a
    state now, such as where they live).

    Where the list holds both sides of a reconciled change of mind (a SUPERSEDED claim and the
    claim that superseded it; with ``facts``, also a SUPERSEDED state fact and the fact that
    superseded it), the superseding turns lead (in their relative order): the graph knows the
    belief or state changed, and they hold the current one. Each turn whose records were all
    superseded then sits below the turn of the record that superseded it. Every other turn keeps
    its relative order, and no turn enters or leaves the list. With ``about``, only the claims it
    accepts count (those about what the question names: a change of mind about running says nothing
    to a question about swimming).

    Example:
        >>> recs = {"t1": TurnRecords(claims=(TurnClaim("claim:a", "SUPERSEDED", -1, "t9"),)),
        ...         "t9": TurnRecords(claims=(TurnClaim("claim:b", "CURRENT", 1),))}
        >>> prefer_current(["t5", "t1", "t9"], recs)
        ['t9', 't5', 't1']
        >>> prefer_current(["t5", "t1"], recs)  # the newer claim is not in the list: nothing moves
        ['t5', 't1']
    """
    present = set(turn_ids)

    def held(t: str) -> tuple[TurnClaim | TurnFact, ...]:
        return _held(records, t, facts, about)

    newer = {c.superseded_by_turn for t in turn_ids for c in held(t)
             if c.status == ClaimStatus.SUPERSEDED and c.superseded_by_turn in present}
    out = [t for t in turn_ids if t in newer] + [t for t in turn_ids if t not in newer]
    for tid in list(out):
        items = held(tid)
        if not items or not all(c.status == ClaimStatus.SUPERSEDED for c in items):
            continue
        later = [c.superseded_by_turn for c in items if c.superseded_by_turn in present]
        if not later:
            continue
        i = out.index(tid)
        j = max(out.index(n) for n in later)
        if j > i:
            out.insert(j, out.pop(i))
    return out


def prefer_earlier(turn_ids: Sequence[str], records: Mapping[str, TurnRecords], *, facts: bool = False,
                   about: Callable[[TurnClaim], bool] | None = None) -> list[str]:
    """``turn_ids`` reordered for a question about what someone thought before, or (with ``facts``) how a
    state stood before: the mirror of :func:`prefer_current`.

    Where the list holds both sides of a reconciled change (a SUPERSEDED claim, with ``facts`` also a
    SUPERSEDED state fact, and the turn that superseded it), each superseding turn moves to just below the
    lowest turn it superseded: the earlier belief or state leads, and a chain of changes reads oldest
    first. Every other turn keeps its relative order, and no turn enters or leaves the list. ``about``
    as for :func:`prefer_current`.

    Example:
        >>> recs = {"t1": TurnRecords(claims=(TurnClaim("claim:a", "SUPERSEDED", -1, "t9"),)),
        ...         "t9": TurnRecords(claims=(TurnClaim("claim:b", "CURRENT", 1),))}
        >>> prefer_earlier(["t9", "t5", "t1"], recs)
        ['t5', 't1', 't9']
        >>> prefer_earlier(["t9", "t5"], recs)  # the older claim is not in the list: nothing moves
        ['t9', 't5']
    """
    out = list(turn_ids)
    older: dict[str, list[str]] = {}
    for t in turn_ids:
        for c in _held(records, t, facts, about):
            if c.status == ClaimStatus.SUPERSEDED and c.superseded_by_turn in out and c.superseded_by_turn != t:
                older.setdefault(c.superseded_by_turn, []).append(t)
    for _ in range(len(out)):  # a chain (a1 -> a2 -> a3) settles in as many passes as it has links
        moved = False
        for newer, olds in older.items():
            i, j = out.index(newer), max(out.index(o) for o in olds)
            if i < j:
                out.insert(j, out.pop(i))
                moved = True
        if not moved:
            break
    return out


def current_state_first(turn_ids: Sequence[str], records: Mapping[str, TurnRecords], *,
                        others: Collection[str] = (), lead: int = 3) -> list[str]:
    """``turn_ids`` for a question about a state as it is (where someone lives, what they drive): when one
    of the ``lead`` best turns states a value of a state that a later turn replaced (every state fact of
    the turn, :data:`~langmem_cog.graph.reconcile.FUNCTIONAL_PREDICATES`, SUPERSEDED; stances are the
    claims' matter, :func:`prefer_current`), the turn of the current value goes first (it may come from
    lower in the list).
    The first such turn decides; the others keep their order, and nothing moves when none of them holds
    a superseded state, or when the current value's turn already ranks above it.

    Args:
        turn_ids: The turn ids, best first.
        records: Per turn id, its records (:func:`turn_records`).
        others: Turns outside the list that the current value's turn may also come from (the candidates).
        lead: How many of the best turns are read.

    Example:
        >>> recs = {"t1": TurnRecords(facts=(TurnFact("fact:a", "SUPERSEDED", "t5", "t9", "person:ann", "drives"),)),
        ...         "t9": TurnRecords(facts=(TurnFact("fact:c", "CURRENT", None, None, "person:ann", "drives"),))}
        >>> current_state_first(["t1", "t4", "t7", "t9"], recs)
        ['t9', 't1', 't4', 't7']
        >>> current_state_first(["t9", "t1", "t4"], recs)  # the current value already leads
        ['t9', 't1', 't4']
    """
    ids = list(turn_ids)
    for i, tid in enumerate(ids[:lead]):
        rec = records.get(tid)
        facts = tuple(f for f in rec.facts if f.predicate in FUNCTIONAL_PREDICATES) if rec is not None else ()
        if not facts or any(f.status != ClaimStatus.SUPERSEDED for f in facts):
            continue
        current = next((f.current_turn for f in facts if f.current_turn in ids or f.current_turn in others), None)
        if current is None or (current in ids and ids.index(current) < i):
            return ids
        return [current] + [t for t in ids if t != current]
    return ids


def state_facts(records: Mapping[str, TurnRecords], person: str | None,
                predicates: Collection[str]) -> list[tuple[str, TurnFact]]:
    """``(turn id, fact)`` of every state fact of ``predicates`` about the person whose first name is
    ``person`` (lower-cased; ``None``: anyone), in turn id order.

    Example:
        >>> recs = {"t1": TurnRecords(facts=(TurnFact("fact:a", "SUPERSEDED", subject="person:priya", predicate="drives"),))}
        >>> [(t, f.status) for t, f in state_facts(recs, "priya", {"drives"})]
        [('t1', 'SUPERSEDED')]
    """
    turns = records.state_turns(predicates) if isinstance(records, TurnRecordMap) else records.keys()
    out = []
    for t in sorted(turns):
        rec = records.get(t)
        for f in rec.facts if rec is not None else ():
            if f.predicate in predicates and (person is None or subject_name(f) == person):
                out.append((t, f))
    return out


def subject_name(fact: TurnFact) -> str:
    """The lower-cased first name of the person a state fact is about ("person:priya shah" -> "priya").

    Example:
        >>> subject_name(TurnFact("fact:x", "CURRENT", subject="person:Priya Shah", predicate="drives"))
        'priya'
    """
    words = fact.subject.split(":", 1)[-1].split()
    return words[0].casefold() if words else ""


def state_value_first(turn_ids: Sequence[str], facts: Sequence[tuple[str, TurnFact]],
                      times: Mapping[str, datetime], tense: str) -> list[str]:
    """``turn_ids`` for a question about one person's state (``facts``: :func:`state_facts` of the state
    asked about): for ``tense`` ``"now"``, the first telling of the current value goes first; for
    ``"before"``, the first telling of the oldest value a later one replaced. Nothing moves when the
    leading turn already states a value of that status, when it was said on a later day than that
    telling (for ``"now"``; an earlier day, for ``"before"``: it may tell a change the graph did not
    read), or when no such turn is in ``times`` (the turns it may come from, with their times).

    Example:
        >>> from datetime import datetime, timezone
        >>> day = lambda d: datetime(2023, 1, d, tzinfo=timezone.utc)
        >>> facts = [("t1", TurnFact("fact:a", "SUPERSEDED", subject="person:priya", predicate="drives")),
        ...          ("t6", TurnFact("fact:b", "CURRENT", subject="person:priya", predicate="drives"))]
        >>> times = {"t1": day(1), "t3": day(3), "t6": day(6)}
        >>> state_value_first(["t3", "t1"], facts, times, "now"), state_value_first(["t3", "t6"], facts, times, "before")
        (['t6', 't3', 't1'], ['t1', 't3', 't6'])
    """
    want = ClaimStatus.CURRENT if tense == "now" else ClaimStatus.SUPERSEDED
    ids = list(turn_ids)
    if ids and any(t == ids[0] and f.status == want for t, f in facts):
        return ids
    found = [t for t, f in facts if f.status == want and t in times]
    if not found:
        return ids
    pick = min(found, key=lambda t: times[t])
    lead = times.get(ids[0]) if ids else None
    if lead is not None and (lead.date() > times[pick].date() if tense == "now" else lead.date() < times[pick].date()):
        return ids
    return [pick] + [t for t in ids if t != pick]


def prefer_records(turn_ids: Sequence[str], records: Mapping[str, TurnRecords],
                   by_named: Collection[str]) -> list[str]:
    """For a question that asks for a record (not what someone thinks) about a named person: the
    turn ids with each opinion voiced by someone else moved to just after the first turn that the
    named person spoke, where that turn is in the list and ranked below it.

    Args:
        turn_ids: The turn ids, best first.
        records: Per turn id, its claims and events (:func:`turn_records`).
        by_named: The turns spoken by a person the question names (the retriever matches the
            speakers' first names against the question's words).

    Returns:
        The turn ids, reordered. An opinion here is a turn holding a Claim and no Event. Nothing
        moves when no turn is by a named person, and no turn enters or leaves the list.

    Example:
        >>> recs = {"t2": TurnRecords(claims=(TurnClaim("claim:x", "CURRENT", -1),))}
        >>> prefer_records(["t2", "t7", "t1"], recs, {"t7", "t1"})
        ['t7', 't2', 't1']
    """
    out = list(turn_ids)
    if not by_named:
        return out
    for tid in list(turn_ids):
        rec = records.get(tid)
        if tid in by_named or rec is None or not rec.claims or rec.events:
            continue
        i = out.index(tid)
        j = next((k for k in range(i + 1, len(out)) if out[k] in by_named), None)
        if j is not None:
            out.insert(j, out.pop(i))
    return out

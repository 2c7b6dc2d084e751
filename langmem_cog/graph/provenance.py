"""What the graph says about each raw turn: its claims (with their reconciled status) and its events.

:func:`turn_records` is a pure function of a PEC2F graph: for every turn that is the provenance of
a Claim or an Event it lists those records. The retriever puts them in each returned document's
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

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any

import networkx as nx

from langmem_cog.graph.schema import ClaimStatus, EdgeType, NodeType

__all__ = ["TurnClaim", "TurnEvent", "TurnFact", "TurnRecords", "turn_records", "prefer_current", "prefer_records"]


@dataclass(frozen=True)
class TurnClaim:
    """A claim whose provenance is the turn."""

    claim_id: str
    status: str
    polarity: int
    #: The turn of the claim that superseded this one (``None`` unless SUPERSEDED).
    superseded_by_turn: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"claim_id": self.claim_id, "status": self.status, "polarity": self.polarity,
                "superseded_by_turn": self.superseded_by_turn}


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


def _superseded_by(G: nx.MultiDiGraph, node: str) -> str | None:
    """The first turn of the newest node that SUPERSEDES ``node`` (``None`` when none does)."""
    newer = [u for u, keys in G.pred[node].items() if EdgeType.SUPERSEDES in keys]
    return _first_turn(G, max(newer)) if newer else None


def turn_records(G: nx.MultiDiGraph) -> dict[str, TurnRecords]:
    """Per turn id, the Claims, Events and reconciled state Facts whose provenance includes it (turns
    with none are absent)."""
    claims: dict[str, list[TurnClaim]] = {}
    events: dict[str, list[TurnEvent]] = {}
    facts: dict[str, list[TurnFact]] = {}
    for node, d in G.nodes(data=True):
        kind = d.get("type")
        if kind == NodeType.CLAIM:
            by = _superseded_by(G, node) if d.get("status") == ClaimStatus.SUPERSEDED else None
            rec = TurnClaim(str(node), str(d.get("status") or ""), int(d.get("polarity") or 0), by)
            for t in d.get("provenance") or ():
                claims.setdefault(str(t), []).append(rec)
        elif kind == NodeType.EVENT:
            ev = TurnEvent(str(node), _iso(d.get("start")), _iso(d.get("end")))
            for t in d.get("provenance") or ():
                events.setdefault(str(t), []).append(ev)
        elif kind == NodeType.FACT and d.get("status"):
            by = _superseded_by(G, node) if d.get("status") == ClaimStatus.SUPERSEDED else None
            fact = TurnFact(str(node), str(d["status"]), by)
            for t in d.get("provenance") or ():
                facts.setdefault(str(t), []).append(fact)
    return {t: TurnRecords(_sorted(claims.get(t), "claim_id"), _sorted(events.get(t), "event_id"),
                           _sorted(facts.get(t), "fact_id"))
            for t in set(claims) | set(events) | set(facts)}


def _sorted(items: list[Any] | None, key: str) -> tuple[Any, ...]:
    """``items`` as a tuple sorted by the attribute ``key`` (most turns hold none or one of a kind)."""
    if not items:
        return ()
    if len(items) == 1:
        return (items[0],)
    return tuple(sorted(items, key=attrgetter(key)))


def prefer_current(turn_ids: Sequence[str], records: Mapping[str, TurnRecords], *, facts: bool = False) -> list[str]:
    """``turn_ids`` reordered for a question about what someone thinks now (with ``facts``: or about a
    state now, such as where they live).

    Where the list holds both sides of a reconciled change of mind (a SUPERSEDED claim and the
    claim that superseded it; with ``facts``, also a SUPERSEDED state fact and the fact that
    superseded it), the superseding turns lead (in their relative order): the graph knows the
    belief or state changed, and they hold the current one. Each turn whose records were all
    superseded then sits below the turn of the record that superseded it. Every other turn keeps
    its relative order, and no turn enters or leaves the list.

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
        rec = records.get(t)
        return () if rec is None else (*rec.claims, *rec.facts) if facts else rec.claims

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

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

import networkx as nx

from langmem_cog.graph.schema import ClaimStatus, EdgeType, NodeType

__all__ = ["TurnClaim", "TurnEvent", "TurnRecords", "turn_records", "prefer_current", "prefer_records"]


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
class TurnRecords:
    """The claims and events of one turn."""

    claims: tuple[TurnClaim, ...] = ()
    events: tuple[TurnEvent, ...] = ()

    @property
    def only_superseded(self) -> bool:
        """Every claim of the turn was superseded (and it has at least one)."""
        return bool(self.claims) and all(c.status == ClaimStatus.SUPERSEDED for c in self.claims)


def _iso(value: object) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def _first_turn(G: nx.MultiDiGraph, node: str) -> str | None:
    prov = G.nodes[node].get("provenance") or ()
    return min(prov) if prov else None


def turn_records(G: nx.MultiDiGraph) -> dict[str, TurnRecords]:
    """Per turn id, the Claims and Events whose provenance includes it (turns with neither are absent)."""
    claims: dict[str, list[TurnClaim]] = {}
    events: dict[str, list[TurnEvent]] = {}
    for node, d in G.nodes(data=True):
        kind = d.get("type")
        if kind == NodeType.CLAIM:
            by = None
            if d.get("status") == ClaimStatus.SUPERSEDED:
                newer = sorted(u for u, _, k in G.in_edges(node, keys=True) if k == EdgeType.SUPERSEDES)
                by = _first_turn(G, newer[-1]) if newer else None
            rec = TurnClaim(str(node), str(d.get("status") or ""), int(d.get("polarity") or 0), by)
            for t in d.get("provenance") or ():
                claims.setdefault(str(t), []).append(rec)
        elif kind == NodeType.EVENT:
            ev = TurnEvent(str(node), _iso(d.get("start")), _iso(d.get("end")))
            for t in d.get("provenance") or ():
                events.setdefault(str(t), []).append(ev)
    return {t: TurnRecords(tuple(sorted(claims.get(t, []), key=lambda c: c.claim_id)),
                           tuple(sorted(events.get(t, []), key=lambda e: e.event_id)))
            for t in set(claims) | set(events)}


def prefer_current(turn_ids: Sequence[str], records: Mapping[str, TurnRecords]) -> list[str]:
    """``turn_ids`` reordered for a question about what someone thinks now.

    Where the list holds both sides of a reconciled change of mind (a SUPERSEDED claim and the
    claim that superseded it), the superseding turns lead (in their relative order): the graph
    knows the belief changed, and they hold the current one. Each turn whose claims were all
    superseded then sits below the turn of the claim that superseded it. Every other turn keeps
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
    newer = {c.superseded_by_turn for t in turn_ids for c in (records[t].claims if t in records else ())
             if c.status == ClaimStatus.SUPERSEDED and c.superseded_by_turn in present}
    out = [t for t in turn_ids if t in newer] + [t for t in turn_ids if t not in newer]
    for tid in list(out):
        rec = records.get(tid)
        if rec is None or not rec.only_superseded:
            continue
        later = [c.superseded_by_turn for c in rec.claims if c.superseded_by_turn in present]
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

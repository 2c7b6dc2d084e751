"""JSON views of a namespace's PEC2F graph for the memory inspector (pure functions).

Each view reads a ``networkx.MultiDiGraph`` built by
:class:`~langmem_cog.graph.store.GraphMemory` and returns plain JSON data
(ISO strings for times, sorted lists for sets); nothing is mutated.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.graph.schema import Extraction, ExtractedEvent
    >>> from langmem_cog.graph.store import GraphMemory
    >>> ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
    >>> ex = Extraction(turn_id="D1:3", speaker="Caroline", timestamp=ts, events=[
    ...     ExtractedEvent(text="went to a support group", participants=("Caroline",),
    ...                    source_turn_id="D1:3", concepts=("support group",), verb="go")])
    >>> mem = GraphMemory()
    >>> _ = mem.apply("alice", [ex])
    >>> view = graph_view(mem.graph("alice"))
    >>> view["counts"]["Event"], view["persons"][0]["name"]
    (1, 'Caroline')
    >>> [e["text"] for e in timeline_view(mem.graph("alice"), "Caroline")["events"]]
    ['went to a support group']
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import networkx as nx

from langmem_cog.checks import positive_int
from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.reconcile import natural_key
from langmem_cog.graph.resolve import normalize_name
from langmem_cog.graph.schema import EdgeType, NodeType

__all__ = ["jsonable", "graph_view", "timeline_view", "find_person", "UnknownPersonError"]

_TYPES = [str(t) for t in NodeType]


class UnknownPersonError(InvalidInputError, LookupError):
    """A timeline was asked for a person the namespace's graph does not hold (HTTP 404)."""

    def __str__(self) -> str:  # LookupError's KeyError-style quoting is not wanted
        return str(self.args[0]) if self.args else ""


def jsonable(value: Any) -> Any:
    """``value`` as JSON data: datetimes as ISO strings, sets as sorted lists, enums as strings,
    NaN and infinities as ``None``; anything else unknown as its ``str``.

    Example:
        >>> jsonable({"t": datetime(2023, 1, 2), "s": {"b", "a"}})
        {'t': '2023-01-02T00:00:00', 's': ['a', 'b']}
    """
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str):
        return str(value)  # StrEnum members become plain strings
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return sorted((jsonable(v) for v in value), key=lambda v: natural_key(str(v)))
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None  # JSON has no NaN or infinity
    if value is None or isinstance(value, bool | int):
        return value
    return str(value)


def _turns(d: Mapping[str, Any]) -> list[str]:
    return sorted((str(t) for t in d.get("provenance", ())), key=natural_key)


def _name(G: nx.MultiDiGraph, node: Any) -> str:
    if node not in G:
        return str(node)
    d = G.nodes[node]
    return str(d.get("name") or d.get("text") or node)


def _linked(G: nx.MultiDiGraph, node: Any, key: str, out: bool = True) -> list[str]:
    edges = G.out_edges(node, keys=True) if out else G.in_edges(node, keys=True)
    return sorted((str(v if out else u) for u, v, k in edges if k == key), key=natural_key)


def _time(d: Mapping[str, Any], *keys: str) -> str | None:
    for k in keys:
        if d.get(k) is not None:
            return jsonable(d[k])
    return None


def _claim(G: nx.MultiDiGraph, n: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": str(n),
        "speaker": _name(G, d.get("source")),
        "speaker_id": jsonable(d.get("source")),
        "target": _name(G, d.get("target")),
        "target_id": jsonable(d.get("target")),
        "predicate": jsonable(d.get("predicate")),
        "polarity": d.get("polarity"),
        "sentiment": d.get("sentiment"),
        "status": jsonable(d.get("status")),
        "content": str(d.get("content") or d.get("text") or ""),
        "timestamp": _time(d, "timestamp", "first_seen"),
        "turns": _turns(d),
        "supersedes": _linked(G, n, EdgeType.SUPERSEDES),
        "conflicts_with": sorted(set(_linked(G, n, EdgeType.CONFLICTS_WITH))
                                 | set(_linked(G, n, EdgeType.CONFLICTS_WITH, out=False)), key=natural_key),
    }


def _event(G: nx.MultiDiGraph, n: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": str(n),
        "text": str(d.get("text") or ""),
        "start": _time(d, "start"),
        "end": _time(d, "end"),
        "time_text": d.get("time_text"),
        "said_at": _time(d, "first_seen"),
        "participants": [_name(G, p) for p in d.get("participants") or ()],
        "concepts": [_name(G, c) for c in _linked(G, n, EdgeType.MENTIONS)],
        "turns": _turns(d),
    }


def _fact(G: nx.MultiDiGraph, n: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    support = _linked(G, n, EdgeType.SUPPORTED_BY)
    return {
        "id": str(n),
        "subject": _name(G, d.get("subject")),
        "predicate": jsonable(d.get("predicate")),
        "object": jsonable(d.get("object")),
        "text": str(d.get("text") or ""),
        "consolidated": bool(d.get("consolidated")),
        "valid_from": _time(d, "valid_from"),
        "valid_to": _time(d, "valid_to"),
        "turns": _turns(d),
        "supported_by": [_event(G, e, G.nodes[e]) for e in support if e in G],
    }


def _entity(G: nx.MultiDiGraph, n: Any, d: Mapping[str, Any]) -> dict[str, Any]:
    out = {
        "id": str(n),
        "name": str(d.get("name") or n),
        "aliases": jsonable(set(d.get("aliases") or ())),
        "n_turns": len(d.get("provenance", ())),
        "first_seen": _time(d, "first_seen"),
        "last_seen": _time(d, "last_seen"),
    }
    if d.get("type") == NodeType.CONCEPT:
        out["kind"] = jsonable(d.get("kind"))
    return out


def graph_view(G: nx.MultiDiGraph, limit: int = 500) -> dict[str, Any]:
    """The graph by node type: Persons, Concepts, Events, Claims (speaker and status) and
    Facts (with the Events they are ``SUPPORTED_BY``), at most ``limit`` of each type.

    Lists are in time order (Persons and Concepts by how many turns mention them, most first);
    ``counts`` and ``edges`` count everything, ``truncated`` says which lists were cut.
    """
    limit = positive_int(limit, "limit")
    by_type: dict[str, list[tuple[Any, Mapping[str, Any]]]] = {t: [] for t in _TYPES}
    for n, d in G.nodes(data=True):
        by_type.setdefault(str(d.get("type")), []).append((n, d))
    edges: dict[str, int] = {}
    for _, _, k in G.edges(keys=True):
        edges[str(k)] = edges.get(str(k), 0) + 1

    def when(item: tuple[Any, Mapping[str, Any]]) -> tuple[str, tuple[Any, ...]]:
        n, d = item
        t = d.get("timestamp") or d.get("start") or d.get("first_seen")
        return (t.isoformat() if isinstance(t, datetime) else str(t or ""), natural_key(str(n)))

    def busy(item: tuple[Any, Mapping[str, Any]]) -> tuple[int, str]:
        return (-len(item[1].get("provenance", ())), str(item[0]))

    makers = {
        "persons": (NodeType.PERSON, _entity, busy),
        "concepts": (NodeType.CONCEPT, _entity, busy),
        "events": (NodeType.EVENT, _event, when),
        "claims": (NodeType.CLAIM, _claim, when),
        "facts": (NodeType.FACT, _fact, when),
    }
    out: dict[str, Any] = {
        "counts": {t: len(v) for t, v in by_type.items()},
        "edges": dict(sorted(edges.items())),
        "limit": limit,
        "truncated": [],
    }
    for key, (ntype, make, order) in makers.items():
        items = sorted(by_type.get(str(ntype), []), key=order)
        if len(items) > limit:
            out["truncated"].append(key)
        out[key] = [make(G, n, d) for n, d in items[:limit]]
    return out


def find_person(G: nx.MultiDiGraph, person: str) -> str:
    """The Person node id for a node id (``person:leo``), a name or an alias (case-insensitive).

    Raises:
        InvalidInputError: If ``person`` is empty.
        UnknownPersonError: If no Person matches; the message lists the known ones.
    """
    if not isinstance(person, str) or not person.strip():
        raise InvalidInputError("person is required: pass a person's name or node id (see /api/graph)")
    persons = [(n, d) for n, d in G.nodes(data=True) if d.get("type") == NodeType.PERSON]
    if person in G and G.nodes[person].get("type") == NodeType.PERSON:
        return str(person)
    key = normalize_name(person)
    for n, d in persons:
        names = {str(d.get("name") or ""), *(str(a) for a in d.get("aliases") or ())}
        if key and (key in {normalize_name(x) for x in names if x} or f"person:{key}" == n):
            return str(n)
    known = sorted(str(d.get("name") or n) for n, d in persons)
    raise UnknownPersonError(f"person {person!r} is not in this namespace's graph: pick one of {known[:20]}")


def timeline_view(G: nx.MultiDiGraph, person: str, turns: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """A person's timeline: their Events in the order of the ``NEXT`` edges tagged with them.

    Args:
        G: The namespace's graph.
        person: A Person node id, name or alias.
        turns: Optional raw turns by id (``speaker``, ``timestamp``, ``text``) to show beside
            each event (the evidence it was derived from).

    Returns:
        ``person`` (id and name), ``events`` (in timeline order, each with ``turns`` ids and,
        with ``turns`` given, ``evidence``), ``facts`` (the person's ``HAS_ATTR`` facts) and
        ``linked`` (how many events the ``NEXT`` chain reached; the rest follow in time order).
    """
    pid = find_person(G, person)
    events = [v for _, v, k in G.out_edges(pid, keys=True)
              if k == EdgeType.PARTICIPATED_IN and G.nodes[v].get("type") == NodeType.EVENT]
    tagged = {(u, v) for u in events for _, v, k, d in G.out_edges(u, keys=True, data=True)
              if k == EdgeType.NEXT and pid in d.get("persons", ())}
    has_prev = {v for _, v in tagged}
    nxt = dict(tagged)
    order: list[Any] = []
    for head in sorted((e for e in events if e not in has_prev), key=lambda e: _event_sort(G, e)):
        node: Any = head
        while node is not None and node not in order:
            order.append(node)
            node = nxt.get(node)
    linked = len(order)
    order += sorted((e for e in events if e not in order), key=lambda e: _event_sort(G, e))
    rows = []
    for e in order:
        row = _event(G, e, G.nodes[e])
        if turns is not None:
            row["evidence"] = [jsonable(dict(turns[t])) for t in row["turns"] if t in turns]
        rows.append(row)
    facts = [_fact(G, f, G.nodes[f]) for f in _linked(G, pid, EdgeType.HAS_ATTR) if f in G]
    return {"person": {"id": pid, "name": _name(G, pid)}, "events": rows, "facts": facts, "linked": linked}


def _event_sort(G: nx.MultiDiGraph, e: Any) -> tuple[str, str, tuple[Any, ...]]:
    d = G.nodes[e]
    start = d.get("start") or d.get("first_seen")
    seen = d.get("first_seen")
    return (jsonable(start) or "", jsonable(seen) or "", natural_key(str(e)))

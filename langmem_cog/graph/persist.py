"""Graph persistence formats: JSON payloads of graphs and extractions, and the checks a snapshot must pass.

A graph is written as node-link data (nodes by id, edges by source, target and key) with sets and
datetimes encoded for JSON (:func:`graph_payload`); :func:`graph_from_snapshot` validates such a payload
(schema version, namespace) and builds the graph back, raising :class:`~langmem_cog.errors.StoreError`
with a rebuild hint when it cannot. Extractions travel through journals as :func:`extraction_payload`.

Example:
    >>> G = empty_graph()
    >>> G.add_edge("person:ann", "concept:tea", key="LIKES", provenance={"t1"})
    'LIKES'
    >>> H = graph_from_snapshot(graph_payload("alice", G), "a test payload", "alice")
    >>> graphs_equal(G, H)
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import networkx as nx

from langmem_cog.errors import StoreError
from langmem_cog.graph.schema import (
    SCHEMA_VERSION,
    ExtractedClaim,
    ExtractedConcept,
    ExtractedEvent,
    ExtractedFact,
    Extraction,
)

__all__ = [
    "SET_ATTRS",
    "DATETIME_ATTRS",
    "REBUILD_HINT",
    "graph_filename",
    "graphs_equal",
    "encode",
    "graph_payload",
    "graph_from_payload",
    "graph_from_snapshot",
    "read_graph_file",
    "empty_graph",
    "extraction_payload",
    "extraction_from_payload",
]


#: Attributes stored as sets (written as sorted lists).
SET_ATTRS = frozenset({"aliases", "provenance", "persons"})
#: Attributes holding aware datetimes (written as ISO strings).
DATETIME_ATTRS = frozenset({"first_seen", "last_seen", "start", "end", "timestamp", "valid_from", "valid_to"})

#: How to repair a damaged graph, appended to the errors about one.
REBUILD_HINT = (
    "the graph is derived from the raw turns: rebuild it with CogMemory.rebuild_graph(namespace) "
    "(or GraphMemory.rebuild(namespace, turn_store.get_turns(namespace), extractor) then "
    "GraphMemory.save(namespace)), which replaces the damaged files without reading them"
)


def graph_filename(namespace: str) -> str:
    """The file name of a namespace's graph: a hash, never the raw id.

    Example:
        >>> len(graph_filename("alice"))
        45
    """
    return hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:40] + ".json"


def graphs_equal(G: nx.MultiDiGraph, H: nx.MultiDiGraph) -> bool:
    """Whether two graphs have the same graph attributes, nodes, keyed edges and attributes.

    Insertion order does not matter; attribute values are compared with ``==``.

    Example:
        >>> G, H = nx.MultiDiGraph(), nx.MultiDiGraph()
        >>> G.add_edge("a", "b", key="LIKES", provenance={"t1"})
        'LIKES'
        >>> H.add_node("b"); H.add_edge("a", "b", key="LIKES", provenance={"t1"})
        'LIKES'
        >>> graphs_equal(G, H)
        True
        >>> H.add_edge("a", "b", key="USES", provenance={"t1"})
        'USES'
        >>> graphs_equal(G, H)
        False
    """
    if G.is_directed() != H.is_directed() or G.is_multigraph() != H.is_multigraph():
        return False
    if G.graph != H.graph or G.number_of_nodes() != H.number_of_nodes():
        return False
    if G.number_of_edges() != H.number_of_edges():
        return False
    for n, data in G.nodes(data=True):
        if n not in H or H.nodes[n] != data:
            return False
    if G.is_multigraph():
        for u, v, k, data in G.edges(keys=True, data=True):
            if not H.has_edge(u, v, key=k) or H.edges[u, v, k] != data:
                return False
    else:
        for u, v, data in G.edges(data=True):
            if not H.has_edge(u, v) or H.edges[u, v] != data:
                return False
    return True


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data: sets as sorted lists, datetimes as ISO strings, dataclasses as dicts.

    Example:
        >>> encode({"ids": {"t2", "t1"}, "at": datetime(2023, 5, 8)})
        {'ids': ['t1', 't2'], 'at': '2023-05-08T00:00:00'}
    """
    if isinstance(value, set | frozenset):
        return sorted((encode(v) for v in value), key=str)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def _decode_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    for key, value in attrs.items():  # values replaced in place, no key added or removed
        if key in DATETIME_ATTRS:
            if value is not None:
                attrs[key] = datetime.fromisoformat(value)
        elif key in SET_ATTRS:
            attrs[key] = set(value)
        elif key == "variants":
            attrs[key] = {f: {v: set(ts) for v, ts in vals.items()} for f, vals in value.items()}
    return attrs


def graph_payload(namespace: str, G: nx.MultiDiGraph) -> dict[str, Any]:
    """What a namespace's graph file holds: the schema version, the namespace and the node-link data of
    ``G`` (nodes by id, edges by source, target and key; sets and datetimes encoded for JSON)."""
    data = nx.node_link_data(G, edges="edges")
    data["nodes"] = sorted((encode(n) for n in data["nodes"]), key=lambda n: n["id"])
    data["edges"] = sorted((encode(e) for e in data["edges"]), key=lambda e: (e["source"], e["target"], e["key"]))
    data["graph"] = encode(data["graph"])
    return {"schema_version": SCHEMA_VERSION, "namespace": namespace, "graph": data}


def graph_from_payload(data: dict[str, Any]) -> nx.MultiDiGraph:
    """The graph of the node-link ``data`` of a :func:`graph_payload` (decoded in place; not validated)."""
    for n in data["nodes"]:
        _decode_attrs(n)
    for e in data["edges"]:
        _decode_attrs(e)
    graph = data.get("graph") or {}
    graph["turns"] = {t: datetime.fromisoformat(ts) for t, ts in (graph.get("turns") or {}).items()}
    data["graph"] = graph
    # What nx.node_link_graph builds from this data (nodes, then keyed edges, in the order given), written straight
    # into the graph's adjacency dicts as MultiDiGraph.add_node / add_edge lay them out (a key dict shared by the
    # successor and predecessor maps): for a 23,616-node, 57,819-edge file 60 ms instead of 290 ms through
    # add_nodes_from / add_edges_from, which check every item. Our node ids, sources and targets are strings, our
    # keys edge types; an edge whose end is not a listed node adds it, as add_edge would.
    G = nx.MultiDiGraph()
    G.graph = graph
    node, succ, pred = G._node, G._succ, G._pred
    for n in data["nodes"]:
        nid = n.pop("id")
        if nid not in node:
            succ[nid], pred[nid] = {}, {}
        node[nid] = n
    for e in data["edges"]:
        u, v, key = e.pop("source"), e.pop("target"), e.pop("key", None)
        for end in (u, v):
            if end not in node:
                succ[end], pred[end], node[end] = {}, {}, {}
        keys = succ[u].get(v)
        if keys is None:
            keys = succ[u][v] = pred[v][u] = {}
        if key is None:  # what add_edge picks for an edge written without a key
            key = G.new_edge_key(u, v)
        keys[key] = e
    return G


def empty_graph() -> nx.MultiDiGraph:
    """A graph with no node and no applied turn.

    Example:
        >>> empty_graph().graph
        {'turns': {}}
    """
    G = nx.MultiDiGraph()
    G.graph["turns"] = {}
    return G


def extraction_payload(ex: Extraction) -> dict[str, Any]:
    """An :class:`Extraction` as JSON-ready data (times as ISO strings)."""
    return encode(ex)


def extraction_from_payload(d: dict[str, Any]) -> Extraction:
    """The inverse of :func:`extraction_payload`."""

    def when(v: Any) -> datetime | None:
        return None if v is None else datetime.fromisoformat(v)

    return Extraction(
        turn_id=d["turn_id"], speaker=d["speaker"], timestamp=datetime.fromisoformat(d["timestamp"]),
        persons=list(d["persons"]),
        concepts=[ExtractedConcept(**c) for c in d["concepts"]],
        events=[ExtractedEvent(**{**e, "participants": tuple(e["participants"]), "concepts": tuple(e["concepts"]),
                                  "start": when(e["start"]), "end": when(e["end"])}) for e in d["events"]],
        facts=[ExtractedFact(**{**f, "valid_from": when(f["valid_from"])}) for f in d["facts"]],
        claims=[ExtractedClaim(**{**c, "timestamp": when(c["timestamp"])}) for c in d["claims"]],
    )


def read_graph_file(path: Path, namespace: str) -> tuple[nx.MultiDiGraph, int]:
    """A namespace's graph file: its graph and the last journal entry it folds (``journal_seq``).

    Raises:
        StoreError: If the file is unreadable, corrupt, of another namespace or of another schema version.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError
        raise StoreError(
            f"the graph file {path} of namespace {namespace!r} is unreadable or corrupt ({exc}); {REBUILD_HINT}"
        ) from exc
    G = graph_from_snapshot(raw, f"the graph file {path}", namespace)
    seq = raw.get("journal_seq") or 0
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise StoreError(
            f"the graph file {path} of namespace {namespace!r} is corrupt (journal_seq={seq!r}); {REBUILD_HINT}"
        )
    return G, seq


def graph_from_snapshot(raw: Any, what: str, namespace: str) -> nx.MultiDiGraph:
    """Validate a snapshot payload (file or :class:`~langmem_cog.graph.backends.GraphStore`) and build its graph."""
    if not isinstance(raw, dict) or "graph" not in raw:
        raise StoreError(f"{what} of namespace {namespace!r} is not a graph snapshot; {REBUILD_HINT}")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
        raise StoreError(
            f"{what} of namespace {namespace!r} has schema version {version!r}, "
            f"this version of langmem-cog reads {SCHEMA_VERSION}; {REBUILD_HINT}"
        )
    if raw.get("namespace") != namespace:
        raise StoreError(
            f"{what} holds namespace {raw.get('namespace')!r}, not {namespace!r}; {REBUILD_HINT}"
        )
    try:
        return graph_from_payload(raw["graph"])
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError, nx.NetworkXError) as exc:
        raise StoreError(
            f"{what} of namespace {namespace!r} is corrupt ({exc!r}); {REBUILD_HINT}"
        ) from exc

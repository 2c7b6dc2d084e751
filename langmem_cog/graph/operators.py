"""Graph operators: pure functions over a namespace's PEC2F ``MultiDiGraph``.

* :func:`anchor` maps a query to entry nodes:
  ``score = a * fuzzy_lexical + (1 - a) * cosine`` (``a = 0.3``), at most 15 nodes.
* :func:`ground` turns scored nodes into the raw turns named by their provenance.

Node vectors come from a :class:`NodeVectors` cache (keyed by node text, so the
graph itself is never mutated and a text is embedded once).

Example:
    >>> import networkx as nx
    >>> G = nx.MultiDiGraph()
    >>> G.add_node("event:t1#0", type="Event", text="went climbing", provenance={"t1"})
    >>> G.add_node("claim:t2#0", type="Claim", content="climbing is scary", provenance={"t2"})
    >>> [n for n, _ in anchor(G, "climbing", types={"Event"}, a=1.0)]
    ['event:t1#0']
    >>> ground(G, [("event:t1#0", 0.9)])
    [('t1', 0.9, 'event:t1#0')]
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import networkx as nx
import numpy as np
from rapidfuzz import fuzz

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.schema import NodeType

__all__ = ["node_text", "NodeVectors", "anchor", "ground"]

EmbedFn = Callable[[list[str]], np.ndarray]


def node_text(G: nx.MultiDiGraph, node: Any) -> str:
    """The searchable text of a node (name, event text, fact text or claim content)."""
    data = G.nodes[node]
    kind = data.get("type")
    if kind == NodeType.CLAIM:
        return str(data.get("content") or data.get("text") or "")
    if kind in (NodeType.EVENT, NodeType.FACT):
        return str(data.get("text") or data.get("name") or "")
    return str(data.get("name") or data.get("text") or node)


class NodeVectors:
    """A cache of normalised text vectors for node texts.

    Args:
        embed: Function from a list of texts to an array of vectors (e.g.
            ``LocalSentenceEmbeddings.embed_array``).
    """

    def __init__(self, embed: EmbedFn) -> None:
        self._embed = embed
        self._cache: dict[str, np.ndarray] = {}

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` (rows aligned), embedding only the unseen ones."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            arr = np.asarray(self._embed(missing), dtype=np.float32)
            norms = np.linalg.norm(arr, axis=1, keepdims=True)
            arr = arr / np.where(norms > 0, norms, 1.0)
            self._cache.update(zip(missing, arr, strict=True))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


def anchor(
    G: nx.MultiDiGraph,
    query: str,
    *,
    types: Collection[str] | None = None,
    vectors: NodeVectors | None = None,
    query_vector: np.ndarray | None = None,
    a: float = 0.3,
    limit: int = 15,
    min_score: float = 0.0,
) -> list[tuple[Any, float]]:
    """Entry nodes for a query: ``a * fuzzy + (1 - a) * cosine``, best first.

    Args:
        G: A PEC2F graph.
        query: The query text.
        types: Node types to consider (e.g. the record types, excluding Claims); all when ``None``.
        vectors: Node-text vector cache; without it (or without ``query_vector``) the score is
            lexical only.
        query_vector: The query's vector (normalised), used with ``vectors``.
        a: Weight of the fuzzy lexical score (rapidfuzz ``token_set_ratio`` / 100).
        limit: At most this many nodes.
        min_score: Drop nodes scoring below this.

    Returns:
        ``(node, score)`` pairs, best first (ties broken by node id).

    Raises:
        InvalidInputError: If ``a`` is outside [0, 1] or ``limit`` < 1.
    """
    if not 0.0 <= a <= 1.0:
        raise InvalidInputError(f"a={a!r} must be in [0, 1]")
    if limit < 1:
        raise InvalidInputError(f"limit={limit!r} must be at least 1")
    nodes = [n for n, d in G.nodes(data=True) if types is None or d.get("type") in types]
    if not nodes:
        return []
    texts = [node_text(G, n) for n in nodes]
    q = query.lower()
    lexical = np.array([fuzz.token_set_ratio(q, t.lower()) / 100.0 for t in texts])
    if vectors is not None and query_vector is not None and a < 1.0:
        cos = vectors.vectors(texts) @ np.asarray(query_vector, dtype=np.float32)
        scores = a * lexical + (1.0 - a) * cos
    else:
        scores = lexical
    order = sorted(range(len(nodes)), key=lambda i: (-scores[i], str(nodes[i])))
    return [(nodes[i], float(scores[i])) for i in order[:limit] if scores[i] >= min_score]


def ground(
    G: nx.MultiDiGraph, scored_nodes: Iterable[tuple[Any, float]], *, limit: int | None = None
) -> list[tuple[str, float, Any]]:
    """The raw turns behind scored nodes: ``(turn_id, score, via_node)``, best node first.

    A turn reached through several nodes keeps its best score; turns of one node are in
    sorted id order.
    """
    out: dict[str, tuple[float, Any]] = {}
    for node, score in scored_nodes:
        if node not in G:
            continue
        for tid in sorted(G.nodes[node].get("provenance", ())):
            if tid not in out or score > out[tid][0]:
                out[tid] = (score, node)
    ranked = sorted(out.items(), key=lambda kv: -kv[1][0])
    result = [(tid, s, node) for tid, (s, node) in ranked]
    return result[:limit] if limit is not None else result

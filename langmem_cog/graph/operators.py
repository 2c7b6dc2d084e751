"""Graph operators: pure functions over a namespace's PEC2F ``MultiDiGraph``.

* :func:`anchor` maps a query to entry nodes:
  ``score = a * fuzzy_lexical + (1 - a) * cosine`` (``a = 0.3``), at most 15 nodes.
* :func:`ground` turns scored nodes into the raw turns named by their provenance.
* :func:`traverse` follows typed edges (both directions) one or two hops from seed nodes,
  optionally inside a time window, at most 15 new nodes per hop, scores decaying per hop.
* :func:`intersect` finds what several entities share ("what do A and B both ..."): the
  overlap of their neighbourhoods over ``LIKES``, ``USES``, ``PARTICIPATED_IN``,
  ``MENTIONS`` and ``HAS_ATTR`` (Concepts reached through Events count).

None of them changes the graph. The operator loop that chains them is
:mod:`langmem_cog.graph.loop`.

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

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import networkx as nx
import numpy as np
from rapidfuzz import fuzz, process

from langmem_cog.checks import positive_int
from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.schema import RELATION_EDGES, EdgeType, NodeType
from langmem_cog.graph.vectors import NodeVectorFiles, text_key

__all__ = [
    "node_text",
    "NodeVectors",
    "anchor",
    "AnchorTexts",
    "anchor_texts",
    "ground",
    "traverse",
    "intersect",
    "node_interval",
    "in_window",
    "TimeWindow",
]

logger = logging.getLogger(__name__)

EmbedFn = Callable[[list[str]], np.ndarray]
#: Node-text matrices a :class:`NodeVectors` keeps (per namespace and node-type filter in use), and
#: their total size: a larger graph's matrix is built per query, as if none were kept.
_MATRICES_KEPT = 8
_MATRIX_BYTES = 64 * 2**20
#: The text embedded to learn the embedder's dimension when stored vectors are read before any was embedded.
_PROBE = "dimension"


def node_text(G: nx.MultiDiGraph, node: Any) -> str:
    """The searchable text of a node (name, event text, fact text or claim content)."""
    data = G.nodes[node]
    kind = data.get("type")
    if kind == NodeType.CLAIM:
        return str(data.get("content") or data.get("text") or "")
    if kind in (NodeType.EVENT, NodeType.FACT):
        return str(data.get("text") or data.get("name") or "")
    return str(data.get("name") or data.get("text") or node)


def _let_go(held: set[Any], refs: dict[Any, int], item: Any) -> bool:
    """A namespace that ``held`` ``item`` lets go of it: whether no namespace holds it any more (``refs``
    counts the namespaces holding each item). An item the namespace did not hold goes only if none holds it."""
    if item not in held:
        return item not in refs
    held.discard(item)
    left = refs.get(item, 1) - 1
    if left > 0:
        refs[item] = left
        return False
    refs.pop(item, None)
    return True


class NodeVectors:
    """A cache of normalised text vectors for node texts, optionally kept on disk per namespace.

    The texts a namespace asks for (``warm(..., namespace=...)``, :meth:`claim`) are its own: :meth:`release`
    drops the vectors of a namespace's texts that no other namespace holds (a memory releases the namespaces its
    store closes, so ``open_namespaces`` bounds this cache too), :meth:`purge` those of texts it no longer has,
    :meth:`forget` all of them. Texts asked for without a namespace stay until then.

    Args:
        embed: Function from a list of texts to an array of vectors (e.g.
            ``LocalSentenceEmbeddings.embed_array``).
        files: Where the vectors of each namespace's node texts are kept
            (:class:`~langmem_cog.graph.vectors.NodeVectorFiles`, beside the graph files of a persistent
            memory); ``None`` keeps them in this process only.
    """

    def __init__(self, embed: EmbedFn, files: NodeVectorFiles | None = None) -> None:
        self._embed = embed
        self.files = files
        self._cache: dict[str, np.ndarray] = {}
        self._matrices: OrderedDict[tuple[str, ...], np.ndarray] = OrderedDict()  # the last few matrices built
        self._lock = threading.Lock()  # held briefly (never while embedding or reading files)
        # Rows read from the files and not asked for yet (key -> vector), the keys of the cached texts, and the
        # namespaces whose files were read.
        self._stored: dict[bytes, np.ndarray] = {}
        self._keys: dict[str, bytes] = {}
        self._loaded: set[str] = set()
        # Per namespace, the texts it asked for and the keys of the rows read from its files; how many namespaces
        # hold each text or key (the vector goes when none does).
        self._owned: dict[str, set[str]] = {}
        self._stored_of: dict[str, set[bytes]] = {}
        self._text_refs: dict[str, int] = {}
        self._key_refs: dict[bytes, int] = {}
        #: How many texts were embedded, and how many had their vectors read from the files, so far.
        self.embedded = 0
        self.read = 0
        self._dim: int | None = None

    def held(self) -> int:
        """How many vectors this process holds (cached, and read from the files but not asked for yet)."""
        return len(self._cache) + len(self._stored)

    def _key(self, text: str) -> bytes:
        key = self._keys.get(text)
        if key is None:
            key = self._keys[text] = text_key(text)
        return key

    def load(self, namespace: str, *, again: bool = False) -> int:
        """Read the stored vectors of a namespace's node texts (once; ``again`` picks up chunks written since,
        by another process say); returns how many rows were read. Texts whose vectors are read are never
        embedded. Unusable files are skipped (see :mod:`langmem_cog.graph.vectors`)."""
        if self.files is None or (namespace in self._loaded and not again):
            return 0
        rows = self.files.read(namespace, dim=self._dimension)
        with self._lock:
            self._loaded.add(namespace)
            # A copy: _key() adds keys without the lock (the cache itself changes only under it).
            known = {k for t, k in self._keys.copy().items() if t in self._cache} if rows else set()
            held = self._stored_of.setdefault(namespace, set())
            for k, v in rows.items():
                if k in known:  # rows of cached texts are not kept
                    continue
                self._stored[k] = v
                if k not in held:
                    held.add(k)
                    self._key_refs[k] = self._key_refs.get(k, 0) + 1
        return len(rows)

    def load_or_embed(self, namespace: str) -> int:
        """:meth:`load`, where a file error only costs embedding the texts again (the vectors are derived
        data): the error is logged as a warning and 0 returned."""
        try:
            return self.load(namespace)
        except OSError as exc:
            logger.warning("namespace %r: cannot read the stored node vectors (%s): they are embedded again",
                           namespace, exc)
            return 0

    def _dimension(self) -> int:
        """The embedder's dimension: a cached vector's, or (before any) that of a short probe text embedded once,
        so that rows read from the files are never of another dimension than the query's."""
        if self._dim is None:
            with self._lock:
                cached = next(iter(self._cache.values()), None)
            self._dim = len(cached) if cached is not None else int(np.asarray(self._embed([_PROBE])).shape[1])
        return self._dim

    def _own(self, namespace: str, texts: Iterable[str]) -> None:
        """Record ``texts`` as the namespace's (the caller holds the lock)."""
        owned = self._owned.setdefault(namespace, set())
        for t in texts:
            if t not in owned:
                owned.add(t)
                self._text_refs[t] = self._text_refs.get(t, 0) + 1

    def claim(self, namespace: str, texts: Iterable[str]) -> None:
        """Record ``texts`` as node texts of the namespace (embedded when first asked for), so that
        :meth:`release` drops their vectors with it."""
        with self._lock:
            self._own(namespace, texts)

    def _normalised(self, texts: list[str]) -> np.ndarray:
        arr: np.ndarray = np.asarray(self._embed(texts), dtype=np.float32)
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return arr / np.where(norms > 0, norms, 1.0)

    def warm(self, texts: Iterable[str], *, namespace: str | None = None) -> int:
        """Embed the texts not seen yet (one batch); returns how many were embedded (rows read from the files
        are not counted). With ``namespace``, the texts are recorded as that namespace's (see :meth:`claim`)."""
        unique = list(dict.fromkeys(texts))
        with self._lock:
            if namespace is not None:
                self._own(namespace, unique)
            missing = [t for t in unique if t not in self._cache]
            if missing and self._stored:
                for t in missing:
                    vec = self._stored.pop(self._key(t), None)
                    if vec is not None:
                        self._cache[t] = vec
                        self.read += 1
                missing = [t for t in missing if t not in self._cache]
        if missing:
            arr = self._normalised(missing)
            with self._lock:
                self._cache.update(zip(missing, arr, strict=True))
                self.embedded += len(missing)
                if self.files is not None:
                    for t in missing:
                        self._key(t)
        return len(missing)

    def unsaved(self, namespace: str, texts: Iterable[str]) -> bool:
        """Whether the namespace's files lack the vector of one of ``texts`` that this cache holds."""
        if self.files is None:
            return False
        stored = self.files.stored_keys(namespace)
        return any(self._key(t) not in stored for t in texts if t in self._cache)

    def save(self, namespace: str, texts: Iterable[str]) -> int:
        """Write the vectors of ``texts`` (the namespace's node texts, all of them) that its files lack; returns
        how many rows were written. Call it under the data directory's lock.

        Raises:
            OSError: If the files cannot be written.
        """
        if self.files is None:
            return 0
        live = {t: self._key(t) for t in dict.fromkeys(texts)}
        cache = self._cache
        rows = {k: v for t, k in live.items() if (v := cache.get(t)) is not None}
        return self.files.write(namespace, rows, live.values())

    def _drop(self, namespace: str, texts: Iterable[str], keys: Iterable[bytes]) -> None:
        """The namespace lets go of ``texts`` and ``keys``: the vectors no other namespace holds leave this
        process, with the kept matrices that hold one (the caller holds the lock)."""
        owned = self._owned.get(namespace, set())
        dropped = set()
        for t in texts:
            if not _let_go(owned, self._text_refs, t):
                continue
            dropped.add(t)
            self._cache.pop(t, None)
            key = self._keys.pop(t, None)
            if key is not None and self._key_refs.get(key, 0) == 0:
                self._stored.pop(key, None)
        held = self._stored_of.get(namespace, set())
        for k in keys:
            if _let_go(held, self._key_refs, k):
                self._stored.pop(k, None)
        for kept in [m for m in self._matrices if not dropped.isdisjoint(m)]:
            del self._matrices[kept]

    def release(self, namespace: str) -> None:
        """Drop from this process the vectors of the namespace's texts that no other namespace holds (its files
        stay: its next use reads them again)."""
        with self._lock:
            self._drop(namespace, set(self._owned.get(namespace, ())), set(self._stored_of.get(namespace, ())))
            self._owned.pop(namespace, None)
            self._stored_of.pop(namespace, None)
            self._loaded.discard(namespace)
        if self.files is not None:
            self.files.release(namespace)

    def purge(self, namespace: str, texts: Iterable[str]) -> int:
        """Drop every vector of the namespace whose text is not one of ``texts`` (after a deletion): from this
        process (texts no other namespace holds) and from its files; returns how many rows the files dropped.
        Call it under the data directory's lock.

        Raises:
            OSError: If the files cannot be written.
        """
        live = set(texts)
        live_keys = {text_key(t) for t in live}
        with self._lock:
            dead_texts = [t for t in self._owned.get(namespace, ()) if t not in live]
            dead_keys = [k for k in self._stored_of.get(namespace, ()) if k not in live_keys]
            self._drop(namespace, dead_texts, dead_keys)
        if self.files is None:
            return 0
        dead = self.files.purge(namespace, live_keys)
        with self._lock:
            for k in dead:
                if self._key_refs.get(k, 0) == 0:
                    self._stored.pop(k, None)
        return len(dead)

    def forget(self, namespace: str) -> None:
        """Drop the namespace's vectors from this process (texts no other namespace holds) and delete its files.

        Raises:
            OSError: If the files cannot be deleted.
        """
        self.release(namespace)
        if self.files is not None:
            self.files.forget(namespace)

    def _rows(self, texts: tuple[str, ...]) -> np.ndarray:
        """The cached vectors of ``texts`` stacked; a text released meanwhile (another thread's namespace
        closed) is embedded again, not cached."""
        with self._lock:
            rows = [self._cache.get(t) for t in texts]
        gone = [i for i, r in enumerate(rows) if r is None]
        if gone:
            for i, vec in zip(gone, self._normalised([texts[i] for i in gone]), strict=True):
                rows[i] = vec
        return np.stack([r for r in rows if r is not None])

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` (rows aligned), embedding only the unseen ones.

        The last few matrices are kept: asking again for the same texts (a graph that did not change
        between two queries) returns one without stacking the rows anew. Treat it as read-only.
        """
        key = tuple(texts)
        with self._lock:
            matrix = self._matrices.get(key)
            if matrix is not None:
                self._matrices.move_to_end(key)
                return matrix
        self.warm(key)
        if not key:
            return np.zeros((0, 0), dtype=np.float32)
        matrix = self._rows(key)
        if matrix.nbytes <= _MATRIX_BYTES:
            with self._lock:
                self._matrices[key] = matrix
                while (len(self._matrices) > _MATRICES_KEPT
                       or sum(m.nbytes for m in self._matrices.values()) > _MATRIX_BYTES):
                    self._matrices.popitem(last=False)
        return matrix


@dataclass(frozen=True)
class AnchorTexts:
    """The nodes :func:`anchor` scores for one node-type filter, with their texts (:func:`node_text`) and
    lower-cased texts: what every query on an unchanged graph would otherwise recompute."""

    nodes: tuple[Any, ...]
    texts: tuple[str, ...]
    lowered: tuple[str, ...]


def anchor_texts(G: nx.MultiDiGraph, types: Collection[str] | None = None) -> AnchorTexts:
    """The nodes of ``types`` (all when ``None``) in ``G``'s order, with their texts, for :func:`anchor`.

    Example:
        >>> G = nx.MultiDiGraph()
        >>> G.add_node("person:leo", type="Person", name="Leo")
        >>> anchor_texts(G).lowered
        ('leo',)
    """
    nodes = tuple(n for n, d in G.nodes(data=True) if types is None or d.get("type") in types)
    texts = tuple(node_text(G, n) for n in nodes)
    return AnchorTexts(nodes, texts, tuple(t.lower() for t in texts))


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
    texts: AnchorTexts | None = None,
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
        texts: ``anchor_texts(G, types)`` of this very state of ``G``, made once for many queries (``None``:
            made now).

    Returns:
        ``(node, score)`` pairs, best first (ties broken by node id).

    Raises:
        InvalidInputError: If ``a`` is outside [0, 1] or ``limit`` < 1.
    """
    if not 0.0 <= a <= 1.0:
        raise InvalidInputError(f"a={a!r} must be in [0, 1]")
    if limit < 1:
        raise InvalidInputError(f"limit={limit!r} must be at least 1")
    found = texts if texts is not None else anchor_texts(G, types)
    nodes = found.nodes
    if not nodes:
        return []
    q = query.lower()
    lexical = process.cdist([q], found.lowered, scorer=fuzz.token_set_ratio, dtype=np.float64)[0] / 100.0
    if vectors is not None and query_vector is not None and a < 1.0:
        cos = vectors.vectors(found.texts) @ np.asarray(query_vector, dtype=np.float32)
        scores = a * lexical + (1.0 - a) * cos
    else:
        scores = lexical
    if len(nodes) > limit:  # only the nodes that can make the cut (ties at the cut included) are sorted
        cut = np.partition(scores, len(nodes) - limit)[len(nodes) - limit]
        head = np.flatnonzero(scores >= cut).tolist()
    else:
        head = list(range(len(nodes)))
    order = sorted(head, key=lambda i: (-scores[i], str(nodes[i])))
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


# ---------------------------------------------------------------------------- time windows

#: A half-open time window ``[start, end)``; either bound may be ``None`` (open).
TimeWindow = tuple[datetime | None, datetime | None]


def _check_window(time_window: TimeWindow | None) -> TimeWindow | None:
    if time_window is None:
        return None
    if not isinstance(time_window, tuple | list) or len(time_window) != 2:
        raise InvalidInputError(f"time_window must be a (start, end) pair, got {time_window!r}")
    start, end = time_window
    for bound in (start, end):
        if bound is not None and (not isinstance(bound, datetime) or bound.utcoffset() is None):
            raise InvalidInputError(
                f"time_window bound {bound!r} must be a timezone-aware datetime or None "
                "(e.g. datetime(2023, 5, 1, tzinfo=timezone.utc))"
            )
    if start is not None and end is not None and start >= end:
        raise InvalidInputError(f"time_window start {start.isoformat()} is not before its end {end.isoformat()}")
    return (start, end)


def node_interval(G: nx.MultiDiGraph, node: Any) -> tuple[datetime, datetime, bool] | None:
    """When a node holds: ``(start, end, end_inclusive)``, or ``None`` if it has no time.

    The first of these attributes that is set decides: an Event's ``start`` / ``end``
    (``end`` exclusive; a missing ``end`` makes it an instant), a Claim's ``timestamp`` (an
    instant), else ``first_seen`` / ``last_seen`` (both inclusive: when the node was talked
    about).

    Example:
        >>> from datetime import datetime, timezone
        >>> G = nx.MultiDiGraph()
        >>> G.add_node("e", start=datetime(2023, 5, 7, tzinfo=timezone.utc),
        ...            end=datetime(2023, 5, 8, tzinfo=timezone.utc))
        >>> s, e, inclusive = node_interval(G, "e")
        >>> s.day, e.day, inclusive
        (7, 8, False)
    """
    data = G.nodes[node]
    start = data.get("start")
    if isinstance(start, datetime):
        end = data.get("end")
        if isinstance(end, datetime) and end > start:
            return (start, end, False)
        return (start, start, True)
    ts = data.get("timestamp")
    if isinstance(ts, datetime):
        return (ts, ts, True)
    first = data.get("first_seen")
    if isinstance(first, datetime):
        last = data.get("last_seen")
        return (first, last if isinstance(last, datetime) and last >= first else first, True)
    return None


def in_window(G: nx.MultiDiGraph, node: Any, time_window: TimeWindow | None) -> bool:
    """Whether a node's time (see :func:`node_interval`) overlaps ``[start, end)``.

    Always true without a window; false for a node with no time when there is one.

    Example:
        >>> from datetime import datetime, timezone
        >>> utc = timezone.utc
        >>> G = nx.MultiDiGraph()
        >>> G.add_node("c", timestamp=datetime(2023, 5, 7, 12, tzinfo=utc))
        >>> in_window(G, "c", (datetime(2023, 5, 7, tzinfo=utc), datetime(2023, 5, 8, tzinfo=utc)))
        True
        >>> in_window(G, "c", (datetime(2023, 5, 8, tzinfo=utc), None))
        False
    """
    window = _check_window(time_window)
    if window is None:
        return True
    interval = node_interval(G, node)
    if interval is None:
        return False
    s, e, inclusive = interval
    ws, we = window
    if we is not None and not s < we:
        return False
    if ws is None:
        return True
    return e >= ws if inclusive else e > ws


# ---------------------------------------------------------------------------- traverse / intersect

Relevance = Callable[[Any], float]


def _seeds(nodes: Iterable[Any] | Iterable[tuple[Any, float]]) -> dict[Any, float]:
    out: dict[Any, float] = {}
    for item in nodes:
        if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[1], int | float):
            node, score = item[0], float(item[1])
        else:
            node, score = item, 1.0
        if node not in out or score > out[node]:
            out[node] = score
    return out


def _incident(G: nx.MultiDiGraph, node: Any, edge_types: Collection[str] | None) -> Iterable[tuple[Any, str]]:
    """``(neighbour, edge_type)`` over out- and in-edges of ``node`` whose key is allowed."""
    for _, v, key in G.out_edges(node, keys=True):
        if edge_types is None or key in edge_types:
            yield v, key
    for u, _, key in G.in_edges(node, keys=True):
        if edge_types is None or key in edge_types:
            yield u, key


def traverse(
    G: nx.MultiDiGraph,
    nodes: Iterable[Any] | Iterable[tuple[Any, float]],
    *,
    edge_types: Collection[str] | None = None,
    time_window: TimeWindow | None = None,
    types: Collection[str] | None = None,
    per_hop: int = 15,
    depth: int = 1,
    decay: float = 0.5,
    relevance: Relevance | None = None,
    exclude: Collection[Any] = (),
) -> list[tuple[Any, float]]:
    """Follow edges (both directions) out of seed nodes, one or two hops.

    A neighbour's score is its best parent's score times ``decay`` (so ``decay ** hop`` for
    a seed of score 1), times ``(1 + relevance(node)) / 2`` when ``relevance`` is given
    (e.g. the cosine of the node text and the query). Each hop keeps its ``per_hop`` best
    new nodes (ties by node id); the next hop starts from those. Seeds and nodes already
    reached are never returned again. The graph is only read.

    Args:
        G: A PEC2F graph.
        nodes: Seed node ids, or ``(node, score)`` pairs (a bare id scores 1.0); unknown ids
            are ignored.
        edge_types: Edge types (keys) to follow; all when ``None``.
        time_window: ``(start, end)``, aware datetimes or ``None`` (open): only neighbours whose
            time overlaps ``[start, end)`` are kept (see :func:`in_window`); a node without
            any time is dropped.
        types: Node types that may be reached (e.g. the record types, to keep Claims out);
            all when ``None``.
        per_hop: At most this many new nodes per hop.
        depth: Number of hops, 1 or 2.
        decay: Score factor per hop, in (0, 1].
        relevance: Optional ``node -> similarity in [-1, 1]``.
        exclude: Nodes already known (e.g. the caller's frontier): never returned nor passed through.

    Returns:
        ``(node, score)`` pairs of the nodes reached, best first.

    Raises:
        InvalidInputError: If ``depth`` is not 1 or 2, ``per_hop`` < 1, ``decay`` is outside
            (0, 1], or the window is malformed.

    Example:
        >>> G = nx.MultiDiGraph()
        >>> G.add_edge("person:leo", "event:t1#0", key="PARTICIPATED_IN")
        'PARTICIPATED_IN'
        >>> G.add_edge("event:t1#0", "concept:climbing", key="MENTIONS")
        'MENTIONS'
        >>> traverse(G, ["person:leo"], depth=2)
        [('event:t1#0', 0.5), ('concept:climbing', 0.25)]
        >>> traverse(G, ["concept:climbing"], edge_types={"PARTICIPATED_IN"})
        []
    """
    if isinstance(depth, bool) or depth not in (1, 2):
        raise InvalidInputError(f"depth={depth!r} must be 1 or 2")
    per_hop = positive_int(per_hop, "per_hop")
    if not 0.0 < decay <= 1.0:
        raise InvalidInputError(f"decay={decay!r} must be in (0, 1]")
    window = _check_window(time_window)
    frontier = {n: s for n, s in _seeds(nodes).items() if n in G}
    seen = set(frontier) | set(exclude)
    out: dict[Any, float] = {}
    for _ in range(depth):
        reached: dict[Any, float] = {}
        for node, score in frontier.items():
            for nb, _key in _incident(G, node, edge_types):
                if nb in seen:
                    continue
                s = score * decay
                if s <= reached.get(nb, -np.inf):
                    continue
                reached[nb] = s
        candidates = []
        for nb, s in reached.items():
            if types is not None and G.nodes[nb].get("type") not in types:
                continue
            if window is not None and not in_window(G, nb, window):
                continue
            if relevance is not None:
                s *= (1.0 + max(-1.0, min(1.0, float(relevance(nb))))) / 2.0
            candidates.append((nb, s))
        candidates.sort(key=lambda kv: (-kv[1], str(kv[0])))
        kept = candidates[:per_hop]
        if not kept:
            break
        seen.update(n for n, _ in kept)
        out.update(kept)
        frontier = dict(kept)
    return sorted(out.items(), key=lambda kv: (-kv[1], str(kv[0])))


#: Node types whose ``MENTIONS`` lead :func:`intersect` one hop further (Person -> Event -> Concept).
_VIA_TYPES = frozenset({NodeType.EVENT, NodeType.FACT})


def _edge_turns(G: nx.MultiDiGraph, u: Any, v: Any, key: str) -> set[str]:
    return set(G.edges[u, v, key].get("provenance", ()))


def _neighbourhood(
    G: nx.MultiDiGraph, entity: Any, relations: Collection[str], types: Collection[str] | None
) -> dict[Any, set[str]]:
    """Nodes linked to ``entity`` by ``relations`` (and Concepts one MENTIONS further through
    Events / Facts), each with the turns supporting the link."""
    support: dict[Any, set[str]] = {}

    def allowed(n: Any) -> bool:
        return n != entity and (types is None or G.nodes[n].get("type") in types)

    for nb, key in _incident(G, entity, relations):
        if not allowed(nb):
            continue
        edge = (entity, nb, key) if G.has_edge(entity, nb, key) else (nb, entity, key)
        turns = _edge_turns(G, *edge) or set(G.nodes[nb].get("provenance", ()))
        support.setdefault(nb, set()).update(turns)
        if G.nodes[nb].get("type") in _VIA_TYPES and EdgeType.MENTIONS in relations:
            for _, concept, k2 in G.out_edges(nb, keys=True):
                if k2 != EdgeType.MENTIONS or not allowed(concept):
                    continue
                if G.nodes[concept].get("type") != NodeType.CONCEPT:
                    continue
                support.setdefault(concept, set()).update(_edge_turns(G, nb, concept, k2) or turns)
    return support


def intersect(
    G: nx.MultiDiGraph,
    entity_nodes: Sequence[Any],
    *,
    relations: Collection[str] = RELATION_EDGES,
    per_entity: int = 10,
    types: Collection[str] | None = None,
    relevance: Relevance | None = None,
) -> list[tuple[Any, float]]:
    """What several entities share: nodes in the overlap of their neighbourhoods.

    An entity's neighbourhood is every node linked to it by one of ``relations`` (either
    direction), plus the Concepts that its Events and Facts ``MENTIONS`` (so Person ->
    Event -> Concept counts: two people who both went climbing share ``concept:climbing``).
    Each entity keeps its ``per_entity`` best candidates for the comparison: first the nodes
    that more of the entities reach, then by the number of turns supporting the link (times
    ``(1 + relevance) / 2`` when given), then by node id. A node is returned when it is a
    candidate of every entity; its score is the mean, over the entities, of its support
    divided by the best support among that entity's candidates, in (0, 1]. So at most
    ``per_entity`` nodes come back. The graph is only read.

    Args:
        G: A PEC2F graph.
        entity_nodes: Two or more node ids (Persons, usually; unknown ids are ignored).
        relations: Edge types that define a neighbourhood (default: ``LIKES``, ``USES``,
            ``PARTICIPATED_IN``, ``MENTIONS``, ``HAS_ATTR``).
        per_entity: Candidates kept per entity.
        types: Node types that may be shared (e.g. the record types); all when ``None``.
        relevance: Optional ``node -> similarity in [-1, 1]`` to the question.

    Returns:
        ``(node, score)`` pairs, best first; empty if fewer than two known entities.

    Raises:
        InvalidInputError: If ``per_entity`` < 1.

    Example:
        >>> G = nx.MultiDiGraph()
        >>> G.add_edge("person:leo", "event:t1#0", key="PARTICIPATED_IN", provenance={"t1"})
        'PARTICIPATED_IN'
        >>> G.add_edge("event:t1#0", "concept:climbing", key="MENTIONS", provenance={"t1"})
        'MENTIONS'
        >>> G.add_edge("person:maya", "concept:climbing", key="LIKES", provenance={"t2"})
        'LIKES'
        >>> G.add_edge("person:maya", "concept:yoga", key="LIKES", provenance={"t3"})
        'LIKES'
        >>> for n in ("event:t1#0", "concept:climbing", "concept:yoga"):
        ...     G.nodes[n]["type"] = "Event" if n.startswith("event") else "Concept"
        >>> intersect(G, ["person:leo", "person:maya"])
        [('concept:climbing', 1.0)]
    """
    per_entity = positive_int(per_entity, "per_entity")
    entities = [e for e in dict.fromkeys(entity_nodes) if e in G]
    if len(entities) < 2:
        return []
    relations = frozenset(str(r) for r in relations)
    hoods = [_neighbourhood(G, entity, relations, types) for entity in entities]
    reach: dict[Any, int] = {}
    for hood in hoods:
        for node in hood:
            reach[node] = reach.get(node, 0) + 1
    per: list[dict[Any, float]] = []
    for hood in hoods:
        ranked = []
        for node, turns in hood.items():
            s = float(len(turns) or 1)
            if relevance is not None:
                s *= (1.0 + max(-1.0, min(1.0, float(relevance(node))))) / 2.0
            ranked.append((node, s))
        ranked.sort(key=lambda kv: (-reach[kv[0]], -kv[1], str(kv[0])))
        top = ranked[:per_entity]
        best = max((s for _, s in top), default=0.0) or 1.0
        per.append({n: s / best for n, s in top})
    shared = set(per[0]).intersection(*per[1:]) - set(entities)
    scored = [(n, sum(p[n] for p in per) / len(per)) for n in shared]
    return sorted(scored, key=lambda kv: (-kv[1], str(kv[0])))

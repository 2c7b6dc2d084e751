"""A read-only view of a :class:`~langmem_cog.memory.CogMemory` for the inspector (nothing is written).

``CogMemory.graph`` and ``CogMemory.sync_graph`` repair a namespace's graph that is missing or out of
step with the raw turns, and the repair is saved: a ``GET /api/graph`` after the graph file was deleted
used to write it again. :class:`ReadOnlyMemory` answers the same calls (``graph``, ``store``,
``config``, ``node_vectors``: what the operator loop and the retriever use) from the stored graph
as it is on disk, and, when that graph is missing, unreadable or out of step, from a graph rebuilt
in memory from the raw turns (kept in memory, never saved). Only existing public calls are used:
``GraphMemory.graph`` (which reads the files), and ``GraphMemory.rebuild`` on a private in-memory
``GraphMemory``.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog import CogMemConfig, make_turn
    >>> from langmem_cog.memory import CogMemory
    >>> mem = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
    >>> _ = mem.add_turns([make_turn(id="t0", namespace="doc-ro", speaker="Leo", text="I adopted a beagle.",
    ...                              timestamp="2023-05-08T10:00:00+00:00", position=0)])
    >>> view = ReadOnlyMemory(mem)
    >>> view.graph_state("doc-ro").rebuilt
    False
    >>> view.graph("doc-ro") is mem.graphs.graph("doc-ro")
    True
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from langmem_cog.errors import StoreError
from langmem_cog.graph.provenance import TurnRecords, turn_records
from langmem_cog.graph.store import GraphMemory
from langmem_cog.memory import CogMemory
from langmem_cog.records import validate_namespace

__all__ = ["GraphState", "ReadOnlyMemory"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphState:
    """The graph the inspector shows for a namespace.

    Attributes:
        graph: The graph (do not mutate it).
        rebuilt: Whether it was rebuilt in memory from the raw turns (the stored one is missing,
            unreadable or out of step with them); nothing was written either way.
        note: Why it was rebuilt (``None`` when it is the stored graph).
    """

    graph: nx.MultiDiGraph
    rebuilt: bool
    note: str | None = None


class ReadOnlyMemory:
    """What the inspector reads of a memory, without any write to disk.

    Duck-types the parts of :class:`~langmem_cog.memory.CogMemory` that the operator loop
    (:class:`~langmem_cog.graph.loop.GraphRetrieval`) and :class:`~langmem_cog.CogMemRetriever` use:
    ``store``, ``config``, ``embeddings``, ``node_vectors``, ``retrieval`` and ``graph(namespace)``;
    :meth:`sync_graph` is a no-op. Call :meth:`refresh` at the start of each request: within one
    request a namespace's graph is checked against the raw turns once.

    Args:
        memory: The memory to read.
    """

    def __init__(self, memory: CogMemory) -> None:
        self.memory = memory
        self.store = memory.store
        self.config = memory.config
        self.extractor = memory.extractor
        self.node_vectors = memory.node_vectors
        g = memory.graphs
        # The same settings as the memory's graphs, but in memory only: its rebuilds are never saved.
        self._scratch = GraphMemory(
            None, embeddings=g.embeddings, min_events=g.min_events, window_days=g.window_days, writer=g.writer,
            fuzzy_threshold=g.fuzzy_threshold, embedding_threshold=g.embedding_threshold,
        )
        self._rebuilt: dict[str, tuple[frozenset[str], nx.MultiDiGraph]] = {}
        self._current: dict[str, GraphState] = {}
        self._retrieval: Any = None
        self._retrieval_lock = threading.Lock()

    @property
    def embeddings(self) -> Any:
        """The memory's embedder."""
        return self.memory.embeddings

    @property
    def retrieval(self) -> Any:
        """This reader's operator loop (:class:`~langmem_cog.graph.loop.GraphRetrieval` over this reader's
        graphs, not the memory's), built on first use."""
        with self._retrieval_lock:
            if self._retrieval is None:
                from langmem_cog.graph.loop import GraphRetrieval

                self._retrieval = GraphRetrieval(self)  # type: ignore[arg-type]
            return self._retrieval

    def refresh(self) -> None:
        """Forget which graphs were checked (call once per request: the files may have changed)."""
        self._current.clear()

    def sync_graph(self, namespace: str) -> bool:
        """Never repairs anything (a reader does not write): always ``False``."""
        validate_namespace(namespace)
        return False

    def graph(self, namespace: str) -> nx.MultiDiGraph:
        """The namespace's graph as :meth:`graph_state` finds it (the stored vectors of its node texts are read
        on first use, never written)."""
        state = self.graph_state(namespace)
        self.node_vectors.load_or_embed(namespace)
        return state.graph

    def graph_revision(self, namespace: str) -> int:
        """A number that grows with every change made in memory to the graphs this reader shows (the memory's
        and its own rebuilds)."""
        return self.memory.graph_revision(namespace) + self._scratch.revisions.get(namespace, 0)

    def turn_records(self, namespace: str) -> Mapping[str, TurnRecords]:
        """Per turn id, the claims, events and state facts of the namespace's graph as :meth:`graph` finds it."""
        return turn_records(self.graph(namespace))

    def graph_state(self, namespace: str) -> GraphState:
        """The stored graph when it is in step with the raw turns, else one rebuilt in memory from them.

        In step means what :meth:`CogMemory.sync_graph` checks: the union of the nodes' provenance and
        the graph's applied turns both equal the raw turn ids. The rebuilt graph is kept (per set of
        raw turn ids) so a namespace is rebuilt once, not per request.
        """
        validate_namespace(namespace)
        state = self._current.get(namespace)
        if state is not None:
            return state
        raw = frozenset(t.id for t in self.store.get_turns(namespace))
        note = None
        try:
            G = self.memory.graphs.graph(namespace)  # reads the files (a missing file: an empty graph)
        except StoreError as exc:
            G, note = None, f"the stored graph is unreadable ({exc})"
        if G is not None:
            derived: set[str] = set()
            for _, d in G.nodes(data=True):
                derived |= set(d.get("provenance", ()))
            if derived == raw and set(G.graph.get("turns", ())) == raw:
                state = GraphState(G, rebuilt=False)
            else:
                note = ("the stored graph is missing" if not G.graph.get("turns") and not G.number_of_nodes()
                        else "the stored graph is out of step with the raw turns")
        if state is None:
            state = GraphState(self._rebuild(namespace, raw, note or ""), rebuilt=True,
                               note=f"{note}: shown as rebuilt in memory from the raw turns (nothing was written)")
        self._current[namespace] = state
        return state

    def _rebuild(self, namespace: str, raw: frozenset[str], why: str) -> nx.MultiDiGraph:
        kept = self._rebuilt.get(namespace)
        if kept is not None and kept[0] == raw:
            return kept[1]
        logger.warning("inspector: graph of namespace %r: %s; rebuilding it in memory only (not saved)",
                       namespace, why)
        G = self._scratch.rebuild(namespace, self.store.get_turns(namespace), self.extractor)
        self._scratch.forget(namespace)  # the copy above is the only one kept
        self._rebuilt[namespace] = (raw, G)
        return G

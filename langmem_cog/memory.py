"""``CogMemory``: the raw-turn store and the PEC2F graph kept in step.

Raw turns are the source of truth; the graph is a derived index. ``add_turns``
writes the turns to Chroma and BM25 first, then extracts records and applies
them to the namespace's graph; ``delete_turns`` and ``forget`` remove from both;
``rebuild_graph`` recreates a graph from the raw store alone.

Example:
    >>> from langmem_cog import CogMemConfig, load_locomo
    >>> mem = CogMemory(CogMemConfig.preset("ephemeral"))  # doctest: +SKIP
    >>> conv = load_locomo("langmem_cog/data/sample_conversation.json")[0]  # doctest: +SKIP
    >>> mem.add_turns(conv.turns)  # doctest: +SKIP
    >>> G = mem.graph(conv.sample_id)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import networkx as nx
from langchain_core.embeddings import Embeddings

from langmem_cog.config import CogMemConfig
from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.schema import Extractor
from langmem_cog.graph.store import GraphMemory
from langmem_cog.records import Turn, validate_namespace
from langmem_cog.store import TurnStore

__all__ = ["CogMemory"]

logger = logging.getLogger(__name__)


class CogMemory:
    """Raw turns (Chroma + BM25) plus a PEC2F graph per namespace.

    Args:
        config: The configuration.
        embeddings: The embedder (built from the config when ``None``).
        extractor: Turns raw turns into records (default: the offline ``RuleExtractor``).
        client: An existing Chroma client.
        graph: An existing :class:`GraphMemory` (default: beside the store's data).
    """

    def __init__(
        self,
        config: CogMemConfig | None = None,
        *,
        embeddings: Embeddings | None = None,
        extractor: Extractor | None = None,
        client: Any | None = None,
        graph: GraphMemory | None = None,
    ) -> None:
        self.store = TurnStore(config, embeddings=embeddings, client=client)
        self.config = self.store.config
        if extractor is None:
            from langmem_cog.graph.rule_extractor import RuleExtractor

            extractor = RuleExtractor()
        if not isinstance(extractor, Extractor):
            raise InvalidInputError(f"extractor must have an extract(turns) method, got {type(extractor).__name__}")
        self.extractor = extractor
        self.graphs = graph if graph is not None else GraphMemory.from_config(self.config)
        self._lock = threading.RLock()

    @property
    def embeddings(self) -> Embeddings:
        """The embedder shared by the store and the graph operators."""
        return self.store.embeddings

    def add_turns(self, turns: Sequence[Turn]) -> list[str]:
        """Store turns, then extract and apply their records to each namespace's graph.

        The raw write happens first: if extraction fails, the turns are stored and
        :meth:`rebuild_graph` (or :meth:`sync_graph`) brings the graph up to date later.
        """
        ids = self.store.add_turns(turns)
        by_ns: dict[str, list[Turn]] = {}
        for t in turns if not isinstance(turns, Turn) else [turns]:
            by_ns.setdefault(t.namespace, []).append(t)
        for ns, group in by_ns.items():
            with self._lock:
                self.graphs.apply(ns, self.extractor.extract(group))
                self.graphs.save(ns)
        return ids

    def delete_turns(self, namespace: str, ids: Sequence[str]) -> int:
        """Delete turns from the raw store and everything derived only from them."""
        ids = list(ids)
        n = self.store.delete_turns(namespace, ids)
        with self._lock:
            self.graphs.delete_turns(namespace, ids)
            self.graphs.save(namespace)
        return n

    def forget(self, namespace: str) -> bool:
        """Forget a whole namespace: raw turns, BM25 index and graph."""
        existed = self.store.forget_namespace(namespace)
        with self._lock:
            existed = self.graphs.forget(namespace) or existed
        return existed

    def graph(self, namespace: str) -> nx.MultiDiGraph:
        """The namespace's PEC2F graph."""
        return self.graphs.graph(validate_namespace(namespace))

    def consolidate(self, namespace: str) -> list[str]:
        """Consolidate repeated events into Facts (idempotent); returns the new or updated fact ids."""
        with self._lock:
            out = self.graphs.consolidate(namespace)
            self.graphs.save(namespace)
        return out

    def rebuild_graph(self, namespace: str) -> nx.MultiDiGraph:
        """Recreate a namespace's graph from its raw turns alone."""
        turns = self.store.get_turns(namespace)
        with self._lock:
            G = self.graphs.rebuild(namespace, turns, self.extractor)
            self.graphs.save(namespace)
        return G

    def sync_graph(self, namespace: str) -> bool:
        """Rebuild the graph if its provenance does not match the raw store (e.g. after a crash).

        Every applied turn is in the provenance of at least its speaker's Person node, so the
        union of node provenance equals the raw turn ids exactly when the graph is in step.

        Returns:
            Whether a rebuild was needed.
        """
        raw = {t.id for t in self.store.get_turns(namespace)}
        G = self.graph(namespace)
        derived: set[str] = set()
        for _, d in G.nodes(data=True):
            derived |= set(d.get("provenance", ()))
        if derived == raw:
            return False
        logger.warning("graph of namespace %r is out of step with the raw store: rebuilding", namespace)
        self.rebuild_graph(namespace)
        return True

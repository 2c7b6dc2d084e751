"""Values derived from a namespace's graph, made once per state of the graph.

A value computed from a whole graph (each turn's records, the anchor's node texts) stays valid while the
namespace's graph is the same object at the same revision (:attr:`~langmem_cog.graph.store.GraphMemory.revisions`,
bumped by every change made through the graph memory), so queries on an unchanged graph share it.

Example:
    >>> import networkx as nx
    >>> cache, G = RevisionCache[int](), nx.MultiDiGraph()
    >>> cache.get("alice", G, 0, lambda: 1), cache.get("alice", G, 0, lambda: 2), cache.get("alice", G, 1, lambda: 3)
    (1, 1, 3)
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import networkx as nx

__all__ = ["RevisionCache"]

V = TypeVar("V")


class RevisionCache(Generic[V]):
    """Values derived from namespaces' graphs, each made again only when the graph object or its revision
    changed. The graphs are held weakly; safe to share between threads; the values returned are shared and
    must not be changed.

    Args:
        size: At most this many values kept, the least recently used dropped first (``None``: no bound; the
            owner drops a namespace's values when it lets the namespace go, :meth:`drop`).
    """

    def __init__(self, size: int | None = None) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[str, Hashable], tuple[Any, int, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, namespace: str, G: nx.MultiDiGraph, revision: int, make: Callable[[], V],
            variant: Hashable = None) -> V:
        """The value of ``G``, the graph of ``namespace`` at ``revision`` (one per ``variant``), made by
        ``make()`` unless kept."""
        key = (namespace, variant)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0]() is G and entry[1] == revision:
                self._entries.move_to_end(key)
                return entry[2]
        value = make()
        with self._lock:
            self._entries[key] = (weakref.ref(G), revision, value)
            self._entries.move_to_end(key)
            while self.size is not None and len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value

    def drop(self, namespace: str) -> None:
        """Forget the values of a namespace (closed or forgotten)."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == namespace]:
                del self._entries[key]

"""What a raw-turn store holds of each namespace: its lock, Chroma collection, in-memory copy, BM25 and context indexes.

:class:`Namespaces` owns the per-namespace state of a :class:`~langmem_cog.store.TurnStore`: the lock each
operation on a namespace holds, the open Chroma collections, the in-memory copies (:class:`Cache`), the BM25
indexes and the context-vector indexes, each opened on first use. It also checks a vector dimension against
a namespace's stored vectors, drops a namespace's state (one namespace, or all of them after another
process wrote) so the next use reloads it from Chroma, the source of truth, and removes a namespace's
local files (its BM25 log and context vectors).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from langmem_cog.config import CogMemConfig
from langmem_cog.context import ContextIndex
from langmem_cog.errors import ConfigError, StoreError
from langmem_cog.lexical import LexicalIndex
from langmem_cog.records import validate_namespace
from langmem_cog.storage.bm25 import remove_stale_temp
from langmem_cog.storage.cache import Cache
from langmem_cog.storage.chroma import COLLECTION_PREFIX, NamespaceGone, collection_name

__all__ = ["Namespaces"]

logger = logging.getLogger("langmem_cog.store")  # the store's logger, as before the split

#: How many collections :meth:`Namespaces.stored` lists per call to Chroma, and how many of them the next
#: call lists again.
LIST_PAGE = 500
LIST_OVERLAP = 50


class Namespaces:
    """The per-namespace state of a store: locks, collections, in-memory copies, BM25 and context indexes.

    The four per-namespace maps (:attr:`collections`, :attr:`caches`, :attr:`lexical`, :attr:`contexts`)
    are filled on first use and emptied by :meth:`drop` and :meth:`drop_all`; what is dropped is reloaded
    from Chroma on the next use. At most ``config.open_namespaces`` namespaces hold state: using one more
    closes the least recently used one whose lock no other thread holds (its state dropped, then
    :attr:`on_close` told), so memory grows with the namespaces in use, not with every namespace touched.

    Args:
        config: The store's configuration (the data directory, the Chroma mode, BM25's parameters, whether
            context vectors are on).
        client: Returns the store's current Chroma client (it changes when the embedded system is reopened).
        embedding_function: The embedding function given to Chroma with every collection.
        embed: Embeds texts (L2-normalised float32 rows; the context vectors' embedder).
        embedder_name: The embedder's name, for the message of a vector dimension that does not fit.
        dir_lock_unless_writing: Holds the data directory lock unless a writer thread of this process holds
            it, and yields whether it does (the context vectors' files are written only then).

    Example:
        >>> from contextlib import nullcontext
        >>> spaces = Namespaces(CogMemConfig.preset("ephemeral"), client=lambda: None, embedding_function=None,
        ...                     embed=lambda texts: np.zeros((len(texts), 1)), embedder_name="Fake",
        ...                     dir_lock_unless_writing=lambda: nullcontext(True))
        >>> spaces.lexical_index("alice").path is None, spaces.context_path("alice")
        (True, None)
    """

    def __init__(
        self,
        config: CogMemConfig,
        *,
        client: Callable[[], Any],
        embedding_function: Any,
        embed: Callable[[list[str]], np.ndarray],
        embedder_name: str,
        dir_lock_unless_writing: Callable[[], AbstractContextManager[bool]],
    ) -> None:
        self.config = config
        self.data_dir = config.resolved_data_dir()
        self.persistent = config.chroma_mode != "ephemeral"
        self._client = client
        self._ef = embedding_function
        self._embed = embed
        self._embedder_name = embedder_name
        self._dir_lock_unless_writing = dir_lock_unless_writing
        self._lock = threading.RLock()
        self._locks: dict[str, threading.RLock] = {}
        #: The open Chroma collection of each namespace.
        self.collections: dict[str, Any] = {}
        #: The in-memory copy (turns, vectors, context vectors) of each namespace.
        self.caches: dict[str, Cache] = {}
        #: The BM25 index of each namespace.
        self.lexical: dict[str, LexicalIndex] = {}
        #: The context-vector index of each namespace that has one open.
        self.contexts: dict[str, ContextIndex] = {}
        # The namespaces that may hold state, least recently used first.
        self._open: OrderedDict[str, None] = OrderedDict()
        #: Called (outside every lock of this object) with the namespaces closed to stay within
        #: ``config.open_namespaces``; the memory releases their graphs there.
        self.on_close: list[Callable[[list[str]], Any]] = []

    def stored(self) -> list[str]:
        """The namespaces that hold a collection on the client, sorted.

        The collections are listed a page (:data:`LIST_PAGE`) at a time: Chroma builds every listed
        collection's record at once, and a process that listed 10,000 in one call kept some 200-300 MB more
        resident for good (freed, but not given back by the allocator). Pages overlap by
        :data:`LIST_OVERLAP`, so a collection forgotten meanwhile (which shifts the later ones back) makes
        none of them missed; :meth:`~langmem_cog.storage.access.DataDirAccess.steady` lists again when a
        write landed meanwhile.
        """
        client = self._client()
        out: set[str] = set()
        offset = 0
        while True:
            page = client.list_collections(limit=LIST_PAGE, offset=offset)
            for col in page:
                name = col if isinstance(col, str) else col.name
                if not name.startswith(COLLECTION_PREFIX):
                    continue
                meta = (col.metadata if not isinstance(col, str) else client.get_collection(name).metadata) or {}
                if "namespace" in meta:
                    out.add(meta["namespace"])
            if len(page) < LIST_PAGE:
                return sorted(out)
            offset += LIST_PAGE - LIST_OVERLAP

    def lock(self, namespace: str) -> threading.RLock:
        """The lock of a namespace (every per-namespace operation holds it).

        Raises:
            InvalidNamespaceError: If the namespace id is malformed.
        """
        validate_namespace(namespace)  # every per-namespace operation goes through here
        with self._lock:
            lock = self._locks.setdefault(namespace, threading.RLock())
        self._use(namespace)
        return lock

    def _use(self, namespace: str) -> None:
        """Mark a namespace as the most recently used, closing the least recently used ones beyond
        ``config.open_namespaces`` (a namespace whose lock another thread holds stays open for now)."""
        closed: list[str] = []
        with self._lock:
            self._open[namespace] = None
            self._open.move_to_end(namespace)
            excess = len(self._open) - self.config.open_namespaces
            for victim in list(self._open)[:max(0, excess)]:
                lock = self._locks.get(victim)
                if lock is not None and not lock.acquire(blocking=False):
                    continue  # in use by another thread: closed by a later use
                try:
                    self.drop(victim, contexts=True)
                finally:
                    if lock is not None:
                        lock.release()
                closed.append(victim)
        if closed:
            logger.debug("closed %d namespace(s) to keep %d open", len(closed), self.config.open_namespaces)
            for listener in self.on_close:
                listener(closed)

    def collection(self, namespace: str, create: bool) -> Any | None:
        """The namespace's Chroma collection, created with ``create``; ``None`` if there is none.

        Raises:
            StoreError: If Chroma cannot open it.
        """
        col = self.collections.get(namespace)
        if col is not None:
            return col
        name = collection_name(namespace)
        client = self._client()
        if create:
            col = client.get_or_create_collection(
                name=name,
                metadata={"namespace": namespace, "hnsw:space": "cosine"},
                embedding_function=self._ef,
            )
        else:
            try:
                col = client.get_collection(name=name, embedding_function=self._ef)
            except Exception as exc:  # chromadb raises NotFoundError / ValueError by version
                if "does not exist" in str(exc) or "not found" in str(exc).lower():
                    return None
                raise StoreError(f"cannot open the collection of namespace {namespace!r}: {exc}") from exc
        self.collections[namespace] = col
        self._use(namespace)
        return col

    def forget_collection(self, namespace: str) -> None:
        """Drop the open collection of a namespace (reopened from Chroma on the next use)."""
        with self._lock:
            self.collections.pop(namespace, None)

    def lexical_path(self, namespace: str) -> Path:
        """Where the namespace's BM25 log lives (``data_dir/lexical/<collection>.jsonl``)."""
        return self.data_dir / "lexical" / f"{collection_name(namespace)}.jsonl"

    def lexical_index(self, namespace: str) -> LexicalIndex:
        """The namespace's BM25 index (its log read on first use; in memory only for an ephemeral store)."""
        idx = self.lexical.get(namespace)
        if idx is None:
            path = self.lexical_path(namespace) if self.persistent else None
            idx = LexicalIndex(path, k1=self.config.bm25_k1, b=self.config.bm25_b)
            self.lexical[namespace] = idx
            self._use(namespace)
        return idx

    def turns_path(self, namespace: str) -> Path | None:
        """Where the namespace's turns file lives (``data_dir/turns/<collection>.bin``; ``None`` without a data
        directory); see :mod:`langmem_cog.storage.turnfile`."""
        return self.data_dir / "turns" / f"{collection_name(namespace)}.bin" if self.persistent else None

    def context_path(self, namespace: str) -> Path | None:
        """The folder of the namespace's context vectors (``None`` for an ephemeral store)."""
        return self.data_dir / "context" / collection_name(namespace) if self.persistent else None

    def context_index(self, namespace: str) -> ContextIndex:
        """The namespace's context-vector index (opened on first use)."""
        idx = self.contexts.get(namespace)
        if idx is None:
            idx = self.contexts[namespace] = ContextIndex(self._embed, self.context_path(namespace))
            self._use(namespace)
        return idx

    def context_matrix(self, namespace: str, cache: Cache, *, create: bool = True) -> np.ndarray | None:
        """The namespace's context vectors aligned with ``cache.ids``.

        ``None`` when the config turns them off, or with ``create=False`` when the namespace has none
        yet (they are built on the first query that asks for them, then refreshed at every add and delete).
        New rows are written to disk only under the data directory lock (see ``dir_lock_unless_writing``).
        """
        if not self.config.context_vectors:
            return None
        if not create and namespace not in self.contexts:
            path = self.context_path(namespace)
            if path is None or not path.is_dir():
                return None
        if cache.ctx is None:  # reset by every append and removal
            idx = self.context_index(namespace)
            cache.ctx = idx.matrix(cache.turns, persist=False)  # embeds without holding up other processes
            with self._dir_lock_unless_writing() as persist:
                if persist:
                    idx.flush()
        return cache.ctx

    def refresh_context(self, namespace: str, cache: Cache) -> None:
        """Keep context vectors up to date once a cascade has used them; a file error only costs a recompute."""
        try:
            self.context_matrix(namespace, cache, create=False)
        except OSError as exc:
            cache.ctx = None
            logger.warning("namespace %r: cannot write context vectors (%s): they are recomputed on use",
                           namespace, exc)

    def check_dimension(self, namespace: str, stored: np.ndarray | None, got: int, *,
                        collection: bool = False) -> None:
        """Raise unless vectors of dimension ``got`` fit the namespace's stored vectors ``stored``.

        With ``collection``, a namespace whose turns were all deleted is checked against the dimension
        its Chroma collection recorded (Chroma refuses other vectors).

        Raises:
            ConfigError: If the dimensions differ (the store was built with another embedder).
        """
        want: int | None = None
        if stored is not None and stored.ndim == 2 and len(stored):
            want = int(stored.shape[1])
        elif collection:
            col = self.collection(namespace, create=False)
            recorded = getattr(getattr(col, "_model", None), "dimension", None)  # Chroma's collection model
            want = recorded if isinstance(recorded, int) and not isinstance(recorded, bool) else None
        if want is not None and want != int(got):
            raise ConfigError(self.dimension_message(namespace, want, int(got)))

    def dimension_message(self, namespace: str, stored: int, got: int) -> str:
        """The message of vectors of dimension ``got`` refused by a namespace built with ``stored`` ones."""
        where = {"persistent": f"the data directory {self.data_dir}", "http": "the Chroma server's collection"}.get(
            self.config.chroma_mode, "this store"
        )
        return (
            f"{where} was built with {stored}-dimensional vectors (namespace {namespace!r}), but the embedder "
            f"{self._embedder_name} gives {got}-dimensional ones: open it with the embedder it was built "
            "with (the same CogMemConfig.embedder or embeddings=), or re-ingest the turns into a new data directory "
            "with this embedder"
        )

    def drop(self, namespace: str, *, contexts: bool = False) -> None:
        """Forget what is held in memory of a namespace (reloaded from Chroma on the next use): its collection,
        in-memory copy and BM25 index, and with ``contexts`` its context-vector index too."""
        with self._lock:
            self.collections.pop(namespace, None)
            self.caches.pop(namespace, None)
            self.lexical.pop(namespace, None)
            if contexts:
                self.contexts.pop(namespace, None)
                self._open.pop(namespace, None)

    def remove_local_files(self, namespace: str) -> None:
        """Remove the namespace's local files: its BM25 log (and the temp copies a crashed compaction left),
        its turns file and its context vectors (the caller holds the namespace lock and the data directory lock).

        Raises:
            OSError: If a file cannot be removed.
        """
        path = self.lexical_path(namespace)
        path.unlink(missing_ok=True)
        remove_stale_temp(path)
        self.remove_turns_file(namespace)
        ContextIndex(self._embed, self.context_path(namespace)).forget()

    def remove_turns_file(self, namespace: str) -> None:
        """Remove the namespace's turns file and the temporary copies a crashed rewrite left (they hold turn text).

        Raises:
            OSError: If a file cannot be removed.
        """
        path = self.turns_path(namespace)
        if path is not None:
            path.unlink(missing_ok=True)
            remove_stale_temp(path)

    def drop_handles(self) -> None:
        """Forget every open collection handle (the client changed; reopened on the next use)."""
        with self._lock:
            self.collections.clear()

    def drop_all(self) -> None:
        """Forget what is held in memory of every namespace (after another process wrote)."""
        with self._lock:
            self.caches.clear()
            self.contexts.clear()
            self.lexical.clear()
            self.collections.clear()
            self._open.clear()

    def gone(self, namespace: str) -> NamespaceGone:
        """Drop what is held of a namespace whose collection vanished under it (another process or store
        object forgot it); returns the error for readers to raise."""
        self.drop(namespace, contexts=True)
        logger.info("namespace %r was forgotten by another process or store while being read", namespace)
        return NamespaceGone(
            f"namespace {namespace!r} holds no turns: it was forgotten (by another process or store) while "
            "being read; add turns again, or check the namespace id (TurnStore.namespaces() lists the stored ones)"
        )

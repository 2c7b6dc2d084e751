"""Loading a namespace's in-memory copy from Chroma, with its BM25 index brought in line with it.

:class:`CacheLoader` reads a namespace's turns and vectors from its Chroma collection (the source of truth),
or from its turns file when that holds exactly the collection's ids (:mod:`~langmem_cog.storage.turnfile`),
into a :class:`~langmem_cog.storage.cache.Cache` in chronological order, on the namespace's first use, and
repairs the namespace's BM25 index from it: entries of turns Chroma no longer holds are dropped, turns the
index lacks (a crash between the two writes of an add, or, on a Chroma server, other workers' writes) are
indexed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from langmem_cog.loading import gc_paused
from langmem_cog.records import Turn
from langmem_cog.storage.bm25 import lexical_add
from langmem_cog.storage.cache import Cache
from langmem_cog.storage.chroma import collection_gone, evicted_index_failed, turn_from_chroma
from langmem_cog.storage.inputs import order_key
from langmem_cog.storage.namespaces import Namespaces
from langmem_cog.storage.server import drift_read
from langmem_cog.storage.sync import GET_BATCH, Tombstones, fetch_turns
from langmem_cog.storage.turnfile import TurnFileError, read_turns, write_turns

__all__ = ["CacheLoader"]

logger = logging.getLogger("langmem_cog.store")  # the store's logger, as before the split


class CacheLoader:
    """Loads the in-memory copies of a store's namespaces from Chroma, repairing their BM25 indexes.

    Args:
        spaces: The store's per-namespace state (the loaded copies go to its ``caches``).
        tombstones: The store's delete records (``http`` mode).
        shared: Whether other workers may write the store's collections (``http`` mode).
        dir_lock_unless_writing: Holds the data directory lock unless a writer thread of this process holds
            it, and yields whether it does (the BM25 log is rewritten only then; otherwise the repair stays
            in memory).
        restart_embedded: Starts a new embedded Chroma system in place of the process's current one (a load
            that failed because Chroma could not load an evicted HNSW index again is retried once after it).
        loaded: Called after each namespace read from Chroma under the data directory lock (it may start a
            new embedded system to close the HNSW indexes the reads loaded).
        reading: Marks a load from Chroma in flight (no routine restart of the embedded system under it).
    """

    def __init__(self, spaces: Namespaces, tombstones: Tombstones, *, shared: bool,
                 dir_lock_unless_writing: Callable[[], AbstractContextManager[bool]],
                 restart_embedded: Callable[[], None], loaded: Callable[[], None],
                 reading: Callable[[], AbstractContextManager[None]]) -> None:
        self._spaces = spaces
        self._tombstones = tombstones
        self.shared = shared
        self._dir_lock_unless_writing = dir_lock_unless_writing
        self._restart_embedded = restart_embedded
        self._loaded = loaded
        self._reading = reading

    def load(self, namespace: str) -> Cache:
        """The namespace's in-memory copy, read from Chroma on first use (an empty one if it does not exist).

        The caller holds the namespace lock.

        Raises:
            UnknownNamespaceError: If the collection vanished while being read (a concurrent forget).
        """
        cache = self._spaces.caches.get(namespace)
        if cache is not None:
            return cache
        with self._dir_lock_unless_writing() as persist, gc_paused(), self._reading():  # gc: see loading.gc_paused
            try:
                cache = self.read(namespace, persist=persist)
            except Exception as exc:  # chromadb's errors share no base class worth naming
                if not (persist and evicted_index_failed(exc)):
                    raise
                # Chroma could not load again an HNSW index its cache evicted: a new embedded system can.
                logger.info("namespace %r: %s", namespace, exc)
                self._restart_embedded()
                cache = self.read(namespace, persist=persist)
            if persist:
                self._loaded()
        self._spaces.caches[namespace] = cache
        return cache

    def read(self, namespace: str, *, persist: bool) -> Cache:
        """Load a namespace from Chroma (an empty cache if it does not exist).

        Args:
            namespace: The namespace.
            persist: Whether a repair of the BM25 index may rewrite its log (else it stays in memory).

        Raises:
            UnknownNamespaceError: If the collection vanished while being read (a concurrent forget).
        """
        cache = Cache()
        col = self._spaces.collection(namespace, create=False)
        if col is not None:
            turns: list[Turn] = []
            embs: list[np.ndarray] = []
            held: tuple[list[Turn], np.ndarray] | None = None
            path: Path | None = None
            if self.shared:
                # The delete records first (a re-add follows its record, see ServerSync.catch_up), then one listing
                # of the ids and reads by id: other workers' writes cannot shift pages under the read.
                cache.tombs = self._tombstones.ids(col)
                try:
                    ids = drift_read(lambda: col.get(include=[])["ids"], what=f"namespace {namespace!r}: listing ids")
                except Exception as exc:  # as below
                    if collection_gone(exc):
                        raise self._spaces.gone(namespace) from exc
                    raise
                turns, fetched = fetch_turns(namespace, col, ids, gone=self._spaces.gone)
                embs = [fetched] if turns else []
            else:
                path = self._spaces.turns_path(namespace)
                try:
                    held = self._turns_file(namespace, col, path, locked=persist)
                    if held is not None:
                        turns, embs = held[0], [held[1]]
                    else:
                        total = col.count()
                        for offset in range(0, total, GET_BATCH):
                            got = col.get(include=["embeddings", "documents", "metadatas"], limit=GET_BATCH,
                                          offset=offset)
                            for tid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
                                turns.append(turn_from_chroma(tid, doc, meta))
                            embs.append(np.asarray(got["embeddings"], dtype=np.float32))
                except Exception as exc:  # chromadb's errors share no base class worth naming
                    if collection_gone(exc):
                        raise self._spaces.gone(namespace) from exc
                    raise
            order = sorted(range(len(turns)), key=lambda i: order_key(turns[i]))
            emb = np.vstack(embs)[order] if embs else np.zeros((0, 0), dtype=np.float32)
            cache.append([turns[i] for i in order], emb)
            if not self.shared and held is None and persist and path is not None:
                self._rewrite_turns_file(namespace, path, cache)
            self.repair_lexical(namespace, cache, persist=persist)
        return cache

    def _turns_file(self, namespace: str, col: Any, path: Path | None, *,
                    locked: bool) -> tuple[list[Turn], np.ndarray] | None:
        """The namespace's turns and vectors from its turns file, when it reads whole and holds exactly the
        collection's ids (see :mod:`~langmem_cog.storage.turnfile`); ``None`` to read them from Chroma.

        Without the data directory lock (``locked`` false: a writer thread of this process holds it) a torn
        last record is a write in progress, not damage: it is logged at DEBUG level only."""
        if path is None:
            return None
        try:
            turns, emb = read_turns(path, namespace)
        except FileNotFoundError:
            return None
        except (TurnFileError, OSError) as exc:
            logger.log(logging.WARNING if locked else logging.DEBUG,
                       "namespace %r: the turns file cannot be used (%s): reading the turns from Chroma", namespace, exc)
            return None
        ids = col.get(include=[])["ids"]
        mine = {t.id for t in turns}
        if len(mine) != len(turns) or mine != set(ids):
            logger.info("namespace %r: the turns file is out of step with Chroma (%d turns, Chroma %d): "
                        "reading the turns from Chroma", namespace, len(turns), len(ids))
            return None
        return turns, emb

    def _rewrite_turns_file(self, namespace: str, path: Path, cache: Cache) -> None:
        """Write the namespace's turns file from a copy just read from Chroma (the caller holds the data
        directory lock); a file that cannot be written only costs the next load a read from Chroma."""
        try:
            write_turns(path, cache.turns, cache.emb if cache.emb is not None else np.zeros((0, 0), np.float32))
        except OSError as exc:
            logger.warning("namespace %r: cannot write the turns file %s (%s): the next load reads Chroma again",
                           namespace, path, exc)

    def repair_lexical(self, namespace: str, cache: Cache, *, persist: bool) -> None:
        """Bring the BM25 index in line with Chroma (after a crash between the two writes, or, in
        memory only when ``persist`` is false, a write another process is making)."""
        idx = self._spaces.lexical_index(namespace)
        have = set(idx.ids)
        want = set(cache.ids)
        extra = have - want
        missing = [t for t in cache.turns if t.id not in have]
        # With a Chroma server, a local BM25 log behind the server is the normal state of a worker that
        # has no log yet or was stopped while others wrote: brought up to date at INFO, not as a repair.
        level = logging.INFO if self.shared else logging.WARNING
        if extra:
            if persist:
                logger.log(level, "namespace %r: dropping %d BM25 entries missing from Chroma", namespace, len(extra))
            try:
                idx.delete(list(extra), persist=persist)
            except OSError as exc:  # dropped in memory already; the log is compacted by a later write or open
                logger.warning("namespace %r: cannot rewrite the BM25 log (%s): repaired in memory only",
                               namespace, exc)
        if missing:
            if persist and self.shared:
                logger.info("namespace %r: indexing %d turns of the Chroma server missing from the local BM25 log",
                            namespace, len(missing))
            elif persist:
                logger.warning("namespace %r: re-indexing %d turns missing from BM25", namespace, len(missing))
            lexical_add(namespace, idx, missing, persist, "repaired")

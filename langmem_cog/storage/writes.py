"""The write path of a raw-turn store below its write lock: one namespace's turns into Chroma, then BM25.

:class:`TurnWriter` writes a namespace's new turns to its Chroma collection (the commit point of
``add_turns``), undoing a write that Chroma refused, then brings the derived files and indexes (the turns
file, BM25, context vectors) up to date; it also reads what Chroma already holds of a call's ids, and refuses a write that would leave the
embedded database's disk nearly full. :meth:`TurnStore.add_turns <langmem_cog.store.TurnStore.add_turns>`
checks the turns, embeds them, holds the locks and calls it once per namespace.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from langmem_cog.config import CogMemConfig
from langmem_cog.errors import ConfigError, StoreError
from langmem_cog.lexical import LexicalIndex
from langmem_cog.locking import DirLock
from langmem_cog.records import Turn
from langmem_cog.storage.cache import Cache
from langmem_cog.storage.chroma import collection_gone, collection_name, turn_from_chroma, turn_metadata
from langmem_cog.storage.files import EmbeddedFiles
from langmem_cog.storage.namespaces import Namespaces
from langmem_cog.storage.sync import GET_BATCH, ServerSync
from langmem_cog.storage.turnfile import append_turns, write_turns
from langmem_cog.storage.types import StageTimes

__all__ = ["DIMENSION_CLASH", "TurnWriter"]

logger = logging.getLogger("langmem_cog.store")  # the store's logger, as before the split

#: Chroma's refusal of vectors of another dimension than the collection's.
DIMENSION_CLASH = re.compile(r"expecting embedding with dimension of (\d+), got (\d+)")


class TurnWriter:
    """Writes a store's turns, one namespace at a time, to Chroma and the derived indexes.

    The caller holds the store's write lock and the namespace's lock around :meth:`write`.

    Args:
        config: The store's configuration (the data directory, the Chroma mode, ``min_free_mb``).
        spaces: The store's per-namespace state.
        files: The store's embedded database files.
        sync: The store's freshness state against a Chroma server (``http`` mode: other workers learn of
            a write from a new version token).
        load: Returns a namespace's in-memory copy, loaded from Chroma on first use (the caller holds the
            namespace lock).
        client: Returns the store's current Chroma client.
        dir_lock: The data directory's lock (``None`` for a store without a data directory).
        embed: The store's embedder of texts (L2-normalised rows).
        stage_times: Returns the store's accumulated timings, which :meth:`write` and :meth:`vectors` add to.
        shared: Whether other workers may write the store's collections (``http`` mode).
    """

    def __init__(self, config: CogMemConfig, spaces: Namespaces, files: EmbeddedFiles, sync: ServerSync, *,
                 load: Callable[[str], Cache], client: Callable[[], Any], dir_lock: DirLock | None,
                 embed: Callable[[list[str]], np.ndarray], stage_times: Callable[[], StageTimes],
                 shared: bool) -> None:
        self.config = config
        self.data_dir = config.resolved_data_dir()
        self._spaces = spaces
        self._files = files
        self._sync = sync
        self._load = load
        self._client = client
        self._dir_lock = dir_lock
        self._embed = embed
        self._stage_times = stage_times
        self.shared = shared

    def vectors(self, turns: list[Turn], known: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Vectors of ``turns`` by id: those in ``known``, the others embedded now (one batch)."""
        missing = [t for t in turns if t.id not in known]
        if missing:
            t0 = time.perf_counter()
            known = {**known, **dict(zip([t.id for t in missing], self._embed([t.memory_text for t in missing]),
                                         strict=True))}
            self._stage_times().embed += time.perf_counter() - t0
        return {t.id: known[t.id] for t in turns}

    def check_free_space(self, turns: list[Turn]) -> None:
        """Refuse a write of ``turns`` that would leave the data directory's disk nearly full.

        Chroma's embedded database does not fail cleanly on a full disk: a write can fail half-way
        ("Error in compaction") and the undo that follows can hang. So a write is refused before it
        starts when the free space minus an estimate of what it needs (16 KiB and 8 times the text
        per turn: the vector in the write-ahead log and the index, the metadata, the full-text
        index) is below ``CogMemConfig.min_free_mb``.

        Raises:
            StoreError: If the space is short (nothing was written), or the disk cannot be queried.
        """
        if self.config.chroma_mode != "persistent" or not self.config.min_free_mb or not turns:
            return
        try:
            free = shutil.disk_usage(self.data_dir).free
        except OSError as exc:
            raise StoreError(f"cannot read the free space of {self.data_dir} ({exc}): check that the data "
                             "directory exists and is readable, then retry the same call") from exc
        need = sum(16 * 1024 + 8 * len(t.text.encode("utf-8")) for t in turns)
        floor = self.config.min_free_mb * 2**20
        if free - need < floor:
            raise StoreError(
                f"only {free / 2**20:.1f} MiB free on the disk of {self.data_dir}: storing {len(turns)} turns "
                f"(about {need / 2**20:.1f} MiB) would leave less than CogMemConfig.min_free_mb="
                f"{self.config.min_free_mb} MiB. Nothing was written: free some space (or lower min_free_mb) "
                "and retry the same call"
            )

    def stored_versions(self, namespace: str, group: list[Turn]) -> dict[str, Turn]:
        """The turns of ``group``'s ids that Chroma already holds in ``namespace``, by id.

        Raises:
            StoreError: If the collection cannot be read (or the data directory is read-only).
        """
        col = self._spaces.collection(namespace, create=False)
        if col is None:
            return {}
        try:
            got = col.get(ids=[t.id for t in group], include=["documents", "metadatas"])
        except Exception as exc:  # forgotten meanwhile by another process: nothing stored there
            if not collection_gone(exc):
                if self._dir_lock is not None:  # a read-only data dir: say so (Chroma may fail a read there first)
                    self._dir_lock.check_writable()
                raise StoreError(f"cannot read the collection of namespace {namespace!r}: {exc}") from exc
            self._spaces.gone(namespace)
            return {}
        return {
            tid: turn_from_chroma(tid, doc, meta)
            for tid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }

    def indexed(self, namespace: str, group: list[Turn]) -> bool:
        """Whether every turn of ``group`` is in the namespace's cache and BM25 index."""
        with self._spaces.lock(namespace):
            cache = self._load(namespace)
            lexical = self._spaces.lexical_index(namespace)
            return all(t.id in cache.pos and t.id in lexical for t in group)

    def write(self, namespace: str, group: list[Turn], new: list[Turn], vectors: dict[str, np.ndarray]) -> None:
        """Write ``new`` (the turns of ``group`` not stored yet) to Chroma, then bring the derived
        indexes (BM25, context vectors) up to date for every turn of ``group``.

        Raises:
            StoreError: If Chroma refuses the write (undone when it can be) or the BM25 log cannot be written.
            ConfigError: If Chroma refuses vectors of another dimension than the collection's (undone).
        """
        cache = self._load(namespace)
        lexical = self._spaces.lexical_index(namespace)  # its log is read before Chroma holds the new turns
        # http mode: once Chroma holds the turns, other workers learn of them from a new version token,
        # written whatever happens next (the BM25 log may fail; a failed Chroma write may be half undone).
        announce = self.shared and (bool(new) or namespace in self._sync.unannounced)
        try:
            times, t0 = self._stage_times(), time.perf_counter()
            if new:
                emb = np.stack([vectors[t.id] for t in new])
                before = len(cache.ids)
                self._chroma_add(namespace, new, emb)
                cache.append(new, emb)
                self._append_turns_file(namespace, new, emb, first=before == 0)
            t1 = time.perf_counter()
            self._index_lexical(namespace, lexical, group)
            t2 = time.perf_counter()
            if new:
                self._spaces.refresh_context(namespace, cache)
            times.chroma, times.bm25 = times.chroma + t1 - t0, times.bm25 + t2 - t1
            times.context += time.perf_counter() - t2
        except BaseException:
            if announce:
                self._sync.announce(namespace, quiet=True)
            raise
        if announce:
            self._sync.announce(namespace)

    def _append_turns_file(self, namespace: str, turns: list[Turn], emb: np.ndarray, *, first: bool) -> None:
        """Append the turns Chroma now holds to the namespace's turns file (:mod:`~langmem_cog.storage.turnfile`),
        when the file holds the namespace's earlier turns or there are none (else the next load writes it
        whole from Chroma). A file that cannot be written is removed: the next load reads Chroma."""
        path = self._spaces.turns_path(namespace)
        if path is None or self.shared or not (first or path.exists()):
            return
        try:
            # Chroma's copy, as a load from Chroma reads it (its index stores the vectors normalised again).
            turns, emb = self._read_back(namespace, turns)
            if first:
                write_turns(path, turns, emb)  # whatever an earlier namespace of this name left there goes
            else:
                append_turns(path, turns, emb)
        except Exception as exc:  # OSError, or chromadb's (no base class worth naming): the file is only a copy
            logger.warning("namespace %r: cannot append to the turns file %s (%s): the next load reads Chroma",
                           namespace, path, exc)
            try:
                path.unlink(missing_ok=True)
            except OSError as again:
                logger.warning("namespace %r: cannot remove %s either (%s)", namespace, path, again)

    def _read_back(self, namespace: str, turns: list[Turn]) -> tuple[list[Turn], np.ndarray]:
        """The turns and vectors Chroma holds of ``turns``' ids, in their order.

        Raises:
            OSError: If Chroma does not hold them all (the turns file is then removed).
        """
        col = self._spaces.collection(namespace, create=False)
        if col is None:
            raise OSError(f"the collection of namespace {namespace!r} is gone")
        held: dict[str, tuple[Turn, np.ndarray]] = {}
        for start in range(0, len(turns), GET_BATCH):
            got = col.get(ids=[t.id for t in turns[start : start + GET_BATCH]],
                          include=["embeddings", "documents", "metadatas"])
            for tid, doc, meta, vec in zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"],
                                           strict=True):
                held[tid] = (turn_from_chroma(tid, doc, meta), np.asarray(vec, dtype=np.float32))
        if len(held) != len(turns):
            raise OSError(f"Chroma returned {len(held)} of the {len(turns)} turns written")
        return [held[t.id][0] for t in turns], np.stack([held[t.id][1] for t in turns])

    def _chroma_add(self, namespace: str, turns: list[Turn], emb: np.ndarray) -> None:
        """Add turns to the namespace's collection (the commit point of ``add_turns``).

        Raises:
            StoreError: If Chroma refuses the write. What Chroma may have taken is deleted first;
                the message says whether that worked (nothing stored) or not (retry the same call).
        """
        created = self._spaces.collection(namespace, create=False) is None
        col: Any = None
        try:
            col = self._spaces.collection(namespace, create=True)
            max_batch = getattr(self._client(), "get_max_batch_size", lambda: 5000)()
            for start in range(0, len(turns), max_batch):
                part = turns[start : start + max_batch]
                col.add(
                    ids=[t.id for t in part],
                    embeddings=emb[start : start + max_batch],
                    documents=[t.text for t in part],
                    metadatas=[turn_metadata(t) for t in part],
                )
        except Exception as exc:  # chromadb's errors share no base class worth naming
            undone = self._undo_chroma_add(namespace, col, [t.id for t in turns], created)
            dims = DIMENSION_CLASH.search(str(exc))
            if dims and undone:  # the collection's vectors have another dimension (checked before, by the cache)
                raise ConfigError(self._spaces.dimension_message(namespace, int(dims[1]), int(dims[2]))) from exc
            raise StoreError(self._chroma_failure(namespace, len(turns), exc, undone)) from exc

    def _chroma_failure(self, namespace: str, n: int, exc: BaseException, undone: bool) -> str:
        """The message of a failed Chroma write: what happened, what is stored, what to fix."""
        persistent = self.config.chroma_mode == "persistent"
        where = f"the data directory {self.data_dir}" if persistent else "the Chroma server"
        outcome = (
            "nothing of this call was stored"
            if undone
            else "some of them may be stored (undoing the write failed too); an identical retry completes the call"
        )
        return (
            f"Chroma refused to store {n} turns in namespace {namespace!r} ({type(exc).__name__}: {exc}); {outcome}. "
            f"Check that {where} has free space and is writable, then retry the same add_turns call"
        )

    def _undo_chroma_add(self, namespace: str, col: Any | None, ids: list[str], created: bool) -> bool:
        """Delete what a failed ``col.add`` may have stored; returns whether Chroma then holds none of ``ids``.

        When that cannot be confirmed, the namespace is dropped from memory so the next read reloads it from
        Chroma (the source of truth), whatever the failed write left there.
        """
        if col is None:
            return True
        try:
            col.delete(ids=ids)
            undone = not col.get(ids=ids, include=[])["ids"]
        except Exception as exc:  # a full disk fails the delete too
            logger.warning("namespace %r: cannot undo a failed Chroma write of %d turns: %s", namespace, len(ids), exc)
            undone = False
        if not undone:
            self._spaces.drop(namespace)
            return False
        try:
            self._files.purge_log(col, ids)  # their text stays out of Chroma's write-ahead log
            if created:
                self._drop_collection(namespace, col)
        except Exception as exc:  # the turns are gone from the collection: this is only tidying
            logger.warning("namespace %r: tidying after a failed Chroma write failed: %s", namespace, exc)
        return True

    def _drop_collection(self, namespace: str, col: Any) -> None:
        """Delete a collection that a failed first write created (so the namespace does not exist)."""
        segment_dirs = self._files.segment_dirs(col)
        self._spaces.drop(namespace)
        self._client().delete_collection(collection_name(namespace))
        self._files.remove_segment_dirs(segment_dirs)

    def _index_lexical(self, namespace: str, lexical: LexicalIndex, group: list[Turn]) -> None:
        """Add the turns of ``group`` missing from the BM25 index (all of a new write; on a retry, those a
        failed call left out).

        Raises:
            StoreError: If the BM25 log cannot be written. The turns stay stored in Chroma; the namespace is
                dropped from memory, so its next read rebuilds the index from Chroma.
        """
        missing = [t for t in group if t.id not in lexical]
        if not missing:
            return
        try:
            lexical.add([t.id for t in missing], [t.memory_text for t in missing])
        except (StoreError, OSError) as exc:
            self._spaces.drop(namespace)
            raise StoreError(
                f"{len(missing)} turns of namespace {namespace!r} are stored in Chroma (the source of truth), but "
                f"the BM25 index could not be written ({exc}). Make {lexical.path.parent if lexical.path else 'it'} "
                "writable or free disk space, then retry the same add_turns call: it completes the index (reads "
                "rebuild it from Chroma meanwhile)"
            ) from exc

"""The raw-turn store: Chroma (one document per turn) plus a BM25 index kept in step.

Raw turns are the source of truth of a langmem-cog memory. Each namespace gets
its own Chroma collection (so no query can cross namespaces) and its own BM25
log. Writes go to Chroma first, then to BM25; on open, a BM25 index that is
behind Chroma (a crash between the two writes) is repaired from Chroma. A failed
``add_turns`` stored nothing (a failed Chroma write is undone) or is completed by
retrying the same call (identical turns already stored count as stored).

Search is exact for namespaces up to ``config.search.exact_search_max`` turns: every
turn gets a dense (cosine) and a BM25 score, fused by z-scores (see
:mod:`langmem_cog.fusion`). Larger namespaces take candidates from Chroma's HNSW
index and BM25's top-N and fuse over their union.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog import CogMemConfig, Turn
    >>> store = TurnStore(CogMemConfig.preset("ephemeral"))  # doctest: +SKIP
    >>> ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
    >>> store.add_turns([Turn(id="t1", namespace="alice", speaker="Alice",
    ...                       text="I adopted a puppy called Rex", timestamp=ts)])  # doctest: +SKIP
    ['t1']
    >>> store.search("alice", "what is the dog's name?", k=1)[0].turn.id  # doctest: +SKIP
    't1'
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_cog.checks import turn_id_list
from langmem_cog.config import CogMemConfig
from langmem_cog.errors import (
    StoreError,
    UnknownNamespaceError,
)
from langmem_cog.locking import DirLock
from langmem_cog.records import Turn, validate_namespace
from langmem_cog.storage.access import DataDirAccess, ReadChecks
from langmem_cog.storage.chroma import (
    ChromaEmbeddingFunction,
    NamespaceGone,
    public_unknown,
    register_chroma_embedding_function,
)
from langmem_cog.storage.chroma import collection_name as collection_name  # re-exported (tests name collections)
from langmem_cog.storage.files import EmbeddedFiles
from langmem_cog.storage.identity import check_data_dir
from langmem_cog.storage.inputs import group_by_namespace, turn_list, unstored
from langmem_cog.storage.journal import Intent, IntentJournal
from langmem_cog.storage.loading import CacheLoader
from langmem_cog.storage.namespaces import Namespaces
from langmem_cog.storage.removal import RemovalSteps
from langmem_cog.storage.search import QUERY_VECTOR_CACHE as QUERY_VECTOR_CACHE
from langmem_cog.storage.search import TurnSearch
from langmem_cog.storage.server import one_check
from langmem_cog.storage.sync import ServerSync, Tombstones
from langmem_cog.storage.types import PoolScores, ScoredTurn, SearchMode, StageTimes
from langmem_cog.storage.writes import TurnWriter

__all__ = ["TurnStore", "ScoredTurn", "PoolScores", "SearchMode", "StageTimes"]

logger = logging.getLogger(__name__)

class TurnStore:
    """Raw turns in Chroma plus BM25, per namespace.

    Args:
        config: The configuration (``CogMemConfig.preset("ephemeral")`` for tests: in memory, and private
            to this store object: two ephemeral stores never see each other's turns, even with the same
            namespaces and ids; its memory is freed when the store is garbage-collected).
        embeddings: The embedder; built from ``config.embedder`` when ``None``.
        client: An existing Chroma client to use instead of building one from the config (stores given
            the same client share its collections).

    Raises:
        ConfigError: If a persistent data directory was written with another embedder (its
            ``langmem-cog.json`` says which; :mod:`langmem_cog.storage.identity`), or by a newer langmem-cog.

    Example:
        >>> store = TurnStore(CogMemConfig.preset("ephemeral"))  # doctest: +SKIP
        >>> store.namespaces()  # doctest: +SKIP
        []
    """

    def __init__(
        self,
        config: CogMemConfig | None = None,
        embeddings: Embeddings | None = None,
        client: Any | None = None,
    ) -> None:
        self.config = config or CogMemConfig()
        if embeddings is None:
            from langmem_cog.embeddings import config_embedder

            embeddings = config_embedder(self.config)
        self.embeddings = embeddings
        if self.persistent:  # vectors of two embedders do not mix: the data directory says which wrote it
            check_data_dir(self.data_dir, embeddings)
        register_chroma_embedding_function()
        self._chroma_ef = ChromaEmbeddingFunction(embeddings)
        # The Chroma client, the write lock and the data directory's change counter (and reloads when it moves).
        self._access = DataDirAccess(self.config, client=client, drop_caches=lambda: self._spaces.drop_all(),
                                     drop_handles=lambda: self._spaces.drop_handles())
        # Per namespace: the lock, the Chroma collection, the in-memory copy, the BM25 and context indexes.
        self._spaces = Namespaces(self.config, client=lambda: self.client, embedding_function=self._chroma_ef,
                                  embed=self.embed_texts, embedder_name=type(embeddings).__name__,
                                  dir_lock_unless_writing=self._access.dir_lock_unless_writing)
        # http mode (workers sharing one Chroma server, each with its own data dir): the delete records, and
        # what this store last read of each namespace's version token (see :mod:`langmem_cog.storage.sync`).
        self._tombstones = Tombstones(client=lambda: self.client, embedding_function=self._chroma_ef,
                                      shared=self._shared)
        self._sync = ServerSync(self.config, self._spaces, self._tombstones, client=lambda: self.client,
                                embedding_function=self._chroma_ef,
                                dir_lock_unless_writing=self._access.dir_lock_unless_writing)
        # A read's freshness check: the data directory's counter, and in http mode the server's version token.
        self._checks = ReadChecks(self._access, self._sync, shared=self._shared)
        # Each namespace's in-memory copy, loaded from Chroma on first use with its BM25 index repaired.
        self._loader = CacheLoader(self._spaces, self._tombstones, shared=self._shared,
                                   dir_lock_unless_writing=self._access.dir_lock_unless_writing,
                                   restart_embedded=self._access.restart_embedded,
                                   loaded=self._access.loaded_namespace, reading=self._access.chroma_read)
        # Scoring and search, with the vectors of recent queries (the raw scores and the operator loop embed
        # the same query); the embedder is looked up at each call.
        self._search = TurnSearch(self.config, self._spaces, load=self._loader.load,
                                  embed=lambda texts: self.embed_texts(texts), require=self.require_namespace,
                                  get_turns=self._get_turns)
        # The embedded database's files, kept free of deleted text (segment folders, log purge, vacuum).
        self._files = EmbeddedFiles(self.data_dir, embedded=self.config.chroma_mode == "persistent")
        # The write path below the write lock: one namespace's turns into Chroma, then BM25 and context vectors.
        self._writer = TurnWriter(self.config, self._spaces, self._files, self._sync, load=self._loader.load,
                                  client=lambda: self.client, dir_lock=self.dir_lock,
                                  embed=lambda texts: self.embed_texts(texts), stage_times=lambda: self.stage_times,
                                  shared=self._shared)
        #: Where ``add_turns`` spends its time (accumulated; see :class:`StageTimes`).
        self.stage_times = StageTimes()
        #: Runs the last step of a replayed delete or forget recorded with ``graph: true`` (set by
        #: :class:`~langmem_cog.memory.CogMemory`: the graph's part); without it such a record stays.
        self.intent_finisher: Callable[[dict[str, Any]], Any] | None = None
        # The store's steps of a delete and a forget, run (and rerun by a replay) through the intent journal.
        self._removal = RemovalSteps(self._spaces, self._files, self._tombstones, self._sync,
                                     client=lambda: self.client, load_cache=self._loader.load, shared=self._shared)
        self._journal = IntentJournal(self.data_dir, persistent=self.persistent, steps=self._removal,
                                      namespace_lock=self._spaces.lock)
        # The outermost write first finishes interrupted deletes and forgets, and ends with BM25 in step.
        self._access.before_write = lambda: self._finish_intents(reload=True)
        self._access.after_write = self._sync.flush_lexical_behind
        self._opened = False
        self._replay_at_open()  # finish deletes and forgets that a crash cut short
        self._opened = True

    # ------------------------------------------------------------------ coordination
    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the store's write lock (threads, and processes sharing ``data_dir``) with
        in-memory state reloaded if someone else wrote; records the write on exit.

        The outermost hold first finishes the deletes and forgets that a crash or an error cut short
        (:meth:`replay_intents`), so no write lands before them.

        Raises:
            StoreError: If such a delete or forget cannot be finished (nothing else is written).
        """
        with self._access.writing():
            yield

    @property
    def client(self) -> Any:
        """The Chroma client (replaced when another process wrote an embedded data directory)."""
        return self._access.client

    @property
    def dir_lock(self) -> DirLock | None:
        """The data directory's lock file (``None`` for an ephemeral store)."""
        return self._access.dir_lock

    def derived_files(self) -> AbstractContextManager[bool]:
        """Yields whether it holds the data dir lock for derived files (node vectors): not if a writer thread does."""
        return self._access.dir_lock_unless_writing()

    # Freshness across workers (http mode): workers that share one Chroma server each keep their own data
    # directory (BM25 logs, context vectors, intents), so the local generation counter cannot tell one
    # worker that another wrote: a version token in each collection's metadata does
    # (see :mod:`langmem_cog.storage.sync`).
    @property
    def _shared(self) -> bool:
        """Whether other workers may write this store's collections without sharing its data directory."""
        return self.config.chroma_mode == "http"

    @contextmanager
    def reading(self, namespace: str) -> Iterator[None]:
        """Check once that this store's view of a namespace is up to date, for every read in the block.

        Each public read checks by itself; a block of several reads (pool scores, then turns) pays for
        one check. In ``http`` mode the check reads the namespace's version token from the Chroma server
        (one small request) and, if any worker wrote the namespace since this store last looked, first
        brings the namespace's turns and BM25 index up to date from the server: the reads of the block
        see every write acknowledged before the block began, whichever worker made it. In the other
        modes it is the local check every read makes (the data directory's change counter).

        Raises:
            InvalidNamespaceError: If the namespace id is malformed.
            StoreError: If the Chroma server cannot be read.
        """
        with self._checks.reading(namespace):
            yield

    def check_freshness(self, namespace: str) -> None:
        """Bring this store's view of ``namespace`` up to date with the shared server (what every public
        read does first, once per call): one request for the namespace's version token, and a catch-up only
        if another worker wrote since. A no-op unless the store is on a Chroma server (``http`` mode).

        Raises:
            StoreError: If the server cannot be read.
        """
        self._checks.check_now(namespace)

    def on_namespaces_closed(self, listener: Callable[[list[str]], Any]) -> None:
        """Call ``listener`` with the namespaces this store closes to keep at most ``config.open_namespaces``
        open (their in-memory state dropped, reloaded on their next use); it may run while the store holds a
        lock, so it must not wait for one (:class:`~langmem_cog.memory.CogMemory` releases their graphs there)."""
        self._spaces.on_close.append(listener)

    # ------------------------------------------------------------------ setup
    @property
    def data_dir(self) -> Path:
        """The data directory (BM25 logs, the embedded Chroma database)."""
        return self.config.resolved_data_dir()

    @property
    def persistent(self) -> bool:
        """Whether this store writes files (BM25 logs) to ``data_dir``."""
        return self.config.chroma_mode != "ephemeral"

    # ------------------------------------------------------------------ writes
    def add_turns(self, turns: Sequence[Turn]) -> list[str]:
        """Add turns (any mix of namespaces), all or nothing from the caller's view: a failed call either
        stored nothing, or an identical retry completes it (each namespace is written as one unit; when a
        later namespace's write fails, the error names the namespaces already written).

        All turns are validated before anything is written. A turn already stored with the same
        id and identical content (text and every field) counts as stored, so retrying a call that
        failed completes it: the missing turns are written, the BM25 index of every turn of the call
        is completed, and the store keeps one copy of each. The Chroma write is the commit point: a
        failure there is undone (nothing is stored); a failure after it (the BM25 log) leaves the
        turns stored and the index rebuilt from Chroma on the next read, and the error says so.

        Args:
            turns: The turns to add.

        Returns:
            The ids of ``turns`` (stored now or before), in order.

        Raises:
            InvalidInputError: If an item is not a :class:`Turn`, or holds a position or metadata value
                that Chroma would not read back unchanged (see :func:`~langmem_cog.records.unstorable_values`).
            DuplicateTurnError: If an id repeats in ``turns``, or is already stored in its namespace
                with other content (nothing is written).
            StoreError: If Chroma or the BM25 log cannot be written; the message says what was
                stored and what to fix (then retry the same call).
            ConfigError: If the embedder's vectors have another dimension than a namespace's stored
                ones (the data directory was built with another embedder; nothing is written).
        """
        t0 = time.perf_counter()
        try:
            return self._add_turns(turns)
        finally:
            self.stage_times.total += time.perf_counter() - t0

    def _add_turns(self, turns: Sequence[Turn]) -> list[str]:
        turns = turn_list(turns)
        self.stage_times.turns += len(turns)
        by_ns = group_by_namespace(turns)
        self._access.fresh()
        if self._shared:  # other workers' writes (a delete of one of these ids) count as stored state too
            for ns in by_ns:
                self._sync.check(ns)
        # Check every namespace before writing any, and embed outside the write lock.
        stored = {ns: self._writer.stored_versions(ns, group) for ns, group in by_ns.items()}
        new = {ns: unstored(ns, group, stored[ns]) for ns, group in by_ns.items()}
        if (not any(new.values()) and all(self._writer.indexed(ns, group) for ns, group in by_ns.items())
                and not self._sync.unannounced.intersection(by_ns)):
            return [t.id for t in turns]  # an identical retry of a call that completed: nothing to do
        vectors = {ns: self._writer.vectors(todo, {}) for ns, todo in new.items()}
        with self.writing():
            # Again under the write lock: another thread or process may have added them meanwhile.
            # Every namespace is checked (ids, vector dimension) before any is written.
            if self._shared:
                for ns in by_ns:
                    self._sync.check(ns)
            for ns, group in by_ns.items():
                with self._spaces.lock(ns):
                    cache = self._loader.load(ns)
                    cached = {t.id: cache.turns[cache.pos[t.id]] for t in group if t.id in cache.pos}
                    new[ns] = unstored(ns, group, cached)
                    vectors[ns] = self._writer.vectors(new[ns], vectors[ns])
                    if new[ns]:
                        self._spaces.check_dimension(ns, cache.emb, len(next(iter(vectors[ns].values()))),
                                              collection=True)
            self._writer.check_free_space([t for todo in new.values() for t in todo])
            done: list[str] = []  # namespaces whose new turns are written
            for ns, group in by_ns.items():
                with self._spaces.lock(ns):
                    try:
                        self._writer.write(ns, group, new[ns], vectors[ns])
                    except StoreError as exc:
                        if not done:
                            raise
                        # Each namespace is its own Chroma collection: those written before stay written.
                        kept = ", ".join(repr(d) for d in done)
                        raise StoreError(str(exc).replace(
                            "nothing of this call was stored",
                            f"nothing of this call was stored in namespace {ns!r}, but its turns in {kept} were "
                            "(they count as stored: an identical retry completes the call)")) from exc
                if new[ns]:
                    done.append(ns)
            if any(new.values()):
                # An index file Chroma created or grew in this write holds heap garbage in its unused
                # slots, which may hold the text of turns deleted earlier in this process.
                self._files.scrub_segments(changed_only=True)
        return [t.id for t in turns]

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 vectors of ``texts`` (one batched call of the embedder)."""
        embed_array = getattr(self.embeddings, "embed_array", None)
        arr = embed_array(texts) if embed_array else np.asarray(self.embeddings.embed_documents(texts))
        arr = np.asarray(arr, dtype=np.float32)
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return arr / np.where(norms > 0, norms, 1.0)

    # ------------------------------------------------------------------ delete and forget
    def delete_turns(
        self,
        namespace: str,
        ids: Sequence[str],
        *,
        finisher: Callable[[dict[str, Any]], Any] | None = None,
    ) -> int:
        """Delete turns of a namespace from Chroma, BM25 and the context vectors, and purge their text
        from the files on disk (Chroma's write-ahead table, then ``VACUUM``).

        The deletion is recorded first, in an intent file under ``data_dir/intents``, and the record is
        removed only when every step is done. A call cut short (a crash, a kill, an error) is finished by
        the next open of the data directory, by the next write, or by a retry of the call; every step is
        safe to repeat, so a retry for ids that are already gone still purges what is left of their text.

        Args:
            namespace: The namespace.
            ids: Turn ids (ids not stored are ignored).
            finisher: Called with the intent (a dict) after the store's steps and before the record is
                removed; :class:`~langmem_cog.memory.CogMemory` deletes the turns from its graph there. The
                intent then records ``graph: true``, and a replay calls :attr:`intent_finisher` instead.

        Returns:
            How many of ``ids`` were stored when the call ran. Interrupted deletes and forgets are finished
            first (by the open, or at the start of the call), so retrying a call that was cut short after
            Chroma's delete returns 0 for those turns, and still purges their text.

        Raises:
            InvalidNamespaceError: If the namespace id is malformed.
            InvalidInputError: If ``ids`` is not a list of strings.
            StoreError: If a step fails; the deletion stays recorded and a retry (or the next open) finishes it.
        """
        validate_namespace(namespace)
        ids = turn_id_list(ids, "delete_turns")
        ids = list(dict.fromkeys(ids))
        with self.writing():
            if self._shared and ids:  # the namespace's current collection (another worker may have made a new one)
                self._sync.check(namespace)
            return self._delete_locked(namespace, ids, finisher)

    def _delete_locked(self, namespace: str, ids: list[str],
                       finisher: Callable[[dict[str, Any]], Any] | None) -> int:
        """:meth:`delete_turns` under the write lock."""
        with self._spaces.lock(namespace):
            if not ids:
                return 0
            col = self._spaces.collection(namespace, create=False)
            intent = Intent(op="delete", namespace=namespace, ids=ids,
                             collection_id=None if col is None else str(col.id), graph=finisher is not None)
            self._journal.record(intent)
            return int(self._journal.run(intent, finisher))

    def forget_namespace(
        self, namespace: str, *, finisher: Callable[[dict[str, Any]], Any] | None = None
    ) -> bool:
        """Delete a whole namespace: its collection and the segment folders Chroma leaves behind, its BM25
        log and context vectors, then ``VACUUM`` Chroma's database. Recorded and finished like
        :meth:`delete_turns` (``finisher`` as there).

        Returns:
            Whether the namespace held a collection when the call ran (``False`` for a retry of a forget
            that the first attempt or the next open already completed).

        Raises:
            StoreError: If a step fails; the forget stays recorded and a retry (or the next open) finishes it.
        """
        validate_namespace(namespace)
        with self.writing(), self._spaces.lock(namespace):
            col = self._spaces.collection(namespace, create=False)
            intent = Intent(
                op="forget", namespace=namespace, collection_id=None if col is None else str(col.id),
                segment_dirs=[] if col is None else [p.name for p in self._files.segment_dirs(col)],
                graph=finisher is not None,
            )
            self._journal.record(intent)
            return bool(self._journal.run(intent, finisher))

    # Intents: a delete or forget is recorded before its first step and the record removed after its last
    # (see :class:`~langmem_cog.storage.journal.IntentJournal`).
    def pending_intents(self) -> list[Path]:
        """The records of deletes and forgets not finished yet (``data_dir/intents/*.json``), oldest first."""
        return self._journal.pending()

    def replay_intents(self) -> int:
        """Finish every delete and forget of the data directory that was cut short (by a crash or an error).

        Runs on open and at the start of every write (:meth:`writing`); call it to retry explicitly.
        An intent whose store steps are done but that waits for a :attr:`intent_finisher` (the graph step
        of a :class:`~langmem_cog.memory.CogMemory`) stays until a store with one replays it.

        Returns:
            How many intents were run.

        Raises:
            StoreError: If one cannot be finished (it stays recorded).
        """
        if self.dir_lock is None or not self.pending_intents():
            return 0
        with self._access.exclusive():
            return self._finish_intents(reload=self._opened)

    def _replay_at_open(self) -> None:
        """Finish interrupted deletes and forgets when the store opens; a failure is logged (reads still
        work) and raised again by the next write."""
        try:
            self.replay_intents()
        except StoreError as exc:
            logger.warning("%s", exc)

    def _finish_intents(self, *, reload: bool) -> int:
        """Run the pending intents in order (the caller holds the data directory lock)."""
        return self._journal.finish(self.intent_finisher, reload_after_crash=self._access.reload_after_crash if reload else None)

    # ------------------------------------------------------------------ reads
    def namespaces(self) -> list[str]:
        """The namespaces that hold a collection, sorted."""
        self._access.fresh()
        return self._access.steady(self._spaces.stored)

    def has_namespace(self, namespace: str) -> bool:
        """Whether the namespace exists (holds or held turns)."""
        validate_namespace(namespace)
        self._checks.fresh_ns(namespace)
        return self._spaces.collection(namespace, create=False) is not None

    def count(self, namespace: str) -> int:
        """Number of turns in a namespace (0 if it does not exist, or was forgotten meanwhile)."""
        validate_namespace(namespace)
        self._checks.fresh_ns(namespace)
        with self._spaces.lock(namespace):
            try:
                return len(self._loader.load(namespace).ids)
            except NamespaceGone:
                return 0

    def get_turns(self, namespace: str, ids: Sequence[str] | None = None) -> list[Turn]:
        """Turns of a namespace in chronological order, or the given ids in the given order
        (unknown ids are skipped; none if the namespace does not exist, or was forgotten meanwhile)."""
        try:
            return self._get_turns(namespace, ids)
        except NamespaceGone:
            return []

    def _get_turns(self, namespace: str, ids: Sequence[str] | None) -> list[Turn]:
        """:meth:`get_turns`, raising :class:`UnknownNamespaceError` if the namespace vanishes while being read."""
        validate_namespace(namespace)
        self._checks.fresh_ns(namespace)
        with self._spaces.lock(namespace):
            cache = self._loader.load(namespace)
            if ids is None:
                return list(cache.turns)
            return [cache.turns[cache.pos[i]] for i in turn_id_list(ids, "get_turns") if i in cache.pos]

    def require_namespace(self, namespace: str) -> None:
        """Raise unless the namespace exists.

        Raises:
            InvalidNamespaceError: If the namespace id is malformed.
            UnknownNamespaceError: If it holds no turns; the message lists known namespaces.
        """
        if not self.has_namespace(namespace):
            raise UnknownNamespaceError(
                f"namespace {namespace!r} holds no turns: add turns first, or check the namespace id "
                "(TurnStore.namespaces() lists the stored ones)"
            )

    def embed_query(self, query: str) -> np.ndarray:
        """The normalised query vector (read-only; the last :data:`QUERY_VECTOR_CACHE` queries are cached)."""
        return self._search.embed_query(query)

    def cache_query_vector(self, query: str, vector: np.ndarray) -> np.ndarray:
        """Keep ``vector`` as the cached embedding of ``query`` (for callers that embedded queries in a batch).

        The vector must come from this store's embedder; later :meth:`embed_query` calls for
        ``query`` return it without running the model.

        Returns:
            The cached read-only copy.

        Raises:
            InvalidInputError: If ``vector`` is not one finite 1-D vector.
        """
        return self._search.cache_query_vector(query, vector)

    def clear_query_cache(self) -> None:
        """Forget the cached query vectors (benchmarks that time query embedding call this)."""
        self._search.clear_query_cache()

    @public_unknown
    @one_check
    def pool_scores(
        self, namespace: str, query: str, query_vector: np.ndarray | None = None, *, context: bool = False
    ) -> PoolScores:
        """Dense and BM25 scores of every turn of the namespace (the exact path).

        Args:
            namespace: The namespace to score.
            query: The query text.
            query_vector: The query's vector, if the caller has it (else embedded and cached).
            context: Also score the turns' context vectors and context texts (:mod:`langmem_cog.context`;
                built on the namespace's first such query, then kept up to date). ``PoolScores.context``
                and ``PoolScores.context_lexical`` stay ``None`` without it, or when
                ``CogMemConfig.context_vectors`` is off.

        Raises:
            UnknownNamespaceError: If the namespace does not exist.
            ConfigError: If the query vector's dimension is not that of the namespace's stored vectors
                (the store was built with another embedder).
        """
        return self._search.pool_scores(namespace, query, query_vector, context=context)

    def dense_scores(self, namespace: str, ids: Iterable[str], query_vector: np.ndarray) -> dict[str, float]:
        """The cosine of ``query_vector`` to each of a few stored turns (the ones of ``ids`` the namespace
        holds), without scoring the rest of the namespace.

        Raises:
            UnknownNamespaceError: If the namespace does not exist.
            ConfigError: If the vector's dimension is not that of the namespace's stored vectors.
        """
        return self._search.dense_scores(namespace, ids, query_vector)

    def stored_vectors(self, namespace: str, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of a few turns (those of ``ids`` the namespace holds), by turn id.

        Raises:
            UnknownNamespaceError: If the namespace does not exist.
        """
        return self._search.stored_vectors(namespace, ids)

    @public_unknown
    @one_check
    def search(
        self,
        namespace: str,
        query: str,
        k: int = 10,
        *,
        mode: SearchMode = "hybrid",
        lexical_weight: float | None = None,
        fusion: str | None = None,
    ) -> list[ScoredTurn]:
        """Hybrid (or dense-only, or lexical-only) search over one namespace.

        Args:
            namespace: The namespace to search.
            query: The query text.
            k: How many turns to return.
            mode: ``hybrid``, ``dense`` or ``lexical``.
            lexical_weight: Weight of z(BM25) in z-score fusion (default: the config's).
            fusion: ``zscore`` or ``rrf`` (default: the config's).

        Returns:
            Up to ``k`` scored turns, best first.

        Raises:
            InvalidInputError: If the query is empty, ``k`` is not a positive integer or ``lexical_weight``
                is not a finite number >= 0.
            UnknownNamespaceError: If the namespace does not exist.
            ConfigError: If the embedder's vectors have another dimension than the namespace's stored ones.
        """
        return self._search.search(namespace, query, k, mode=mode, lexical_weight=lexical_weight, fusion=fusion)

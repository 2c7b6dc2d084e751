"""``http`` mode: keeping a worker's view of each namespace in step with the other workers of a Chroma server.

Workers that share one Chroma server each keep their own data directory (BM25 logs, context vectors,
intents), so no local file can tell one worker that another wrote. The shared state lives in the server
instead: every successful write of a namespace ends by writing a fresh version token (a uuid) into the
metadata of the namespace's collection (:meth:`ServerSync.announce`), and every read first reads that
token (one request, :meth:`ServerSync.check`). A token other than the one this worker read before it last
brought the namespace up to date means another worker (or this one) wrote: the namespace is caught up
incrementally (:meth:`ServerSync.catch_up`). Deletes also leave a record of the deleted ids
(:class:`Tombstones`), written before the delete, so a turn deleted and added again with other content
under the same id is reloaded.

Here: the delete records (:class:`Tombstones`), the server's record of a collection (:func:`server_record`),
which of a list of ids the server holds (:func:`server_ids`), reading turns by id (:func:`fetch_turns`),
and the freshness state of one store (:class:`ServerSync`).
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from langmem_cog.config import CogMemConfig
from langmem_cog.errors import StoreError
from langmem_cog.records import Turn
from langmem_cog.storage.bm25 import lexical_add
from langmem_cog.storage.cache import Cache
from langmem_cog.storage.chroma import NamespaceGone, collection_gone, collection_name, turn_from_chroma
from langmem_cog.storage.namespaces import Namespaces
from langmem_cog.storage.server import ServerRecord, drift_read, tombstone_collection_name

__all__ = ["GET_BATCH", "VERSION_KEY", "ServerSync", "Tombstones", "fetch_turns", "server_ids", "server_record"]

logger = logging.getLogger("langmem_cog.store")  # the store's logger, as before the split

#: How many turns one read by id asks Chroma for.
GET_BATCH = 5000
#: The collection metadata key of a namespace's version token, a fresh uuid written after every successful
#: write (add, delete) of the namespace by any worker (see :meth:`ServerSync.check`).
VERSION_KEY = "lmc_version"


class Tombstones:
    """``http`` mode: the delete records of namespace collections (one collection of records per namespace
    collection; each record's document is the JSON list of the ids one delete removed, never text).

    Args:
        client: Returns the store's current Chroma client.
        embedding_function: The embedding function given to Chroma with every collection.
        shared: Whether the store is on a Chroma server (``http`` mode); :meth:`ids` is ``None`` otherwise.
    """

    def __init__(self, *, client: Callable[[], Any], embedding_function: Any, shared: bool) -> None:
        self._client = client
        self._ef = embedding_function
        self.shared = shared
        self._cols: dict[str, Any] = {}  # by namespace collection id

    def collection(self, col: Any, *, create: bool = False) -> Any | None:
        """The collection of the delete records of namespace collection ``col`` (``None`` if none)."""
        key = str(col.id)
        found = self._cols.get(key)
        if found is not None:
            return found
        name = tombstone_collection_name(key)
        try:
            if create:
                found = self._client().get_or_create_collection(
                    name=name, metadata={"lmc_deletes_of": key}, embedding_function=self._ef
                )
            else:
                found = self._client().get_collection(name=name, embedding_function=self._ef)
        except Exception as exc:  # chromadb raises NotFoundError / ValueError by version
            if not create and (collection_gone(exc) or "not found" in str(exc).lower()):
                return None
            raise
        self._cols[key] = found
        return found

    def ids(self, col: Any) -> set[str] | None:
        """The ids of the delete records of namespace collection ``col`` (``None`` in other modes)."""
        if not self.shared:
            return None
        for _ in range(2):
            tombs = self.collection(col)
            if tombs is None:
                return set()
            try:
                return set(tombs.get(include=[])["ids"])
            except Exception as exc:  # chromadb's errors share no base class worth naming
                if not collection_gone(exc):
                    raise
                self._cols.pop(str(col.id), None)  # dropped (a forget) since it was opened
        return set()

    def named(self, col: Any, record_ids: set[str]) -> set[str]:
        """The turn ids that the given delete records of ``col`` name."""
        tombs = self.collection(col)
        if tombs is None:
            return set()
        try:
            got = tombs.get(ids=sorted(record_ids), include=["documents"])
        except Exception as exc:  # dropped by a forget meanwhile: the namespace's listing says so
            if collection_gone(exc):
                return set()
            raise
        out: set[str] = set()
        for doc in got["documents"]:
            try:
                out.update(i for i in json.loads(doc or "[]") if isinstance(i, str))
            except (TypeError, ValueError):
                logger.warning("ignoring an unreadable delete record of collection %s", col.id)
        return out

    def record(self, col: Any, ids: list[str]) -> None:
        """Record, before deleting them, the ids a delete removes from ``col`` (ids only, never text), so
        that workers that cached them reload them if they are added again."""
        for attempt in range(2):
            tombs = self.collection(col, create=True)
            assert tombs is not None  # created if missing
            try:
                tombs.add(ids=[uuid.uuid4().hex], embeddings=np.ones((1, 1), dtype=np.float32),
                          documents=[json.dumps(ids, ensure_ascii=False)])
                return
            except Exception as exc:  # chromadb's errors share no base class worth naming
                if attempt or not collection_gone(exc):
                    raise
                self._cols.pop(str(col.id), None)

    def drop(self, collection_id: str) -> None:
        """Delete the delete records of a forgotten namespace collection (missing: nothing to do)."""
        self._cols.pop(collection_id, None)
        try:
            self._client().delete_collection(tombstone_collection_name(collection_id))
        except Exception as exc:  # chromadb raises NotFoundError / ValueError by version
            if not (collection_gone(exc) or "not found" in str(exc).lower()):
                raise


def server_record(client: Any, namespace: str, *, embedding_function: Any, config: CogMemConfig) -> Any | None:
    """The server's current record of the namespace's collection (``id``, ``metadata``), read in one
    request; ``None`` if it has none.

    Raises:
        StoreError: If the server cannot be read.
    """
    name = collection_name(namespace)
    try:
        # The raw record when the client exposes it (chromadb's HTTP client does): Client.get_collection
        # also parses the collection's configuration and schema, and builds and checks a Collection
        # object, which costs about as much again as the request itself.
        request = getattr(getattr(client, "_server", None), "_make_request", None)
        tenant, database = getattr(client, "tenant", None), getattr(client, "database", None)
        if callable(request) and isinstance(tenant, str) and isinstance(database, str):
            raw = request("get", f"/tenants/{tenant}/databases/{database}/collections/{name}")
            return ServerRecord(id=str(raw["id"]), metadata=raw.get("metadata"))
        return client.get_collection(name=name, embedding_function=embedding_function)
    except Exception as exc:  # chromadb raises NotFoundError / ValueError by version
        if collection_gone(exc) or "not found" in str(exc).lower():
            return None
        raise StoreError(
            f"cannot read the collection of namespace {namespace!r} from the Chroma server at "
            f"{config.chroma_host}:{config.chroma_port} ({type(exc).__name__}: {exc}): check that "
            "the server runs and is reachable"
        ) from exc


def server_ids(col: Any, ids: list[str]) -> list[str]:
    """Which of ``ids`` the namespace's collection ``col`` holds (whichever worker wrote them), in order."""
    held: set[str] = set()
    for start in range(0, len(ids), GET_BATCH):
        try:
            held.update(col.get(ids=ids[start : start + GET_BATCH], include=[])["ids"])
        except Exception as exc:  # forgotten meanwhile by another worker: nothing to delete there
            if collection_gone(exc):
                return []
            raise
    return [i for i in ids if i in held]


def fetch_turns(namespace: str, col: Any, ids: list[str], *,
                gone: Callable[[str], NamespaceGone]) -> tuple[list[Turn], np.ndarray]:
    """The turns (with their vectors) of ``ids`` that the collection holds, read by id in batches.

    Args:
        namespace: The namespace (for messages).
        col: Its Chroma collection.
        ids: The turn ids to read.
        gone: Drops what is held of a namespace whose collection vanished, and returns the error to raise.

    Raises:
        UnknownNamespaceError: If the collection vanished (a concurrent forget).
    """
    turns: list[Turn] = []
    embs: list[np.ndarray] = []
    for start in range(0, len(ids), GET_BATCH):
        try:
            batch = ids[start : start + GET_BATCH]
            got = drift_read(functools.partial(col.get, ids=batch, include=["embeddings", "documents", "metadatas"]),
                             what=f"namespace {namespace!r}: reading turns")
        except Exception as exc:  # as in a namespace's load
            if collection_gone(exc):
                raise gone(namespace) from exc
            raise
        for tid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
            turns.append(turn_from_chroma(tid, doc, meta))
        if len(got["ids"]):
            embs.append(np.asarray(got["embeddings"], dtype=np.float32))
    return turns, (np.vstack(embs) if embs else np.zeros((0, 0), dtype=np.float32))


class ServerSync:
    """One store's freshness state against a Chroma server, and the catch-ups that keep its view up to date.

    It keeps, per namespace, the (collection id, version token) read before the store's view of it was
    last brought up to date, the namespaces written whose token could not be written, the BM25 logs left
    behind memory by a catch-up made without the data directory lock, and the local files of namespaces
    gone from the server that are still to be removed. Outside ``http`` mode these stay empty and
    :meth:`announce` does nothing.

    Args:
        config: The store's configuration (the Chroma mode and server address).
        spaces: The store's per-namespace state.
        tombstones: The store's delete records.
        client: Returns the store's current Chroma client.
        embedding_function: The embedding function given to Chroma with every collection.
        dir_lock_unless_writing: Holds the data directory lock unless a writer thread of this process holds
            it, and yields whether it does (local files are written only then).
    """

    def __init__(self, config: CogMemConfig, spaces: Namespaces, tombstones: Tombstones, *,
                 client: Callable[[], Any], embedding_function: Any,
                 dir_lock_unless_writing: Callable[[], AbstractContextManager[bool]]) -> None:
        self.config = config
        self.shared = config.chroma_mode == "http"
        self._spaces = spaces
        self._tombstones = tombstones
        self._client = client
        self._ef = embedding_function
        self._dir_lock_unless_writing = dir_lock_unless_writing
        #: Per namespace, the (collection id, version token) read before the view was last brought up to date.
        self.seen: dict[str, tuple[str, str | None]] = {}
        #: The namespaces written whose version token could not be written.
        self.unannounced: set[str] = set()
        self._lexical_behind: set[str] = set()  # BM25 logs behind memory (a catch-up without the lock)
        self._local_stale: set[str] = set()  # local files of namespaces gone from the server, to remove

    def server_record(self, namespace: str) -> Any | None:
        """The server's current record of the namespace's collection (see :func:`server_record`).

        Raises:
            StoreError: If the server cannot be read.
        """
        return server_record(self._client(), namespace, embedding_function=self._ef, config=self.config)

    def check(self, namespace: str) -> None:
        """Bring the store's view of ``namespace`` up to date if any worker wrote it since the store last looked.

        The token is read before the namespace is caught up and recorded after, so the view always holds
        at least what was written before the token the store last saw; a writer writes its token only
        after its write succeeded, and every token is new, so a read whose token equals the one last seen
        has every write acknowledged before it began. Called at the start of a public read (once per call)
        or under the store's write lock, holding no namespace lock; it never waits for a writer thread of
        this process.

        Raises:
            StoreError: If the server cannot be read.
        """
        if self._lexical_behind or self._local_stale:
            with self._dir_lock_unless_writing() as locked:
                if locked:
                    self.flush_lexical_behind()
        model = self.server_record(namespace)
        if model is None:
            self.drop_remote(namespace)
            return
        key = (str(model.id), (model.metadata or {}).get(VERSION_KEY))
        if self.seen.get(namespace) == key:
            return
        with self._spaces.lock(namespace):
            if self.seen.get(namespace) == key:  # another thread of this store caught up meanwhile
                return
            col = self._spaces.collections.get(namespace)
            if col is not None and str(col.id) != key[0]:
                self.drop_remote(namespace)  # forgotten and created again by another worker
            cache = self._spaces.caches.get(namespace)
            if cache is not None:
                try:
                    self.catch_up(namespace, cache)
                except NamespaceGone:  # forgotten meanwhile: the next read finds no collection
                    self.drop_remote(namespace)
                    return
            self.seen[namespace] = key

    def catch_up(self, namespace: str, cache: Cache) -> None:
        """Apply to ``cache``, the BM25 index and the context vectors what other workers wrote (the caller
        holds the namespace lock): list the ids the server holds, load the turns not cached, drop the
        cached ids it no longer holds, and reload the cached turns that a delete record names but the
        server holds (deleted, then added again, maybe with other content). The BM25 log is appended to
        and compacted, never rebuilt; without the data directory lock (a writer thread of this process
        holds it) the changes are made in memory and the log is written when it ends.

        Raises:
            UnknownNamespaceError: If the collection vanished (a forget by another worker).
        """
        col = self._spaces.collection(namespace, create=False)
        if col is None:
            raise self._spaces.gone(namespace)
        tombs = self._tombstones.ids(col)  # before the ids: a re-add follows the record of its delete
        assert tombs is not None  # http mode
        try:
            present = drift_read(lambda: col.get(include=[])["ids"], what=f"namespace {namespace!r}: listing ids")
        except Exception as exc:  # as in a namespace's load
            if collection_gone(exc):
                raise self._spaces.gone(namespace) from exc
            raise
        here = set(present)
        gone = [i for i in cache.ids if i not in here]
        replaced: list[str] = []
        seen_tombs = cache.tombs if cache.tombs is not None else set()
        if tombs - seen_tombs:
            replaced = sorted(i for i in self._tombstones.named(col, tombs - seen_tombs) if i in here and i in cache.pos)
        turns, emb = fetch_turns(namespace, col, [i for i in present if i not in cache.pos] + replaced,
                                 gone=self._spaces.gone)
        if gone or replaced or turns:
            self._apply_remote(namespace, cache, gone + replaced, turns, emb, replaced=bool(replaced))
            logger.debug("namespace %r: caught up with the Chroma server (+%d turns, -%d, %d reloaded)",
                         namespace, len(turns) - len(replaced), len(gone), len(replaced))
        cache.tombs = tombs

    def _apply_remote(self, namespace: str, cache: Cache, drop: list[str], turns: list[Turn], emb: np.ndarray,
                      *, replaced: bool) -> None:
        """Remove ``drop`` from and add ``turns`` to the namespace's cache, BM25 index and context vectors."""
        lexical = self._spaces.lexical_index(namespace)
        with self._dir_lock_unless_writing() as persist:
            if drop:
                cache.remove(drop)
                if replaced:  # drop the old rows first: context rows are keyed by turn ids, not text
                    self._spaces.refresh_context(namespace, cache)
                try:
                    lexical.delete([i for i in drop if i in lexical], persist=persist)
                except OSError as exc:  # dropped in memory already; compacted by a later write or catch-up
                    logger.warning("namespace %r: cannot rewrite the BM25 log (%s): compacted later", namespace, exc)
                    self._lexical_behind.add(namespace)
            if turns:
                if len(cache.ids):
                    self._spaces.check_dimension(namespace, cache.emb, int(emb.shape[1]))
                cache.append(turns, emb)
                todo = [t for t in turns if t.id not in lexical]
                if not lexical_add(namespace, lexical, todo, persist, "updated"):
                    self._lexical_behind.add(namespace)
            if not persist:
                self._lexical_behind.add(namespace)
            self._spaces.refresh_context(namespace, cache)

    def drop_remote(self, namespace: str) -> None:
        """The namespace's collection is gone from the server, or is another one (forgotten, and maybe created
        again, by another worker). Drop what the store holds of it in memory, and its local BM25 log and
        context vectors (which hold the old turns' words and vectors; a later load rebuilds them from the
        server), now if this thread can take the data directory lock without waiting for a writer thread of
        this process, else when that writer is done."""
        self.seen.pop(namespace, None)
        spaces = self._spaces
        log = spaces.lexical_path(namespace)
        ctx = spaces.context_path(namespace)
        with spaces.lock(namespace):
            cache, lexical = spaces.caches.get(namespace), spaces.lexical.get(namespace)
            held = (namespace in spaces.collections or namespace in spaces.contexts or bool(cache and cache.ids)
                    or bool(lexical is not None and len(lexical)))
            if not held and not log.exists() and not (ctx is not None and ctx.is_dir()):
                spaces.caches.pop(namespace, None)  # an empty view of a namespace that does not exist yet
                return
            spaces.drop(namespace, contexts=True)
            self._lexical_behind.discard(namespace)
            self._local_stale.add(namespace)
            with self._dir_lock_unless_writing() as locked:
                if locked:
                    self.flush_lexical_behind()
        logger.info("namespace %r was forgotten on the Chroma server by another worker (and maybe created again): "
                    "dropped this worker's local state of it", namespace)

    def flush_lexical_behind(self) -> None:
        """Write the local files a catch-up without the data directory lock left behind memory (the caller
        holds the lock): remove those of namespaces gone from the server, compact the BM25 logs."""
        for ns in sorted(self._local_stale):
            with self._spaces.lock(ns):
                self._spaces.drop(ns, contexts=True)
                try:
                    self._spaces.remove_local_files(ns)
                except OSError as exc:
                    logger.warning("namespace %r: cannot remove the local files of a forgotten namespace (%s)", ns, exc)
                    continue
            self._local_stale.discard(ns)
        for ns in sorted(self._lexical_behind):
            idx = self._spaces.lexical.get(ns)
            try:
                if idx is not None:
                    idx.compact()
            except OSError as exc:
                logger.warning("namespace %r: cannot rewrite the BM25 log (%s): retried later", ns, exc)
                continue
            self._lexical_behind.discard(ns)

    def announce(self, namespace: str, *, quiet: bool = False) -> None:
        """Write a fresh version token into the namespace's collection metadata, after a write of it succeeded
        in Chroma, so every other worker's next read of the namespace catches up (a no-op outside ``http`` mode).

        With ``quiet`` (another error is being raised), a failure is only logged. Either way the namespace
        stays marked, and the next write of it (an identical retry of the call included) writes the token.

        Raises:
            StoreError: If the token cannot be written (the write itself is stored).
        """
        if not self.shared:
            return
        col = self._spaces.collection(namespace, create=False)
        if col is None:  # dropped (a forget, or the undo of a failed first write): nothing to announce
            self.unannounced.discard(namespace)
            return
        try:
            # Chroma replaces the whole metadata: keep the namespace key (``hnsw:space`` lives in the
            # collection's configuration, and Chroma refuses to be given it again).
            col.modify(metadata={"namespace": namespace, VERSION_KEY: uuid.uuid4().hex})
        except Exception as exc:  # chromadb's errors share no base class worth naming
            if collection_gone(exc):
                self.unannounced.discard(namespace)
                return
            self.unannounced.add(namespace)
            message = (
                f"namespace {namespace!r} was written in Chroma, but its version token could not be written on "
                f"the server ({type(exc).__name__}: {exc}): other workers may not see the change until the next "
                "write of the namespace; retry the same call (it writes the token) once the server answers"
            )
            if not quiet:
                raise StoreError(message) from exc
            logger.warning("%s", message)
            return
        self.unannounced.discard(namespace)

    def forgotten(self, namespace: str) -> None:
        """Forget the freshness state of a namespace this store forgot."""
        self.seen.pop(namespace, None)
        self.unannounced.discard(namespace)

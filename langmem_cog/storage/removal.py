"""The store's steps of a delete and of a forget, each safe to repeat (run by the intent journal).

:class:`RemovalSteps` does what a recorded delete or forget (:class:`~langmem_cog.storage.journal.Intent`)
asks of a raw-turn store: remove the turns (or the whole namespace) from Chroma, the BM25 index, the
turns file, the context vectors and the in-memory copy, tell other workers of a shared Chroma server, and purge the text
from the embedded database's files. :class:`~langmem_cog.storage.journal.IntentJournal` calls it, at the
call and again on a replay after a crash or an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langmem_cog.storage.bm25 import remove_stale_temp
from langmem_cog.storage.cache import Cache
from langmem_cog.storage.chroma import collection_gone, collection_name
from langmem_cog.storage.files import EmbeddedFiles
from langmem_cog.storage.journal import Intent
from langmem_cog.storage.namespaces import Namespaces
from langmem_cog.storage.sync import ServerSync, Tombstones, server_ids
from langmem_cog.storage.turnfile import drop_turns

__all__ = ["RemovalSteps"]


class RemovalSteps:
    """The store's steps of the deletes and forgets of an intent journal.

    Every step is safe to repeat: a replay of an intent redoes them all, and finds done what was done.

    Args:
        spaces: The store's per-namespace state.
        files: The store's embedded database files.
        tombstones: The store's delete records (``http`` mode).
        sync: The store's freshness state against a Chroma server (``http`` mode).
        client: Returns the store's current Chroma client.
        load_cache: Returns a namespace's in-memory copy, loaded from Chroma on first use (the caller holds
            the namespace lock).
        shared: Whether other workers may write the store's collections (``http`` mode).
    """

    def __init__(self, spaces: Namespaces, files: EmbeddedFiles, tombstones: Tombstones, sync: ServerSync, *,
                 client: Callable[[], Any], load_cache: Callable[[str], Cache], shared: bool) -> None:
        self._spaces = spaces
        self._files = files
        self._tombstones = tombstones
        self._sync = sync
        self._client = client
        self._load_cache = load_cache
        self.shared = shared

    def __call__(self, intent: Intent) -> int | bool:
        """The store's steps of an intent (see :meth:`delete` and :meth:`forget`)."""
        return self.delete(intent) if intent.op == "delete" else self.forget(intent)

    def delete(self, intent: Intent) -> int:
        """The store's steps of a deletion, each safe to repeat.

        Returns:
            How many of the intent's ids were stored.
        """
        ns, ids = intent.namespace, intent.ids
        if intent.replay:  # reload from Chroma, the source of truth (this also repairs BM25 from it)
            self._spaces.drop(ns, contexts=True)
        col = self._spaces.collection(ns, create=False)
        if col is not None and str(col.id) != intent.collection_id:
            col = None  # a collection created after this intent was recorded: not the one to delete from
        lexical = self._spaces.lexical_index(ns)
        present: list[str] = []
        if col is not None:
            cache = self._load_cache(ns)
            if self.shared:  # the server's view: turns other workers added count, stale cached ones do not
                present = server_ids(col, ids)
                if present:  # before the delete: a reader that sees a re-add of an id sees its record too
                    self._tombstones.record(col, present)
            else:
                present = [i for i in ids if i in cache.pos]
            try:
                if present:
                    col.delete(ids=present)
                lexical.delete(ids)  # compacts the log
                cache.remove(ids if self.shared else present)
                if present or intent.replay:
                    self._drop_from_turns_file(ns, ids)
                self._spaces.context_matrix(ns, cache, create=False)  # rewrites the files without their rows
            except BaseException:
                if self.shared and present:  # Chroma may have deleted them (some of them): tell the others
                    self._sync.announce(ns, quiet=True)
                raise
            if self.shared and (present or intent.replay or ns in self._sync.unannounced):
                self._sync.announce(ns)  # every step done: other workers' next reads drop the turns
        remove_stale_temp(lexical.path)  # a compaction cut short leaves a copy of the log's tokens
        purged = self._files.purge_log(intent.collection_id, ids) if intent.collection_id else 0
        self._files.scrub_segments()
        if intent.replay or present or purged or self._files.has_free_pages():
            self._files.vacuum()
        return len(present)

    def _drop_from_turns_file(self, namespace: str, ids: list[str]) -> None:
        """Rewrite the namespace's turns file without the deleted turns (``http`` mode keeps none).

        Raises:
            OSError: If the file can be neither rewritten nor removed (it may hold deleted text: the
                delete stays in the journal and is replayed).
        """
        path = self._spaces.turns_path(namespace)
        if path is None or self.shared:
            return
        drop_turns(path, namespace, ids)
        remove_stale_temp(path)

    def forget(self, intent: Intent) -> bool:
        """The store's steps of a forget, each safe to repeat.

        Returns:
            Whether the namespace's collection existed.
        """
        ns = intent.namespace
        self._spaces.forget_collection(ns)
        col = self._spaces.collection(ns, create=False)
        dirs = [self._files.root / d for d in intent.segment_dirs]
        if col is not None and str(col.id) != intent.collection_id:
            col = None  # created after this forget was recorded: it stays, with its BM25 log and context
        else:
            self._spaces.lexical_index(ns).clear()
            self._spaces.context_index(ns).forget()
            self._spaces.remove_turns_file(ns)
        if col is not None:
            dirs += self._files.segment_dirs(col)
            try:
                self._client().delete_collection(collection_name(ns))
            except Exception as exc:  # chromadb raises NotFoundError / ValueError by version
                if not collection_gone(exc):
                    raise
        if self.shared and intent.collection_id:  # after the collection: its delete records go with it
            self._tombstones.drop(intent.collection_id)
        self._sync.forgotten(ns)
        self._spaces.drop(ns, contexts=True)
        if intent.collection_id:
            self._files.purge_dropped_collection(intent.collection_id)
        self._files.remove_segment_dirs(dirs + self._files.orphan_segment_dirs())
        self._files.scrub_segments()
        if intent.replay or col is not None or self._files.has_free_pages():
            self._files.vacuum()
        return col is not None

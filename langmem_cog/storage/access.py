"""Who may write a raw-turn store, and when its in-memory state must be reloaded.

:class:`DataDirAccess` owns what a :class:`~langmem_cog.store.TurnStore` shares with the other threads and
processes of its data directory: the Chroma client (built from the config, or given), the store's write
lock, the data directory's lock file with its change counter (a *generation*), and the generation this
store last saw. A write holds both locks (:meth:`DataDirAccess.writing`) and bumps the counter when it
ends; a read that finds the counter moved drops the in-memory state, and reopens the embedded Chroma
system if another process wrote (its in-memory HNSW index and write-ahead position are stale then).

:class:`ReadChecks` adds, for a store on a shared Chroma server (``http`` mode), the check that a read
sees every other worker's acknowledged writes (:class:`~langmem_cog.storage.sync.ServerSync`), made once
for a block of reads.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from langmem_cog.config import CogMemConfig
from langmem_cog.errors import StoreError
from langmem_cog.locking import DirLock
from langmem_cog.records import validate_namespace
from langmem_cog.storage.chroma import drop_chroma_system, ephemeral_client, open_failure, start_embedded_system
from langmem_cog.storage.sync import ServerSync

__all__ = ["DataDirAccess", "ReadChecks"]

_T = TypeVar("_T")
logger = logging.getLogger("langmem_cog.store")  # the store's logger

# Per data dir: the generation the process's embedded Chroma system has seen, its client, how many
# times the process started a new system for it (stores of the process switch to the new client), and how
# many namespaces the current system has loaded.
_CHROMA_SYNCED: dict[str, int] = {}
_CHROMA_CLIENTS: dict[str, Any] = {}
_CHROMA_EPOCH: dict[str, int] = {}
_CHROMA_LOADS: dict[str, int] = {}
_CHROMA_READS: dict[str, int] = {}  # namespace loads in flight
_CHROMA_RELOAD_LOCK = threading.RLock()


class DataDirAccess:
    """The Chroma client, the write lock and the data directory's change counter of one store.

    Args:
        config: The store's configuration (its Chroma mode and data directory).
        client: An existing Chroma client to use instead of building one from the config.
        drop_caches: Drops every namespace's in-memory state (called when another process or
            store object wrote).
        drop_handles: Drops every open collection handle (called when the client changes).

    Attributes:
        client: The Chroma client (replaced when the embedded system is reopened).
        dir_lock: The data directory's lock file; ``None`` for an ephemeral store.
        write_lock: The store's in-process write lock.
        before_write: Called at the start of the outermost write, under both locks (the store
            finishes interrupted deletes and forgets there).
        after_write: Called at the end of the outermost write, under both locks.
    """

    def __init__(self, config: CogMemConfig, *, client: Any | None, drop_caches: Callable[[], None],
                 drop_handles: Callable[[], None]) -> None:
        self.config = config
        self.data_dir = config.resolved_data_dir()
        self._drop_caches = drop_caches
        self._drop_handles = drop_handles
        persistent = config.chroma_mode != "ephemeral"
        # Cross-process: writers serialise on a lock file in data_dir; a generation counter
        # tells readers that another process (or another store object) wrote.
        self.dir_lock: DirLock | None = DirLock(self.data_dir) if persistent else None
        self.own_client = client is None
        self.client: Any = client if client is not None else self.make_client()
        self._epoch = _CHROMA_EPOCH.get(str(self.data_dir), 0)
        self.write_lock = threading.RLock()
        # -1: check on first use whether this process's Chroma system (shared by every client of
        # the path in the process) saw the latest writes of other processes.
        self.seen_gen = -1 if self.dir_lock is not None else 0
        self.before_write: Callable[[], Any] = lambda: None
        self.after_write: Callable[[], Any] = lambda: None

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the write lock (threads, and processes sharing ``data_dir``) with in-memory state
        reloaded if someone else wrote; records the write on exit (see
        :meth:`~langmem_cog.store.TurnStore.writing`)."""
        with self.write_lock:
            if self.dir_lock is None:
                yield
                return
            outer = not self.dir_lock.held
            with self.dir_lock:
                self.sync_with_disk()
                try:
                    if outer:
                        self.before_write()
                    yield
                except BaseException:
                    self.record_generation(quiet=True)
                    raise
                finally:
                    if outer:
                        self.after_write()
                self.record_generation()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Both locks, in-memory state reloaded if someone else wrote, the write recorded on exit; for
        work that is not a write of the caller's (a replay of interrupted deletes). Requires a data
        directory."""
        assert self.dir_lock is not None
        with self.write_lock, self.dir_lock:
            self.sync_with_disk()
            try:
                yield
            except BaseException:
                self.record_generation(quiet=True)
                raise
            self.record_generation()

    def record_generation(self, *, quiet: bool = False) -> None:
        """Bump the data directory's change counter after a write (the caller holds the lock).

        With ``quiet``, a counter that cannot be written is only logged: the write's own error,
        being raised, says more.
        """
        assert self.dir_lock is not None
        try:
            self.seen_gen = self.dir_lock.bump()
        except StoreError as exc:
            if not quiet:
                raise
            logger.warning("%s", exc)
            return
        _CHROMA_SYNCED[str(self.data_dir)] = self.seen_gen

    def steady(self, read: Callable[[], _T]) -> _T:
        """``read()``, run again (up to three times in all) while a write of another process or store
        object landed as it ran (the data directory's generation moved), for a read that spans several
        calls to Chroma."""
        if self.dir_lock is None:  # no other process writes here
            return read()
        for _ in range(2):
            before = self.dir_lock.read()[0]
            value = read()
            if self.dir_lock.read()[0] == before:
                return value
        return read()

    def fresh(self) -> None:
        """Reload in-memory state if another process or store object wrote since we last looked."""
        self._follow_restart()
        if self.dir_lock is not None and self.dir_lock.read()[0] != self.seen_gen:
            # A writer thread of this process busy: it syncs this store itself when it starts.
            with self.dir_lock_unless_writing() as locked:
                if locked:
                    self.sync_with_disk()

    @contextmanager
    def dir_lock_unless_writing(self) -> Iterator[bool]:
        """Hold the data directory lock if this thread can without waiting for an in-process writer;
        yields whether it holds it (always true for a store without a data directory).

        Never wait for an in-process writer here: readers may hold a namespace lock the writer
        needs (deadlock). Readers also repair and extend derived indexes, and another process may
        be half-way through a write: Chroma committed, the BM25 log not yet appended. Under the
        directory lock a reader sees no half-written state and may write files of derived indexes
        (the BM25 log, context vectors); without it (a writer thread of this process holds the
        lock) it keeps its repairs in memory and leaves the files to the writer.
        """
        if self.dir_lock is None or self.dir_lock.held:
            yield True
            return
        if not self.write_lock.acquire(blocking=False):
            yield False
            return
        try:
            with self.dir_lock:
                yield True
        finally:
            self.write_lock.release()

    def sync_with_disk(self) -> None:
        """Drop the in-memory state (and reopen the embedded Chroma system) if the counter moved."""
        self._follow_restart()
        gen, pid = self.dir_lock.read() if self.dir_lock is not None else (0, 0)
        if gen == self.seen_gen:
            return
        logger.debug("data dir %s changed (generation %d by pid %d): reloading", self.data_dir, gen, pid)
        self._drop_caches()
        if self.config.chroma_mode == "persistent" and self.own_client:
            if pid != os.getpid():
                self.reload_chroma(gen)
            else:  # another store of this process wrote; it may have reopened the Chroma system (a replay)
                self.client = _CHROMA_CLIENTS.get(str(self.data_dir), self.client)
        self.seen_gen = gen

    def reload_after_crash(self) -> None:
        """Drop the in-memory state and reopen the embedded Chroma system (a crashed write's replay)."""
        self._drop_caches()
        if self.config.chroma_mode == "persistent" and self.own_client and self.dir_lock is not None:
            self.reload_chroma(self.dir_lock.read()[0] + 1)

    def _follow_restart(self) -> None:
        """Switch to the process's new client of the data directory if a store of the process started a new
        embedded system (:meth:`restart_embedded`) since this one looked."""
        if not (self.own_client and self.config.chroma_mode == "persistent"):
            return
        key = str(self.data_dir)
        if _CHROMA_EPOCH.get(key, 0) != self._epoch:
            with _CHROMA_RELOAD_LOCK:
                self.client = _CHROMA_CLIENTS.get(key, self.client)
                self._epoch = _CHROMA_EPOCH.get(key, 0)
            self._drop_handles()

    def restart_embedded(self, *, quiet: bool = False) -> None:
        """Start a new embedded Chroma system for the data directory, in place of the process's current one.

        Chroma's embedded system keeps a bounded cache of loaded HNSW indexes; an index it evicted and
        loads again can fail ("Error creating hnsw segment reader: Nothing found on disk", chromadb
        1.5), while a new system reads the same collection from its log and files. The caller holds
        the data directory lock; the other stores of the process switch to the new client on their
        next read or write, this one drops its collection handles now.

        Args:
            quiet: Log the restart at DEBUG level only (a routine one, :meth:`loaded_namespace`).

        Raises:
            StoreError: If the database cannot be opened again.
        """
        key = str(self.data_dir)
        with _CHROMA_RELOAD_LOCK:
            self._new_system(key)
            self._epoch = _CHROMA_EPOCH[key]
            self.client = _CHROMA_CLIENTS.get(key, self.client)
        self._drop_handles()
        if not quiet:
            logger.info("data dir %s: started a new embedded Chroma system (an evicted index did not load)",
                        self.data_dir)

    def loaded_namespace(self) -> None:
        """Count a namespace read from the embedded Chroma system (the caller holds the data directory lock);
        once the system has loaded ``config.open_namespaces`` of them, start a new one.

        Reading a collection loads its HNSW index, four files held open, and Chroma's cache of loaded indexes
        keeps up to about 64 of them whatever its size (it evicts lazily). A store reads a namespace from
        Chroma only when it opens it (its turns and vectors stay in memory while it is open), so a new
        system, about 50 ms, closes the indexes of namespaces that are already in memory or closed: the files
        held stay below ``4 * open_namespaces`` for indexes.
        """
        if self.config.chroma_mode != "persistent" or not self.own_client or self.data_dir is None:
            return
        key = str(self.data_dir)
        with _CHROMA_RELOAD_LOCK:
            _CHROMA_LOADS[key] = loads = _CHROMA_LOADS.get(key, 0) + 1
            # Never under another thread's load (:meth:`chroma_read`): the next load tries again.
            if loads >= self.config.open_namespaces and _CHROMA_READS.get(key, 0) <= 1:
                logger.debug("data dir %s: %d namespaces loaded, closing their Chroma indexes", self.data_dir, loads)
                self.restart_embedded(quiet=True)

    @contextmanager
    def chroma_read(self) -> Iterator[None]:
        """A namespace load from Chroma in flight: no routine restart (:meth:`loaded_namespace`) stops the
        embedded system under it, and a restart made before it began is followed first."""
        key = str(self.data_dir)
        with _CHROMA_RELOAD_LOCK:
            _CHROMA_READS[key] = _CHROMA_READS.get(key, 0) + 1
        try:
            self._follow_restart()
            yield
        finally:
            with _CHROMA_RELOAD_LOCK:
                _CHROMA_READS[key] -= 1

    def _new_system(self, key: str) -> None:
        """Stop this store's embedded system and start a new one for the data directory ``key``: a new epoch,
        its namespace loads counted from 0 (the caller holds the reload lock)."""
        self._stop_system()
        self.make_client()  # registers the new client
        _CHROMA_EPOCH[key] = _CHROMA_EPOCH.get(key, 0) + 1
        _CHROMA_LOADS[key] = 0

    def _stop_system(self) -> None:
        """Stop and unregister the embedded system of this store's client (the caller holds the reload lock)."""
        from chromadb.api.shared_system_client import SharedSystemClient

        ident = getattr(self.client, "_identifier", None)
        system = None
        if ident:
            system = SharedSystemClient._identifier_to_system.pop(ident, None)
            SharedSystemClient._identifier_to_refcount.pop(ident, None)
        if system is not None:
            system.stop()

    def reload_chroma(self, gen: int) -> None:
        """Reopen the embedded Chroma system after another process wrote: its in-memory HNSW
        index and write-ahead position are stale (a fresh system replays the log)."""
        key = str(self.data_dir)
        with _CHROMA_RELOAD_LOCK:
            if _CHROMA_SYNCED.get(key, -1) < gen:
                self._new_system(key)
                _CHROMA_SYNCED[key] = gen  # after: a failed restart is tried again by the next call
            self.client = _CHROMA_CLIENTS.get(key, self.client)
            self._epoch = _CHROMA_EPOCH.get(key, 0)

    def make_client(self) -> Any:
        """A Chroma client for the config's mode (an embedded one is registered per data directory).

        Raises:
            StoreError: If the server cannot be reached, or the embedded database cannot be created or opened.
        """
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        mode = self.config.chroma_mode
        if mode == "ephemeral":
            return ephemeral_client(settings)
        if mode == "http":
            try:
                return chromadb.HttpClient(
                    host=self.config.chroma_host, port=self.config.chroma_port, settings=settings
                )
            except Exception as exc:
                raise StoreError(
                    f"cannot reach the Chroma server at {self.config.chroma_host}:{self.config.chroma_port}: "
                    f"{exc}; start it with `chroma run` or fix chroma_host/chroma_port"
                ) from exc
        from chromadb.api.shared_system_client import SharedSystemClient

        path = self.data_dir / "chroma"
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the Chroma folder {path} ({type(exc).__name__}: {exc.strerror or exc}): make the "
                f"data directory {self.data_dir} writable, or choose another data_dir"
            ) from exc
        key = str(self.data_dir)
        new_system = str(path) not in SharedSystemClient._identifier_to_system
        lock = self.dir_lock or DirLock(self.data_dir)
        gen = lock.read()[0]  # before opening: the new system has seen at least this
        # Processes opening a new data dir at once would each create Chroma's tables ("table
        # collections already exists"): open under the directory lock.
        with lock:
            try:
                if new_system:  # at most CogMemConfig.open_namespaces HNSW indexes (and their files) open
                    start_embedded_system(str(path), settings, self.config.open_namespaces)
                client = chromadb.PersistentClient(path=str(path), settings=settings)
            except Exception as exc:  # chromadb's errors share no base class worth naming
                if new_system:  # Chroma keeps the system it failed to start: a retry would reuse it
                    drop_chroma_system(str(path))
                raise StoreError(open_failure(path / "chroma.sqlite3", exc)) from exc
        with _CHROMA_RELOAD_LOCK:
            if new_system:
                _CHROMA_SYNCED[key] = gen
            _CHROMA_CLIENTS[key] = client
        return client


class ReadChecks:
    """The freshness check of a read: the data directory's counter, and in ``http`` mode the namespace's
    version token on the server, checked once per block of reads (:meth:`reading`).

    Args:
        access: The store's :class:`DataDirAccess`.
        sync: The store's :class:`~langmem_cog.storage.sync.ServerSync`.
        shared: Whether the store is on a shared Chroma server (``http`` mode).
    """

    def __init__(self, access: DataDirAccess, sync: ServerSync, *, shared: bool) -> None:
        self._access = access
        self._sync = sync
        self._shared = shared
        self._checking = threading.local()  # the namespaces checked by this thread's current read

    def checked(self) -> set[str]:
        """The namespaces that this thread's current read has checked already."""
        checked = getattr(self._checking, "namespaces", None)
        if checked is None:
            checked = self._checking.namespaces = set()
        return checked

    @contextmanager
    def reading(self, namespace: str) -> Iterator[None]:
        """Check once that the store's view of a namespace is up to date, for every read in the block
        (see :meth:`~langmem_cog.store.TurnStore.reading`)."""
        validate_namespace(namespace)
        checked = self.checked()
        if namespace in checked:
            yield
            return
        self.fresh_ns(namespace)
        checked.add(namespace)
        try:
            yield
        finally:
            checked.discard(namespace)

    def fresh_ns(self, namespace: str) -> None:
        """The data directory's check, then (http mode, unless this thread's read checked already) the
        server's (:meth:`~langmem_cog.storage.sync.ServerSync.check`)."""
        self._access.fresh()
        if self._shared and namespace not in self.checked():
            self._sync.check(namespace)

    def check_now(self, namespace: str) -> None:
        """Both checks now, whatever this thread's read checked (``http`` mode only)."""
        validate_namespace(namespace)
        if self._shared:
            self._access.fresh()
            self._sync.check(namespace)

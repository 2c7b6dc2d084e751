"""Where graph snapshots live: a small :class:`GraphStore` interface and two backends.

A snapshot is the JSON payload of one namespace's PEC2F graph (``schema_version``,
``namespace``, ``graph``), as :class:`~langmem_cog.graph.store.GraphMemory` writes it.

* :class:`FileGraphStore`: one JSON file per namespace under ``<root>/graph/``, written
  atomically (temp file, fsync, ``os.replace``, fsync of the folder) — the same files
  ``GraphMemory(data_dir)`` writes by default.
* :class:`BaseStoreGraphStore`: any LangGraph ``BaseStore`` (``InMemoryStore``, or
  ``PostgresStore`` from ``langgraph-checkpoint-postgres`` / ``SqliteStore`` from
  ``langgraph-checkpoint-sqlite`` so that many workers share memory through one database).
  Besides the snapshot it holds an append-only **journal** per namespace, so that workers
  writing at once never lose each other's updates (see the class).

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> gs = BaseStoreGraphStore(InMemoryStore())
    >>> gs.write("alice", {"schema_version": 1, "namespace": "alice", "graph": {}})
    >>> gs.read("alice")["namespace"], gs.version("alice") is not None
    ('alice', True)
    >>> gs.delete("alice"), gs.read("alice")
    (True, None)
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Hashable
from pathlib import Path
from typing import Any, cast

from langmem_cog.errors import InvalidInputError, StoreError
from langmem_cog.locking import atomic_write
from langmem_cog.records import validate_namespace

__all__ = ["GraphStore", "FileGraphStore", "BaseStoreGraphStore", "snapshot_key", "entry_key"]


def snapshot_key(namespace: str) -> str:
    """The storage key of a namespace's snapshot: a hash, never the raw id (same as the file name stem)."""
    return hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:40]


class GraphStore(ABC):
    """Storage of graph snapshots, one per namespace.

    Implementations must make :meth:`write` atomic (a reader sees the previous or the new
    snapshot, never a mix) and :meth:`version` cheap (``GraphMemory`` calls it to notice
    snapshots rewritten by another process or worker).
    """

    #: Whether GraphMemory keeps an append-only journal in this backend (:class:`BaseStoreGraphStore`)
    #: instead of rewriting the whole snapshot on every commit.
    journaled = False

    @abstractmethod
    def read(self, namespace: str) -> dict[str, Any] | None:
        """The namespace's snapshot payload, or ``None`` if there is none."""

    @abstractmethod
    def write(self, namespace: str, payload: dict[str, Any]) -> None:
        """Replace the namespace's snapshot atomically."""

    @abstractmethod
    def delete(self, namespace: str) -> bool:
        """Delete the namespace's snapshot (and any leftovers); returns whether one existed."""

    @abstractmethod
    def version(self, namespace: str) -> Hashable | None:
        """A token that changes whenever the snapshot is rewritten (``None``: no snapshot)."""

    def describe(self, namespace: str) -> str:
        """Where the snapshot lives, for error messages."""
        return f"{type(self).__name__}[{namespace!r}]"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`~langmem_cog.locking.atomic_write`, UTF-8).

    Raises:
        OSError: If the folder or the file cannot be written.
    """
    atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


class FileGraphStore(GraphStore):
    """One JSON file per namespace under ``root/graph/`` (the default backend's format).

    Args:
        root: The data directory (``CogMemConfig.data_dir``); files go to ``root/graph/<hash>.json``.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser()

    def path(self, namespace: str) -> Path:
        """The snapshot file of a namespace."""
        validate_namespace(namespace)
        return self.root / "graph" / f"{snapshot_key(namespace)}.json"

    def describe(self, namespace: str) -> str:
        return f"the graph file {self.path(namespace)}"

    def read(self, namespace: str) -> dict[str, Any] | None:
        path = self.path(namespace)
        if not path.exists():
            return None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError
            raise StoreError(f"{self.describe(namespace)} is unreadable or corrupt ({exc})") from exc
        if not isinstance(raw, dict):
            raise StoreError(f"{self.describe(namespace)} is not a graph snapshot")
        return raw

    def write(self, namespace: str, payload: dict[str, Any]) -> None:
        path = self.path(namespace)
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        try:
            atomic_write_text(path, text)
        except OSError as exc:
            raise StoreError(f"cannot write the graph of namespace {namespace!r} to {path}: {exc}") from exc

    def delete(self, namespace: str) -> bool:
        path = self.path(namespace)
        existed = path.exists()
        path.unlink(missing_ok=True)
        if path.parent.exists():  # temp files of an interrupted write hold the graph's text too
            for tmp in path.parent.glob(f".{path.stem}.*.tmp"):
                tmp.unlink(missing_ok=True)
        return existed

    def version(self, namespace: str) -> Hashable | None:
        try:
            st = self.path(namespace).stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)


class BaseStoreGraphStore(GraphStore):
    """Graphs in a LangGraph ``BaseStore`` (e.g. ``PostgresStore``), shared by every worker using it.

    A ``BaseStore`` has no compare-and-set: a worker that rewrites a whole snapshot can overwrite,
    unseen, the snapshot another worker wrote a moment before. So the graph of a namespace is kept as
    an **append-only journal of per-writer entries plus a snapshot that is only a cache**:

    * ``<prefix>/<hash>/log`` holds the entries. Each :class:`~langmem_cog.graph.store.GraphMemory`
      is a writer with a random id; its commits are entries ``<writer>.<seq>`` (``seq`` = 1, 2, ... per
      writer and namespace) holding the operations of the commit (the extractions applied, the
      ids deleted, ...). A key is written by one writer, once: puts of distinct keys never clobber
      each other, so no entry is ever lost to a concurrent write.
    * ``<prefix>/<hash>/heads`` holds one item per writer, ``<writer>`` -> ``{"seq": n}``, written in the
      same ``batch`` call as entry ``n`` (after it in the call; one ``INSERT`` on the SQL stores). Listing
      the heads (one ``search``) tells a reader exactly which entries exist that it has not applied.
    * ``<prefix>/<hash>`` holds the snapshot: the graph after folding the entries up to a vector clock
      ``vc`` (writer -> seq), plus that clock. Any writer may rewrite it (a compaction); a slower
      writer may overwrite a newer snapshot with an older one, which only means that readers replay a
      few more entries on top of it: entries are never deleted (except by :meth:`delete`), so a
      snapshot plus the entries past its clock is the whole graph whichever snapshot won.
      ``<prefix>/<hash>.rev`` holds a revision token (written with the snapshot).

    Entries of deleted turns are scrubbed (their extractions removed) by the deleting worker, so
    the deleted text leaves the store.

    Args:
        store: The LangGraph store.
        prefix: The store namespace the items go under.
    """

    #: GraphMemory keeps a journal in this backend (see the class docstring).
    journaled = True
    #: The most items one listing may return (heads of one namespace, entries of a forget).
    LIST_LIMIT = 100_000
    _CHUNK = 500  # keys per batch of gets

    def __init__(self, store: Any, prefix: tuple[str, ...] = ("langmem_cog", "graphs")) -> None:
        from langgraph.store.base import BaseStore

        if not isinstance(store, BaseStore):
            raise InvalidInputError(f"store must be a langgraph BaseStore, got {type(store).__name__}")
        if not prefix or any(not p or "." in p for p in prefix):
            raise InvalidInputError(f"prefix={prefix!r} is invalid: non-empty labels without '.'")
        self.store = store
        self.prefix = tuple(prefix)

    def describe(self, namespace: str) -> str:
        return f"the graph snapshot {'/'.join(self.prefix)}/{snapshot_key(namespace)}"

    def _space(self, namespace: str, part: str) -> tuple[str, ...]:
        return (*self.prefix, snapshot_key(namespace), part)

    def _fail(self, what: str, namespace: str, exc: BaseException) -> StoreError:
        return StoreError(f"cannot {what} of namespace {namespace!r} in {'/'.join(self.prefix)} "
                          f"({type(exc).__name__}: {exc}): check that the store is reachable")

    # ------------------------------------------------------------------ the snapshot
    def read(self, namespace: str) -> dict[str, Any] | None:
        state = self.read_state(namespace)
        return None if state is None else state["snapshot"]

    def read_state(self, namespace: str) -> dict[str, Any] | None:
        """The snapshot item: ``snapshot`` (the payload), ``vc`` (the writer -> seq clock it folds; ``{}``
        for a snapshot written without a journal), ``hlc``, ``index`` (turn id -> entry keys holding its
        extraction) and ``size``; ``None`` if there is none.

        Raises:
            StoreError: If the item is not a graph snapshot, or the store cannot be read.
        """
        validate_namespace(namespace)
        try:
            item = self.store.get(self.prefix, snapshot_key(namespace))
        except Exception as exc:
            raise self._fail("read the graph snapshot", namespace, exc) from exc
        if item is None:
            return None
        value = item.value
        if not isinstance(value, dict) or not isinstance(value.get("snapshot"), dict):
            raise StoreError(f"{self.describe(namespace)} of namespace {namespace!r} is not a graph snapshot")
        # A copy: in-process stores hand out the stored object itself, and decoding mutates it.
        value = json.loads(json.dumps(value))
        vc, index = value.get("vc") or {}, value.get("index") or {}
        if not _is_clock(vc) or not isinstance(index, dict):
            raise StoreError(f"{self.describe(namespace)} of namespace {namespace!r} has a corrupt journal clock")
        return {"snapshot": value["snapshot"], "vc": vc, "hlc": int(value.get("hlc") or 0), "index": index,
                "size": int(value.get("size") or 0)}

    def write(self, namespace: str, payload: dict[str, Any]) -> None:
        """Replace the snapshot with one that folds no journal entry (the entries are replayed on top)."""
        self.write_state(namespace, payload)

    def write_state(self, namespace: str, payload: dict[str, Any], *, vc: dict[str, int] | None = None,
                    hlc: int = 0, index: dict[str, list[str]] | None = None, size: int = 0) -> None:
        """Write the snapshot (the graph after folding the entries up to ``vc``) and a new revision token."""
        from langgraph.store.base import PutOp

        validate_namespace(namespace)
        key = snapshot_key(namespace)
        rev = uuid.uuid4().hex
        value = {"snapshot": payload, "rev": rev, "namespace": namespace, "vc": dict(vc or {}), "hlc": int(hlc),
                 "index": dict(index or {}), "size": int(size)}
        try:
            self.store.batch([
                PutOp(self.prefix, key, value, index=False),
                PutOp(self.prefix, key + ".rev", {"rev": rev}, index=False),
            ])
        except Exception as exc:
            raise StoreError(f"cannot write {self.describe(namespace)} of namespace {namespace!r}: {exc}") from exc

    # ------------------------------------------------------------------ the journal
    def heads(self, namespace: str) -> dict[str, int]:
        """Writer id -> the sequence number of its last entry in the namespace (one ``search``).

        Raises:
            StoreError: If the store cannot be read or holds a malformed head.
        """
        validate_namespace(namespace)
        try:
            items = self.store.search(self._space(namespace, "heads"), limit=self.LIST_LIMIT)
        except Exception as exc:
            raise self._fail("list the graph journal", namespace, exc) from exc
        if len(items) >= self.LIST_LIMIT:
            raise StoreError(f"the graph journal of namespace {namespace!r} has {len(items)} writers or more: "
                             "rebuild it with CogMemory.rebuild_graph(namespace)")
        out: dict[str, int] = {}
        for item in items:
            seq = item.value.get("seq") if isinstance(item.value, dict) else None
            if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
                raise StoreError(f"the graph journal of namespace {namespace!r} has a malformed head {item.key!r}")
            out[item.key] = seq
        return out

    def append(self, namespace: str, writer: str, seq: int, entry: dict[str, Any]) -> None:
        """Write entry ``seq`` of ``writer`` and its head in one ``batch`` call (the entry first).

        Raises:
            StoreError: If the store cannot be written (the entry may or may not be there: the writer's
                next catch-up reads its head back, and a retry rewrites the same key).
        """
        from langgraph.store.base import PutOp

        validate_namespace(namespace)
        try:
            self.store.batch([
                PutOp(self._space(namespace, "log"), entry_key(writer, seq), entry, index=False),
                PutOp(self._space(namespace, "heads"), writer, {"seq": seq}, index=False),
            ])
        except Exception as exc:
            raise self._fail("append to the graph journal", namespace, exc) from exc

    def entries(self, namespace: str, keys: list[str]) -> dict[str, dict[str, Any] | None]:
        """The entries of ``keys`` (``None`` for a missing one), read in batches of gets; copies."""
        from langgraph.store.base import GetOp, Item

        validate_namespace(namespace)
        space = self._space(namespace, "log")
        out: dict[str, dict[str, Any] | None] = {}
        for i in range(0, len(keys), self._CHUNK):
            chunk = keys[i : i + self._CHUNK]
            try:
                items = cast("list[Item | None]", self.store.batch([GetOp(space, k) for k in chunk]))  # a GetOp's result
            except Exception as exc:
                raise self._fail("read the graph journal", namespace, exc) from exc
            for k, item in zip(chunk, items, strict=True):
                out[k] = None if item is None else json.loads(json.dumps(item.value))
        return out

    def rewrite_entry(self, namespace: str, key: str, entry: dict[str, Any]) -> None:
        """Overwrite an existing entry (used only to scrub the extractions of deleted turns)."""
        validate_namespace(namespace)
        try:
            self.store.put(self._space(namespace, "log"), key, entry, index=False)
        except Exception as exc:
            raise self._fail("scrub the graph journal", namespace, exc) from exc

    # ------------------------------------------------------------------ the rest of the interface
    def delete(self, namespace: str) -> bool:
        """Delete the snapshot, the revision token, every journal entry and every head."""
        from langgraph.store.base import PutOp

        validate_namespace(namespace)
        key = snapshot_key(namespace)
        try:
            existed = self.store.get(self.prefix, key + ".rev") is not None
            self.store.batch([PutOp(self.prefix, key, None), PutOp(self.prefix, key + ".rev", None)])
            for part in ("heads", "log"):
                space = self._space(namespace, part)
                while True:  # offset 0 each time: what was listed is deleted before the next listing
                    items = self.store.search(space, limit=self._CHUNK)
                    if not items:
                        break
                    existed = True
                    self.store.batch([PutOp(item.namespace, item.key, None) for item in items])
        except Exception as exc:
            raise self._fail("delete the graph", namespace, exc) from exc
        return existed

    def version(self, namespace: str) -> Hashable | None:
        """The revision token of the snapshot and the journal's heads (changes with every commit)."""
        validate_namespace(namespace)
        try:
            item = self.store.get(self.prefix, snapshot_key(namespace) + ".rev")
        except Exception as exc:
            raise self._fail("read the graph revision", namespace, exc) from exc
        heads = self.heads(namespace)
        if item is None and not heads:
            return None
        return (None if item is None else str(item.value.get("rev")), tuple(sorted(heads.items())))


def entry_key(writer: str, seq: int) -> str:
    """The key of a journal entry: the writer id and its sequence number (zero-padded: keys sort by seq)."""
    return f"{writer}.{seq:012d}"


def _is_clock(vc: Any) -> bool:
    return isinstance(vc, dict) and all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in vc.items())

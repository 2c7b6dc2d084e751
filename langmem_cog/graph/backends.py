"""Where graph snapshots live: a small :class:`GraphStore` interface and two backends.

A snapshot is the JSON payload of one namespace's PEC2F graph (``schema_version``,
``namespace``, ``graph``), as :class:`~langmem_cog.graph.store.GraphMemory` writes it.

* :class:`FileGraphStore`: one JSON file per namespace under ``<root>/graph/``, written
  atomically (temp file, fsync, ``os.replace``, fsync of the folder) — the same files
  ``GraphMemory(data_dir)`` writes by default.
* :class:`BaseStoreGraphStore`: any LangGraph ``BaseStore`` (``InMemoryStore``, or
  ``PostgresStore`` from ``langgraph-checkpoint-postgres`` so that many workers share memory
  through one server). The snapshot and a small revision item are written in one
  ``batch`` call, so readers see the old or the new snapshot and check the revision cheaply.

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
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from langmem_cog.errors import InvalidInputError, StoreError
from langmem_cog.locking import fsync_dir
from langmem_cog.records import validate_namespace

__all__ = ["GraphStore", "FileGraphStore", "BaseStoreGraphStore", "snapshot_key"]


def snapshot_key(namespace: str) -> str:
    """The storage key of a namespace's snapshot: a hash, never the raw id (same as the file name stem)."""
    return hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:40]


class GraphStore(ABC):
    """Storage of graph snapshots, one per namespace.

    Implementations must make :meth:`write` atomic (a reader sees the previous or the new
    snapshot, never a mix) and :meth:`version` cheap (``GraphMemory`` calls it to notice
    snapshots rewritten by another process or worker).
    """

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
    """Write ``text`` to ``path`` atomically: a fsynced temp file renamed over it, then the folder fsynced.

    A crash leaves either the old file or the new one, never a torn one (a stray ``.tmp`` at worst).

    Raises:
        OSError: If the folder or the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


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
    """Snapshots in a LangGraph ``BaseStore`` (e.g. ``PostgresStore``), shared by every worker using it.

    Each namespace has two items under ``prefix``: ``<hash>`` holding the payload and
    ``<hash>.rev`` holding a revision token, written together in one ``batch`` call.

    Args:
        store: The LangGraph store.
        prefix: The store namespace the items go under.
    """

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

    def read(self, namespace: str) -> dict[str, Any] | None:
        validate_namespace(namespace)
        item = self.store.get(self.prefix, snapshot_key(namespace))
        if item is None:
            return None
        value = item.value
        if not isinstance(value, dict) or not isinstance(value.get("snapshot"), dict):
            raise StoreError(f"{self.describe(namespace)} of namespace {namespace!r} is not a graph snapshot")
        # A copy: in-process stores hand out the stored object itself, and decoding mutates it.
        return json.loads(json.dumps(value["snapshot"]))

    def write(self, namespace: str, payload: dict[str, Any]) -> None:
        from langgraph.store.base import PutOp

        validate_namespace(namespace)
        key = snapshot_key(namespace)
        rev = uuid.uuid4().hex
        try:
            self.store.batch([
                PutOp(self.prefix, key, {"snapshot": payload, "rev": rev, "namespace": namespace}, index=False),
                PutOp(self.prefix, key + ".rev", {"rev": rev}, index=False),
            ])
        except Exception as exc:
            raise StoreError(f"cannot write {self.describe(namespace)} of namespace {namespace!r}: {exc}") from exc

    def delete(self, namespace: str) -> bool:
        from langgraph.store.base import PutOp

        validate_namespace(namespace)
        key = snapshot_key(namespace)
        existed = self.store.get(self.prefix, key + ".rev") is not None
        self.store.batch([PutOp(self.prefix, key, None), PutOp(self.prefix, key + ".rev", None)])
        return existed

    def version(self, namespace: str) -> Hashable | None:
        validate_namespace(namespace)
        item = self.store.get(self.prefix, snapshot_key(namespace) + ".rev")
        return None if item is None else str(item.value.get("rev"))

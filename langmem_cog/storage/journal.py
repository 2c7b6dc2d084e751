"""The intent journal: records of deletes and forgets in progress (``data_dir/intents``), written atomically,
and the running of a record's steps to completion (at the call, or by a replay after a crash or an error)."""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langmem_cog.chroma_files import is_segment_name
from langmem_cog.errors import StoreError
from langmem_cog.locking import fsync_dir
from langmem_cog.records import validate_namespace
from langmem_cog.storage.chroma import collection_name

__all__ = ["INTENT_DIR", "Intent", "IntentJournal", "write_atomic"]

logger = logging.getLogger("langmem_cog.store")  # the store's logger, as before the split

#: The folder (under the data directory) of the records of deletes and forgets in progress.
INTENT_DIR = "intents"


@dataclass
class Intent:
    """A delete or forget in progress, as recorded in ``data_dir/intents/<time>-<random>.json``.

    Written (atomically) before the first step and removed after the last; the steps are
    idempotent, so a replay of a record redoes them all. Only ids are recorded, never text.
    """

    op: Literal["delete", "forget"]
    namespace: str
    ids: list[str] = field(default_factory=list)
    collection_id: str | None = None  # the namespace's collection when the call ran (None: none)
    segment_dirs: list[str] = field(default_factory=list)  # its segment folders (forget), read before the drop
    graph: bool = False  # a finisher (the graph step) must run before the record goes
    store_done: bool = False  # the store's steps are done; waiting for the finisher
    pid: int = field(default_factory=os.getpid)
    path: Path | None = None  # not recorded
    replay: bool = False  # not recorded: run by a replay (reload the namespace from Chroma first)

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": 1, "op": self.op, "namespace": self.namespace, "collection": collection_name(self.namespace),
            "collection_id": self.collection_id, "ids": list(self.ids), "segment_dirs": list(self.segment_dirs),
            "graph": self.graph, "store_done": self.store_done, "pid": self.pid,
        }

    @classmethod
    def parse(cls, raw: Any) -> Intent:
        """An intent from its JSON record.

        Raises:
            ValueError: If the record is not one.
        """
        if not isinstance(raw, dict) or raw.get("op") not in ("delete", "forget"):
            raise ValueError("not an intent record")
        ids, dirs, col_id = raw.get("ids", []), raw.get("segment_dirs", []), raw.get("collection_id")
        if not all(isinstance(v, list) and all(isinstance(i, str) for i in v) for v in (ids, dirs)):
            raise ValueError("ids and segment_dirs must be lists of strings")
        if col_id is not None and not isinstance(col_id, str):
            raise ValueError("collection_id must be a string")
        pid = raw.get("pid", 0)
        return cls(op=raw["op"], namespace=validate_namespace(raw.get("namespace")), ids=ids, collection_id=col_id,
                   segment_dirs=[d for d in dirs if is_segment_name(d)], graph=raw.get("graph") is True,
                   store_done=raw.get("store_done") is True, pid=pid if isinstance(pid, int) else 0)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path``: a fsynced temp file renamed over it, then the folder fsynced.

    Raises:
        OSError: If it cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


class IntentJournal:
    """The records of a store's deletes and forgets in progress, and the running of their steps.

    A delete or forget is recorded (:meth:`record`) before its first step and the record removed
    (:meth:`clear`) after its last; :meth:`run` does both around the steps, and :meth:`finish` runs the
    records that a crash or an error left. A store without a data directory records nothing.

    Args:
        data_dir: The store's data directory (the records live in ``data_dir/intents``).
        persistent: Whether the store writes files there; when false, nothing is recorded.
        steps: Does (or redoes) the store's steps of an intent; returns how many turns a delete removed
            or whether a forget found a collection. Every step must be safe to repeat.
        namespace_lock: The lock of a namespace, held while its intent runs.

    Example:
        >>> from contextlib import nullcontext
        >>> journal = IntentJournal(Path("/nonexistent"), persistent=False, steps=lambda intent: 0,
        ...                         namespace_lock=lambda ns: nullcontext())
        >>> journal.pending()
        []
    """

    def __init__(self, data_dir: Path, *, persistent: bool, steps: Callable[[Intent], int | bool],
                 namespace_lock: Callable[[str], AbstractContextManager[Any]]) -> None:
        self.data_dir = data_dir
        self.persistent = persistent
        self._steps = steps
        self._namespace_lock = namespace_lock
        self._replaying = False

    @property
    def folder(self) -> Path:
        """The folder of the records (``data_dir/intents``)."""
        return self.data_dir / INTENT_DIR

    def pending(self) -> list[Path]:
        """The records of deletes and forgets not finished yet (``data_dir/intents/*.json``), oldest first."""
        if not self.persistent:
            return []
        try:
            names = os.listdir(self.folder)
        except OSError:  # no folder yet
            return []
        return [self.folder / n for n in sorted(names) if n.endswith(".json") and not n.startswith(".")]

    def finish(self, finisher: Callable[[dict[str, Any]], Any] | None, *,
               reload_after_crash: Callable[[], None] | None) -> int:
        """Run the pending intents in order (the caller holds the data directory lock); returns how many ran.

        An intent whose store steps are done but that waits for a finisher stays while ``finisher`` is
        ``None``. A run started while another is under way (a write made by a replayed step) does nothing.

        Args:
            finisher: Runs the last step of an intent recorded with ``graph: true``.
            reload_after_crash: Called once, before the first intent that another process left half done
                (this process's Chroma system may not have seen its writes); ``None``: no reload.

        Raises:
            StoreError: If one cannot be finished (it stays recorded).
        """
        files = self.pending()
        if not files or self._replaying:
            return 0
        self._replaying = True
        done = 0
        reloaded = reload_after_crash is None
        try:
            for tmp in self.folder.glob(".*.tmp"):  # a record torn by a crash: never renamed, never started
                tmp.unlink(missing_ok=True)
            for path in files:
                intent = self.read(path)
                if intent is None or (intent.store_done and intent.graph and finisher is None):
                    continue
                if not reloaded and not intent.store_done and intent.pid != os.getpid():
                    # Another process was cut short mid-way: this process's Chroma system may not have
                    # seen its writes (it never recorded them in the generation counter).
                    assert reload_after_crash is not None
                    reload_after_crash()
                    reloaded = True
                logger.warning("finishing the interrupted %s of namespace %r (recorded in %s)",
                               intent.op, intent.namespace, path.name)
                intent.replay = True
                self.run(intent, finisher)
                done += 1
        finally:
            self._replaying = False
        return done

    def read(self, path: Path) -> Intent | None:
        """A recorded intent; ``None`` (and the file removed, logged) if it cannot be read."""
        try:
            intent = Intent.parse(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, KeyError) as exc:
            logger.error("removing the unreadable intent file %s (%s): the delete or forget it recorded is "
                         "not finished; call it again", path, exc)
            path.unlink(missing_ok=True)
            return None
        intent.path = path
        return intent

    def record(self, intent: Intent) -> None:
        """Write (or rewrite) an intent file atomically (temp file, fsync, rename, folder fsync).

        Raises:
            StoreError: If it cannot be written (nothing was deleted).
        """
        if not self.persistent:
            return  # nothing on disk to finish after a crash
        if intent.path is None:
            intent.path = self.folder / f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"
        try:
            write_atomic(intent.path, json.dumps(intent.as_dict(), ensure_ascii=False))
        except OSError as exc:
            raise StoreError(
                f"cannot record the {intent.op} of namespace {intent.namespace!r} in {self.folder} ({exc}): "
                "nothing was deleted; make the data directory writable or free disk space, then retry"
            ) from exc

    def clear(self, intent: Intent) -> None:
        """Remove a finished intent's record (a failure is logged: a later replay repeats the steps)."""
        if intent.path is None:
            return
        try:
            intent.path.unlink(missing_ok=True)
            fsync_dir(intent.path.parent)
        except OSError as exc:  # done anyway: a later replay repeats the (idempotent) steps
            logger.warning("cannot remove the finished intent file %s: %s", intent.path, exc)

    def run(self, intent: Intent, finisher: Callable[[dict[str, Any]], Any] | None) -> int | bool:
        """Do (or redo) the store's steps of an intent, then the finisher's, then remove the record.

        Args:
            intent: The recorded intent.
            finisher: Runs the last step of an intent recorded with ``graph: true``; without it, such an
                intent is marked ``store_done`` and stays for the graph's owner.

        Returns:
            What the store's steps returned (``0`` or ``False`` when they were done before).

        Raises:
            StoreError: If a step fails; the record stays, for a retry, the next write or the next open.
        """
        ns = intent.namespace
        try:
            with self._namespace_lock(ns):
                result: int | bool = 0 if intent.op == "delete" else False
                if not intent.store_done:
                    result = self._steps(intent)
                if intent.graph:
                    if finisher is None:  # the graph's owner finishes it (a CogMemory on this data dir)
                        if not intent.store_done:
                            intent.store_done = True
                            self.record(intent)
                        return result
                    finisher(intent.as_dict())
                self.clear(intent)
                return result
        except Exception as exc:  # any failure leaves the record for the replay
            what = "deletion of turns" if intent.op == "delete" else "forget"
            where = (f"it is recorded in {intent.path} and finished by a retry of the call, the next write or the "
                     f"next open of {self.data_dir}") if intent.path is not None else "retry the call"
            raise StoreError(
                f"the {what} of namespace {ns!r} did not complete ({type(exc).__name__}: {exc}); {where}. Fix the "
                "cause (free disk space, make the data directory writable) if it persists"
            ) from exc

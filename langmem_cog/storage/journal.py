"""The intent journal: records of deletes and forgets in progress (``data_dir/intents``), written atomically."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langmem_cog.chroma_files import is_segment_name
from langmem_cog.locking import fsync_dir
from langmem_cog.records import validate_namespace
from langmem_cog.storage.chroma import collection_name


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

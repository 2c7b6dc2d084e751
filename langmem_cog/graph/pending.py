"""Adds whose graph step is still to come: what tells a process that a graph is behind only for now.

:meth:`~langmem_cog.memory.CogMemory.add_turns` writes the raw turns first and extracts their records
after, outside the data directory's lock (extraction can take seconds with an LLM). Until it commits the
graph, another process on the same data directory sees raw turns that the graph lacks, which is also what
a crash between the two steps leaves. To tell the two apart, an add records its turn ids in a marker file
(``<data dir>/graph/pending/<collection>.<pid>.<random>.json``) before the raw write and removes it once
its graph step has ended, committed or failed. :func:`in_flight` lists the ids of the markers whose
process is alive: a graph that lacks only those is being written, not out of step, and is left to its
writer. A marker of a dead process (a crash) is removed by the first process that reads it, and the
graph is then repaired as usual.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> marker = record(root, "alice", ["t1", "t2"])
    >>> sorted(in_flight(root, "alice"))
    ['t1', 't2']
    >>> done(marker)
    >>> in_flight(root, "alice")
    set()
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterable
from pathlib import Path

from langmem_cog.graph.backends import atomic_write_text
from langmem_cog.storage.chroma import collection_name

__all__ = ["done", "in_flight", "record"]

logger = logging.getLogger(__name__)

PENDING_DIR = Path("graph") / "pending"


def _folder(data_dir: Path) -> Path:
    return data_dir / PENDING_DIR


def record(data_dir: Path, namespace: str, ids: Iterable[str]) -> Path:
    """Write the marker of an add of ``ids`` to ``namespace`` by this process; returns its path.

    Raises:
        OSError: If the marker cannot be written (the caller has written nothing yet).
    """
    folder = _folder(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{collection_name(namespace)}.{os.getpid()}.{uuid.uuid4().hex[:12]}.json"
    atomic_write_text(path, json.dumps({"namespace": namespace, "pid": os.getpid(), "ids": list(ids)}))
    return path


def done(marker: Path) -> None:
    """Remove an add's marker (its graph step ended); a marker already gone is fine."""
    try:
        marker.unlink(missing_ok=True)
    except OSError as exc:  # a leftover marker only delays a repair until its process has exited
        logger.warning("cannot remove the pending-add marker %s (%s)", marker, exc)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def in_flight(data_dir: Path, namespace: str) -> set[str]:
    """The turn ids of ``namespace`` that live processes are adding (their graph step not ended yet).

    Markers of processes that no longer run are removed; unreadable markers are skipped with a warning.
    """
    folder = _folder(data_dir)
    if not folder.is_dir():
        return set()
    ids: set[str] = set()
    for path in folder.glob(f"{collection_name(namespace)}.*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pid, listed = int(data["pid"]), data["ids"]
            if data["namespace"] != namespace or not isinstance(listed, list):
                continue
        except FileNotFoundError:  # its add ended meanwhile
            continue
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.warning("ignoring the unreadable pending-add marker %s (%s)", path, exc)
            continue
        if _alive(pid):
            ids.update(str(i) for i in listed)
        else:
            logger.info("removing the pending-add marker %s of process %d, which has exited", path.name, pid)
            done(path)
    return ids

"""The store's side of the BM25 index: adding turns to it and its log, and cleaning up after its cut-short compactions."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from langmem_cog.errors import StoreError
from langmem_cog.lexical import LexicalIndex
from langmem_cog.records import Turn

logger = logging.getLogger("langmem_cog.store")  # the store's logger, as before the split


def lexical_add(namespace: str, index: LexicalIndex, turns: list[Turn], persist: bool, what: str) -> bool:
    """Add turns to a BM25 index and its log; ``False`` if the log could not be written (the index
    then holds them in memory only: an unwritable log must not make the namespace unreadable)."""
    ids, texts = [t.id for t in turns], [t.memory_text for t in turns]
    try:
        index.add(ids, texts, persist=persist)
    except StoreError as exc:
        logger.warning("namespace %r: %s; BM25 %s in memory only", namespace, exc, what)
        index.add(ids, texts, persist=False)
        return False
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def remove_stale_temp(log: Path | None) -> None:
    """Remove the temporary copies of a BM25 log (``<log>.<pid>.tmp``) that compactions cut short by a
    crash left: they hold the tokens of deleted turns. A copy of a live process other than this one
    (a reader repairing a damaged log) is kept."""
    if log is None or not log.parent.is_dir():
        return
    for tmp in log.parent.glob(log.name + ".*.tmp"):
        pid = tmp.name[len(log.name) + 1 : -len(".tmp")]
        if pid.isdigit() and (int(pid) == os.getpid() or not _pid_alive(int(pid))):
            tmp.unlink(missing_ok=True)

"""Context vectors: each turn embedded together with the turn before it in its session.

A reply such as ``"Mel: Yes, last week with the kids!"`` says little on its own; embedded with the
turn it answers (``"Caroline: Did you go camping?"``) it matches "When did Mel go camping?". Beside
each turn's own vector the store keeps the vector of :func:`context_texts`: the previous turn of
the same conversation and session, a newline, then the turn. The fusion features ``context_z`` and
``context_rr`` score the query against these vectors (:mod:`langmem_cog.rank.features`).

Context vectors are a derived index, like the PEC2F graph. Each row is keyed by a hash of its
context text, so a row whose previous turn changed (deleted, or a turn inserted before it) is
re-embedded the next time the namespace is refreshed, and rows of deleted turns are dropped.
Persistent stores keep them in ``<data_dir>/context/<collection>.npz`` so a restart does not
re-embed the namespace; a missing, unreadable or stale file only costs re-embedding.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.records import make_turn
    >>> ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
    >>> turns = [make_turn(id=f"t{i}", namespace="doc", speaker=s, text=x, position=i, session_id=sess,
    ...                    timestamp=ts)
    ...          for i, (s, x, sess) in enumerate([("Caroline", "Did you go camping?", "1"),
    ...                                            ("Mel", "Yes, last week!", "1"), ("Mel", "Hi again.", "2")])]
    >>> context_texts(turns)
    ['Caroline: Did you go camping?', 'Caroline: Did you go camping?\\nMel: Yes, last week!', 'Mel: Hi again.']
"""

from __future__ import annotations

import hashlib
import logging
import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from langmem_cog.records import Turn

__all__ = ["ContextIndex", "context_texts"]

logger = logging.getLogger(__name__)


def context_texts(turns: Sequence[Turn]) -> list[str]:
    """The context text of each turn of a chronologically ordered list: the previous turn of the same
    conversation and session (if any), a newline, then the turn's own ``memory_text``."""
    out = []
    prev: Turn | None = None
    for t in turns:
        same = (prev is not None and prev.conversation_id == t.conversation_id
                and prev.session_id == t.session_id)
        out.append(f"{prev.memory_text}\n{t.memory_text}" if same and prev is not None else t.memory_text)
        prev = t
    return out


def _key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class ContextIndex:
    """The context vectors of one namespace, computed on demand and kept up to date by key.

    Args:
        embed: Normalised float32 vectors of a list of texts (the store's embedder).
        path: Where the vectors persist (``None``: in memory only).
    """

    def __init__(self, embed: Callable[[list[str]], np.ndarray], path: Path | None = None) -> None:
        self._embed = embed
        self.path = path
        self._rows: dict[str, tuple[str, np.ndarray]] | None = None

    def _load(self) -> dict[str, tuple[str, np.ndarray]]:
        if self._rows is not None:
            return self._rows
        rows: dict[str, tuple[str, np.ndarray]] = {}
        if self.path is not None and self.path.exists():
            try:
                with np.load(self.path, allow_pickle=False) as data:
                    ids, keys, vecs = data["ids"], data["keys"], data["vectors"]
                    rows = {str(i): (str(k), v) for i, k, v in zip(ids, keys, vecs, strict=True)}
            except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
                logger.warning("context vectors at %s are unreadable (%s): recomputing them", self.path, exc)
        self._rows = rows
        return rows

    def matrix(self, turns: Sequence[Turn]) -> np.ndarray:
        """The context vectors of ``turns`` (chronological order), one row each; stale or missing rows are
        embedded in one batch and rows of turns no longer given are dropped.

        Returns:
            A float32 array of shape ``(len(turns), dim)`` (``(0, 0)`` for no turns).
        """
        rows = self._load()
        texts = context_texts(turns)
        keys = [_key(x) for x in texts]
        todo = [j for j, (t, k) in enumerate(zip(turns, keys, strict=True)) if rows.get(t.id, ("",))[0] != k]
        changed = bool(todo) or len(rows) != len(turns) or any(t.id not in rows for t in turns)
        if todo:
            vecs = np.asarray(self._embed([texts[j] for j in todo]), dtype=np.float32)
            for j, v in zip(todo, vecs, strict=True):
                rows[turns[j].id] = (keys[j], v)
        if changed:
            live = {t.id for t in turns}
            for tid in [i for i in rows if i not in live]:
                del rows[tid]
            self._save(rows)
        if not turns:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([rows[t.id][1] for t in turns]).astype(np.float32, copy=False)

    def _save(self, rows: dict[str, tuple[str, np.ndarray]]) -> None:
        if self.path is None:
            return
        if not rows:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        ids = list(rows)
        np.savez(tmp, ids=np.array(ids), keys=np.array([rows[i][0] for i in ids]),
                 vectors=np.stack([rows[i][1] for i in ids]))
        os.replace(tmp, self.path)

    def forget(self) -> None:
        """Drop every vector (and the file)."""
        self._rows = {}
        if self.path is not None:
            self.path.unlink(missing_ok=True)

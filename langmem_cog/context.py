"""Context vectors: each turn embedded together with the turns before it in its session.

A reply such as ``"Mel: Yes, last week with the kids!"`` says little on its own; embedded with the
turns it answers (``"Caroline: Did you go camping?"``) it matches "When did Mel go camping?". Beside
each turn's own vector the store keeps the vector of :func:`context_texts`: up to
:data:`CONTEXT_TURNS` previous turns of the same conversation and session, oldest first, one per
line, then the turn. The same texts also get a BM25 index of their own, so a question whose words
are split between a reply and the turn it answers still matches. The fusion features
``context_z`` / ``context_rr`` (cosine) and ``context_lex_z`` / ``context_lex_rr`` (BM25) score the
query against them (:mod:`langmem_cog.rank.features`).

Context vectors are a derived index, like the PEC2F graph. Each row remembers which previous turns
its context holds, so a row whose previous turns changed (one deleted, or a turn inserted before it)
is re-embedded at the next refresh (the store refreshes after every add and delete), and rows of
deleted turns are dropped. Persistent stores keep the vectors as append-only chunk files in
``<data_dir>/context/<collection>/`` so a restart does not re-embed the namespace; missing or
unreadable files only cost re-embedding. The BM25 side lives in memory and is re-tokenised (no
model call) on the first refresh after a restart.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.records import make_turn
    >>> ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
    >>> turns = [make_turn(id=f"t{i}", namespace="doc", speaker=s, text=x, position=i, session_id=sess,
    ...                    timestamp=ts)
    ...          for i, (s, x, sess) in enumerate([("Caroline", "Did you go camping?", "1"),
    ...                                            ("Mel", "Yes, last week!", "1"), ("Caroline", "Fun!", "1"),
    ...                                            ("Mel", "Hi again.", "2")])]
    >>> for text in context_texts(turns):
    ...     print(repr(text))
    'Caroline: Did you go camping?'
    'Caroline: Did you go camping?\\nMel: Yes, last week!'
    'Caroline: Did you go camping?\\nMel: Yes, last week!\\nCaroline: Fun!'
    'Mel: Hi again.'
"""

from __future__ import annotations

import logging
import os
import shutil
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from langmem_cog.lexical import LexicalIndex
from langmem_cog.records import Turn

__all__ = ["CONTEXT_TURNS", "ContextIndex", "context_text", "context_texts", "context_windows", "previous_turns"]

logger = logging.getLogger(__name__)

#: How many previous turns of its session a turn's context holds. Chosen by train-half
#: cross-validation on LoCoMo (``benchmarks/context_variants.py``; docs/BENCHMARKS.md, "The retrieval
#: cascade": "Two previous turns, and BM25 over the context texts").
CONTEXT_TURNS = 2

#: Separates the previous-turn ids of a row's key (turn ids never hold control characters).
_SEP = "\x1f"


def previous_turns(turns: Sequence[Turn]) -> list[Turn | None]:
    """Per turn of a chronologically ordered list, the turn before it in the same conversation and session."""
    out: list[Turn | None] = [None] * len(turns)
    for j in range(1, len(turns)):
        a, b = turns[j - 1], turns[j]
        if a.conversation_id == b.conversation_id and a.session_id == b.session_id:
            out[j] = a
    return out


def context_windows(turns: Sequence[Turn], n: int = CONTEXT_TURNS) -> list[list[Turn]]:
    """Per turn of a chronologically ordered list, up to ``n`` turns before it in the same conversation
    and session, oldest first."""
    previous = previous_turns(turns)
    out: list[list[Turn]] = []
    for j in range(len(turns)):
        window: list[Turn] = []
        k = j
        while len(window) < n and previous[k] is not None:
            k -= 1
            window.append(turns[k])
        out.append(window[::-1])
    return out


def context_text(turn: Turn, window: Sequence[Turn]) -> str:
    """The context text of ``turn``: the memory texts of its ``window`` (oldest first), then its own, a line each."""
    return "\n".join([p.memory_text for p in window] + [turn.memory_text])


def _key(window: Sequence[Turn]) -> str:
    return _SEP.join(p.id for p in window)


def context_texts(turns: Sequence[Turn]) -> list[str]:
    """The context text of each turn of a chronologically ordered list: up to :data:`CONTEXT_TURNS`
    previous turns of the same conversation and session (oldest first), then the turn, one
    ``memory_text`` per line."""
    return [context_text(t, w) for t, w in zip(turns, context_windows(turns), strict=True)]


#: Chunk files a namespace may hold before they are compacted into one.
MAX_CHUNKS = 16


class ContextIndex:
    """The context vectors (and context BM25) of one namespace, computed on demand and kept up to date.

    A row is keyed by its turn id and the ids of the previous turns its context holds; turns are
    immutable, so a row is re-embedded exactly when one of those changes (a deletion or an
    insertion before it). Rows persist as append-only chunk files (``<dir>/<n>.npz``: the rows
    written by one refresh), compacted into one when there are more than :data:`MAX_CHUNKS` or
    more dead rows than live ones, so an add writes what it changed. A refresh that drops rows
    (a deletion) rewrites the files, so a deleted turn's vector leaves the disk with it.

    Args:
        embed: Normalised float32 vectors of a list of texts (the store's embedder).
        path: The folder of the chunk files (``None``: in memory only).
    """

    def __init__(self, embed: Callable[[list[str]], np.ndarray], path: Path | None = None) -> None:
        self._embed = embed
        self.path = path
        self._rows: dict[str, tuple[str, np.ndarray]] | None = None
        self._chunks: list[Path] = []
        self._stored = 0  # rows in the chunk files, dead ones included
        self._lexical = LexicalIndex()  # BM25 over the context texts, in memory
        self._lexical_keys: dict[str, str] = {}  # turn id -> key of the context text indexed for it
        self._unsaved: dict[str, tuple[str, np.ndarray]] = {}  # rows computed but not yet on disk
        self._unsaved_drop = False  # whether rows were dropped since the files were last written

    def _load(self) -> dict[str, tuple[str, np.ndarray]]:
        if self._rows is not None:
            return self._rows
        rows: dict[str, tuple[str, np.ndarray]] = {}
        self._chunks, self._stored = [], 0
        if self.path is not None and self.path.is_dir():
            try:
                for chunk in sorted((p for p in self.path.glob("*.npz") if p.stem.isdigit()), key=lambda p: int(p.stem)):
                    with np.load(chunk, allow_pickle=False) as data:
                        for tid, prev, vec in zip(data["ids"], data["prevs"], data["vectors"], strict=True):
                            rows[str(tid)] = (str(prev), vec)
                        self._stored += len(data["ids"])
                    self._chunks.append(chunk)
            except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
                logger.warning("context vectors in %s are unreadable (%s): recomputing them", self.path, exc)
                rows, self._stored = {}, 0
                self._unsaved_drop = True  # the next write replaces every file
        self._rows = rows
        return rows

    def matrix(self, turns: Sequence[Turn], *, persist: bool = True) -> np.ndarray:
        """The context vectors of ``turns`` (chronological order), one row each; rows whose previous
        turns changed or that are missing are embedded in one batch, and rows of turns no longer given
        are dropped. The context BM25 index (:meth:`lexical_scores`) is brought up to date with them.

        Args:
            turns: The namespace's turns, oldest first.
            persist: Write the changed rows to disk now (``False``: keep them in memory until
                :meth:`flush` or the next call that may write, for a caller that does not hold the
                data directory lock).

        Returns:
            A float32 array of shape ``(len(turns), dim)`` (``(0, 0)`` for no turns); do not modify it.
        """
        rows = self._load()
        ids = [t.id for t in turns]
        windows = context_windows(turns)
        keys = [_key(w) for w in windows]
        todo = [j for j, (tid, key) in enumerate(zip(ids, keys, strict=True)) if rows.get(tid, (None,))[0] != key]
        written = self._unsaved
        if todo:
            vecs = np.asarray(self._embed([context_text(turns[j], windows[j]) for j in todo]), dtype=np.float32)
            for j, v in zip(todo, vecs, strict=True):
                rows[ids[j]] = written[ids[j]] = (keys[j], v)
        live = set(ids)
        dropped = [tid for tid in rows if tid not in live]
        for tid in dropped:
            del rows[tid]
            written.pop(tid, None)
        self._unsaved_drop = self._unsaved_drop or bool(dropped)
        if persist:
            self.flush()
        self._refresh_lexical(turns, windows, keys)
        out = np.stack([rows[tid][1] for tid in ids]).astype(np.float32, copy=False) if ids else np.zeros((0, 0), np.float32)
        out.setflags(write=False)
        return out

    def flush(self) -> None:
        """Write the rows computed by :meth:`matrix` calls with ``persist=False`` (and their deletions)."""
        if self._rows is not None and (self._unsaved or self._unsaved_drop):
            self._persist(self._rows, self._unsaved, self._unsaved_drop)
        self._unsaved, self._unsaved_drop = {}, False

    def _refresh_lexical(self, turns: Sequence[Turn], windows: list[list[Turn]], keys: list[str]) -> None:
        indexed = self._lexical_keys
        live = {t.id for t in turns}
        stale = [tid for tid in indexed if tid not in live]
        todo = [j for j, (t, key) in enumerate(zip(turns, keys, strict=True)) if indexed.get(t.id) != key]
        changed = [turns[j].id for j in todo if turns[j].id in indexed]
        if stale or changed:
            self._lexical.delete(stale + changed)
            for tid in stale:
                del indexed[tid]
        if todo:
            self._lexical.add([turns[j].id for j in todo], [context_text(turns[j], windows[j]) for j in todo])
            for j in todo:
                indexed[turns[j].id] = keys[j]

    def lexical_scores(self, query: str, ids: Sequence[str]) -> np.ndarray:
        """BM25 of ``query`` against the context texts of ``ids`` (as of the last :meth:`matrix`;
        0 for ids not indexed)."""
        return self._lexical.scores_for(query, ids)

    def _persist(self, rows: dict, written: dict, dropped: bool) -> None:
        if self.path is None:
            return
        # A deletion rewrites the files, so a deleted turn's vector leaves the disk with it.
        if dropped or len(self._chunks) >= MAX_CHUNKS or self._stored + len(written) > 2 * max(len(rows), 1):
            self._rewrite(rows)
            return
        self._chunks.append(self._write_chunk(written))
        self._stored += len(written)

    def _write_chunk(self, rows: dict[str, tuple[str, np.ndarray]]) -> Path:
        assert self.path is not None
        self.path.mkdir(parents=True, exist_ok=True)
        # Numbered after every chunk on disk, not only ours: another store object may have added some.
        numbers = [int(p.stem) for p in self.path.glob("*.npz") if p.stem.isdigit()]
        n = max([0, *numbers, *(int(p.stem) for p in self._chunks)]) + 1
        out = self.path / f"{n:08d}.npz"
        tmp = self.path / f"{n:08d}.{os.getpid()}.tmp.npz"
        ids = list(rows)
        vectors = np.stack([rows[i][1] for i in ids]) if ids else np.zeros((0, 0), dtype=np.float32)
        np.savez(tmp, ids=np.array(ids, dtype=str), prevs=np.array([rows[i][0] for i in ids], dtype=str), vectors=vectors)
        os.replace(tmp, out)
        return out

    def _rewrite(self, rows: dict[str, tuple[str, np.ndarray]]) -> None:
        """Compact: one chunk with every live row (written first), then the older chunks removed."""
        if self.path is None:
            return
        old = list(self.path.glob("*.npz")) if self.path.is_dir() else []  # temp files of torn writes too
        self._chunks = sorted((p for p in old if p.stem.isdigit()), key=lambda p: int(p.stem))
        fresh = [self._write_chunk(rows)] if rows else []
        for p in old:
            p.unlink(missing_ok=True)
        self._chunks, self._stored = fresh, len(rows)

    def forget(self) -> None:
        """Drop every vector (and the files) and the context BM25 index."""
        self._rows = {}
        self._unsaved, self._unsaved_drop = {}, False
        self._lexical.clear()
        self._lexical_keys.clear()
        if self.path is not None and self.path.is_dir():
            shutil.rmtree(self.path, ignore_errors=True)
        self._chunks, self._stored = [], 0

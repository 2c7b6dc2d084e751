"""The in-memory copy of a namespace: its turns and vectors in chronological order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from langmem_cog.records import Turn
from langmem_cog.storage.inputs import order_key


@dataclass
class Cache:
    ids: list[str] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)
    emb: np.ndarray | None = None
    turns: list[Turn] = field(default_factory=list)
    ctx: np.ndarray | None = None  # context vectors aligned with ``ids`` (None: not computed since the last change)
    tombs: set[str] | None = None  # http mode: the delete records (ids) this cache has applied (None: not tracked)

    def append(self, turns: Sequence[Turn], emb: np.ndarray) -> None:
        self.ctx = None
        start = len(self.ids)
        last = order_key(self.turns[-1]) if self.turns else None
        for i, t in enumerate(turns):
            self.ids.append(t.id)
            self.pos[t.id] = start + i
            self.turns.append(t)
        self._grow(np.asarray(emb, dtype=np.float32))
        # Keep the same order as a freshly loaded cache (see CacheLoader.read), whatever the order of writes.
        # The cached turns are always sorted, so only the new ones (and the seam) need checking.
        keys = ([last] if last is not None else []) + [order_key(t) for t in turns]
        if any(a > b for a, b in zip(keys, keys[1:], strict=False)):
            keys = [order_key(t) for t in self.turns]
            order = sorted(range(len(keys)), key=keys.__getitem__)
            self.ids = [self.ids[j] for j in order]
            self.turns = [self.turns[j] for j in order]
            self.pos = {d: j for j, d in enumerate(self.ids)}
            assert self.emb is not None  # _grow set it
            self.emb = self.emb[order]

    def _grow(self, emb: np.ndarray) -> None:
        """Append rows to ``emb`` in amortised O(rows): a buffer with spare capacity, ``emb`` a view of it."""
        old = self.emb
        buf: np.ndarray | None = getattr(self, "_buf", None)
        if old is None or len(old) == 0 or len(emb) == 0:
            if old is None or len(old) == 0:
                self.emb = emb
                self._buf = None
            return
        n0 = len(old)
        if buf is None or old.base is not buf or n0 + len(emb) > len(buf) or buf.shape[1] != emb.shape[1]:
            buf = np.empty((max(n0 + len(emb), 2 * n0, 1024), old.shape[1]), dtype=np.float32)
            buf[:n0] = old
            self._buf = buf
        buf[n0 : n0 + len(emb)] = emb
        self.emb = buf[: n0 + len(emb)]

    def remove(self, ids: Iterable[str]) -> None:
        drop = {self.pos[i] for i in ids if i in self.pos}
        if not drop:
            return
        self.ctx = None
        keep = [j for j in range(len(self.ids)) if j not in drop]
        self.ids = [self.ids[j] for j in keep]
        self.turns = [self.turns[j] for j in keep]
        self.pos = {d: j for j, d in enumerate(self.ids)}
        if self.emb is not None:
            self.emb = self.emb[keep]

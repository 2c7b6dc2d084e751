"""Node vectors kept on disk beside a graph file, so that a restart does not embed a graph's node texts again.

The operator loop scores a query against the vector of every node text of a namespace's graph
(:class:`~langmem_cog.graph.operators.NodeVectors`). Embedding them is most of the first query after a
restart (some 19,000 texts for a namespace of 30,000 turns), so a persistent memory keeps them in files
beside the graph file ``graph/<stem>.json``: chunk files ``graph/<stem>.nodevec/<n>.npz``, a folder per
namespace so that finding a namespace's chunks never lists the whole graph folder (numpy's uncompressed zip,
read without pickles), each holding

* ``keys``: ``uint8 (rows, 16)``, the BLAKE2b-128 digest of each node text (:func:`text_key`): rows are looked
  up by text, and the files hold no text;
* ``vectors``: ``float32 (rows, dim)``, the normalised vectors, the very numbers the cache holds;
* ``embedder``: the digest of the identity of the embedder that made them (its precision included), and
  ``format``.

A write adds one chunk with the rows the files lack, written atomically (a temp file, fsynced, renamed), so
it costs what changed; past :data:`MAX_CHUNKS` chunks the smaller ones are merged into one (all of them once
those outgrow the largest), every chunk is merged into one when the files hold more than twice as many rows as
there are live texts, and :meth:`NodeVectorFiles.purge` (after a deletion) rewrites them
with the rows of live texts only, so the vector of a deleted text leaves the disk with it.

The files are derived data. A chunk that cannot be read, is damaged (zip CRC, shapes, dtypes, non-finite
values), has another dimension than the others, or was made by another embedder is ignored (with a warning
for damage) and replaced by the next write: a missing row only costs embedding its text again, never a wrong
vector.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> graph = Path(tempfile.mkdtemp()) / "graph" / "ab12.json"
    >>> files = NodeVectorFiles(lambda ns: graph, embedder=lambda: "e1")
    >>> files.write("alice", {text_key("tea"): np.ones(4, np.float32) / 2}, {text_key("tea")})
    1
    >>> [f"{p.parent.name}/{p.name}" for p in chunk_paths(graph)]
    ['ab12.nodevec/00000001.npz']
    >>> rows = NodeVectorFiles(lambda ns: graph, embedder=lambda: "e1").read("alice")
    >>> rows[text_key("tea")].tolist()
    [0.5, 0.5, 0.5, 0.5]
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import threading
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from langmem_cog.locking import atomic_write, fsync_dir

__all__ = ["KEY_BYTES", "MAX_CHUNKS", "NodeVectorFiles", "chunk_folder", "chunk_paths", "remove_chunks", "text_key"]

logger = logging.getLogger(__name__)

#: Bytes of a node text's key (a BLAKE2b digest).
KEY_BYTES = 16
#: Chunk files a namespace may hold before a write merges them into one.
MAX_CHUNKS = 16
#: The chunk format this module writes and reads.
FORMAT = 1
_CHUNK = re.compile(r"^(\d+)\.npz$")


def text_key(text: str) -> bytes:
    """The key of a node text in the files: its BLAKE2b-128 digest (UTF-8).

    Example:
        >>> len(text_key("went climbing"))
        16
    """
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=KEY_BYTES).digest()


def chunk_folder(graph_path: Path) -> Path:
    """The folder of the node-vector chunk files of the graph file ``graph_path`` (``<stem>.nodevec``)."""
    return graph_path.with_name(f"{graph_path.stem}.nodevec")


def chunk_paths(graph_path: Path) -> list[Path]:
    """The node-vector chunk files of the graph file ``graph_path``, oldest first."""
    folder = chunk_folder(graph_path)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _CHUNK.match(p.name))]
    return [p for _, p in sorted(found)]


def remove_chunks(graph_path: Path) -> bool:
    """Delete the node-vector chunk files beside ``graph_path`` (and temp files of a write cut short).
    Returns whether there were any."""
    old = chunk_paths(graph_path)
    folder = chunk_folder(graph_path)
    if folder.is_dir():
        shutil.rmtree(folder)  # the chunks and temp files of a write cut short
    return bool(old)


@dataclass
class _Chunk:
    """What was read of one chunk file: its keys (empty when unusable) and the stamp it was read at."""

    stamp: tuple[int, int, int]
    keys: frozenset[bytes]
    rows: int
    usable: bool
    delivered: bool  # whether its vectors were handed out by a read


class _Unusable(Exception):
    """A chunk that is read but not used; ``damaged`` says whether to warn."""

    def __init__(self, why: str, *, damaged: bool) -> None:
        super().__init__(why)
        self.damaged = damaged


class NodeVectorFiles:
    """The node-vector chunk files of the namespaces of one graph folder.

    Keeps, per namespace, what it has read of each chunk file (its keys), so a write adds only the rows
    the files lack and a read returns only the rows of chunks not read before. It re-lists the files at
    every call, so chunks written, merged or removed by another process are noticed. Writes must be made
    under the data directory's lock (the caller's: :class:`~langmem_cog.memory.CogMemory` holds it).

    Args:
        path_of: The graph file of a namespace (``None``: that namespace keeps no files).
        embedder: The digest of the embedder's identity, computed when first needed.
    """

    def __init__(self, path_of: Callable[[str], Path | None], embedder: Callable[[], str]) -> None:
        self._path_of = path_of
        self._embedder_fn = embedder
        self._embedder: str | None = None
        self._chunks: dict[str, dict[str, _Chunk]] = {}  # namespace -> chunk file name -> what was read
        self._dim: dict[str, int] = {}  # namespace -> dimension of its usable chunks
        self._lock = threading.RLock()

    @property
    def embedder(self) -> str:
        """The digest of the identity of the embedder the files are written for."""
        if self._embedder is None:
            self._embedder = self._embedder_fn()
        return self._embedder

    def _graph_path(self, namespace: str) -> Path | None:
        return self._path_of(namespace)

    # ------------------------------------------------------------------ reading
    def read(self, namespace: str, *, dim: int | Callable[[], int] | None = None) -> dict[bytes, np.ndarray]:
        """The rows of the namespace's chunk files not read before (key -> read-only float32 vector).

        Args:
            namespace: The namespace.
            dim: The dimension the vectors must have, or a function that tells it, called only when a chunk
                is read (``None``: any, the same for every chunk).
        """
        with self._lock:
            return self._sync(namespace, dim=dim, vectors=True)

    def stored_keys(self, namespace: str) -> frozenset[bytes]:
        """The keys of the rows the namespace's files hold now (usable chunks only)."""
        with self._lock:
            self._sync(namespace, vectors=False)
            return frozenset().union(*(c.keys for c in self._chunks.get(namespace, {}).values() if c.usable))

    def _sync(self, namespace: str, *, dim: int | Callable[[], int] | None = None,
              vectors: bool) -> dict[bytes, np.ndarray]:
        """Bring what is known of the namespace's chunks in line with the folder; read new ones."""
        path = self._graph_path(namespace)
        known = self._chunks.setdefault(namespace, {})
        out: dict[bytes, np.ndarray] = {}
        if path is None:
            return out
        listed = {}
        for p in chunk_paths(path):
            try:
                st = p.stat()
            except OSError:
                continue
            listed[p.name] = (p, (st.st_ino, st.st_mtime_ns, st.st_size))
        for name in [n for n in known if n not in listed or known[n].stamp != listed[n][1]]:
            del known[name]
        if not any(c.usable for c in known.values()):
            self._dim.pop(namespace, None)
        want_dim = self._dim.get(namespace)
        for name, (p, stamp) in listed.items():
            seen = known.get(name)
            if seen is not None and (seen.delivered or not vectors or not seen.usable):
                continue
            if dim is not None:  # the embedder's dimension, asked for once a chunk is to be read
                want_dim = dim() if callable(dim) else dim
                dim = None
            try:
                keys, vecs = self._read_chunk(p, want_dim)
            except _Unusable as exc:
                if exc.damaged:
                    logger.warning("node vectors in %s are unusable (%s): ignored, the texts are embedded again "
                                   "and the file is replaced by the next write", p, exc)
                else:
                    logger.info("node vectors in %s ignored: %s", p, exc)
                known[name] = _Chunk(stamp, frozenset(), 0, usable=False, delivered=False)
                continue
            rows = [bytes(k) for k in keys]
            known[name] = _Chunk(stamp, frozenset(rows), len(rows), usable=True, delivered=vectors)
            want_dim = self._dim[namespace] = int(vecs.shape[1])
            if vectors:
                vecs.setflags(write=False)
                out.update(zip(rows, vecs, strict=True))
        return out

    def _read_chunk(self, path: Path, dim: int | None) -> tuple[np.ndarray, np.ndarray]:
        try:
            with np.load(path, allow_pickle=False) as data:
                fmt, embedder = data["format"], data["embedder"]
                keys, vecs = data["keys"], data["vectors"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise _Unusable(f"{type(exc).__name__}: {exc}", damaged=True) from None
        if fmt.shape != () or int(fmt) != FORMAT:
            raise _Unusable(f"format {fmt!r}, this version reads {FORMAT}", damaged=True)
        if str(embedder) != self.embedder:
            raise _Unusable("made by another embedder (or at another precision)", damaged=False)
        if keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != KEY_BYTES:
            raise _Unusable(f"keys of dtype {keys.dtype} and shape {keys.shape}", damaged=True)
        if vecs.dtype != np.float32 or vecs.ndim != 2 or vecs.shape[0] != keys.shape[0] or vecs.shape[1] < 1:
            raise _Unusable(f"vectors of dtype {vecs.dtype} and shape {vecs.shape} for {keys.shape[0]} keys",
                            damaged=True)
        if dim is not None and vecs.shape[1] != dim:
            raise _Unusable(f"vectors of dimension {vecs.shape[1]}, not {dim}", damaged=True)
        if not np.isfinite(vecs).all():
            raise _Unusable("non-finite values", damaged=True)
        return keys, vecs

    # ------------------------------------------------------------------ writing
    def write(self, namespace: str, rows: Mapping[bytes, np.ndarray], live: Iterable[bytes]) -> int:
        """Store the rows of ``rows`` the files lack; returns how many rows were written.

        Adds one chunk with them; with :data:`MAX_CHUNKS` chunks on disk already, merges them with every chunk
        but the largest into one (and all of them once those outgrow it); merges every chunk into one holding the
        rows of ``rows`` whose keys are in ``live`` when an unusable chunk is on disk or when the files would hold
        more than twice as many rows as ``live`` has keys. Rows of the files whose texts this cache lacks are
        dropped by a merge (they are embedded again if asked for).

        Raises:
            OSError: If a file cannot be written (nothing is half-written: the files stay as they were, bar
                a merge's removal of old chunks).
        """
        path = self._graph_path(namespace)
        if path is None:
            return 0
        with self._lock:
            self._sync(namespace, vectors=False)
            known = self._chunks.get(namespace, {})
            on_disk = frozenset().union(*(c.keys for c in known.values() if c.usable))
            new = {k: v for k, v in rows.items() if k not in on_disk}
            live = set(live)
            dim = self._dim.get(namespace)
            # An unusable chunk, or rows of another dimension than the files' (another embedder): all replaced.
            replace = (any(not c.usable for c in known.values())
                       or (dim is not None and any(len(v) != dim for v in new.values())))
            if not new and not replace:
                return 0
            stored = sum(c.rows for c in known.values())
            keep = {k: v for k, v in rows.items() if k in live}
            if replace or stored + len(new) > 2 * max(len(live), 1):
                self._rewrite(namespace, path, keep)
                return len(keep)
            if len(known) >= MAX_CHUNKS:
                # Size-tiered: the chunks but the largest merge into one with the new rows (all of them, once that
                # outgrows the largest), so a row is rewritten a few times over a namespace's life, not per merge.
                base = max(known, key=lambda n: known[n].rows)
                tail = [n for n in known if n != base]
                merged = {k: keep[k] for n in tail for k in known[n].keys if k in keep}
                merged.update((k, v) for k, v in new.items() if k in live)
                if len(merged) >= known[base].rows:
                    self._rewrite(namespace, path, keep)
                    return len(keep)
                self._write_chunk(namespace, path, merged)
                for n in tail:
                    (chunk_folder(path) / n).unlink(missing_ok=True)
                    del known[n]
                return len(merged)
            self._write_chunk(namespace, path, new)
            return len(new)

    def purge(self, namespace: str, live: Iterable[bytes]) -> set[bytes]:
        """Rewrite the namespace's files with the rows of ``live`` keys only (read from the files themselves);
        returns the keys dropped. Nothing is written when every stored row is live and every chunk usable.

        Raises:
            OSError: If a file cannot be written.
        """
        path = self._graph_path(namespace)
        if path is None:
            return set()
        with self._lock:
            live = set(live)
            rows: dict[bytes, np.ndarray] = {}
            stored, clean, dim = 0, True, None
            for p in chunk_paths(path):
                try:
                    keys, vecs = self._read_chunk(p, dim)
                except _Unusable:
                    clean = False
                    continue
                dim = int(vecs.shape[1])
                stored += len(keys)
                rows.update(zip((bytes(k) for k in keys), vecs, strict=True))
            dead = {k for k in rows if k not in live}
            if not dead and clean and stored == len(rows):
                return dead
            self._chunks.pop(namespace, None)
            self._rewrite(namespace, path, {k: v for k, v in rows.items() if k in live}, delivered=False)
            return dead

    def release(self, namespace: str) -> None:
        """Drop what was read of the namespace's files (its next :meth:`read` returns every row again)."""
        with self._lock:
            self._chunks.pop(namespace, None)
            self._dim.pop(namespace, None)

    def forget(self, namespace: str) -> bool:
        """Delete the namespace's files; returns whether there were any."""
        path = self._graph_path(namespace)
        with self._lock:
            self._chunks.pop(namespace, None)
            self._dim.pop(namespace, None)
            return remove_chunks(path) if path is not None else False

    def _write_chunk(self, namespace: str, path: Path, rows: Mapping[bytes, np.ndarray], *,
                     delivered: bool = True) -> Path:
        """One new chunk file (numbered after every chunk on disk), written atomically; ``delivered``: whether
        the caller holds its rows already (else the next :meth:`read` returns them)."""
        folder = chunk_folder(path)
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            fsync_dir(folder.parent)
        numbers = [int(m.group(1)) for p in chunk_paths(path) if (m := _CHUNK.match(p.name))]
        out = folder / f"{max([0, *numbers]) + 1:08d}.npz"
        keys = list(rows)
        key_arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)
        vecs = (np.stack([np.asarray(rows[k], dtype=np.float32) for k in keys]) if keys
                else np.zeros((0, self._dim.get(namespace, 1)), dtype=np.float32))
        atomic_write(out, lambda fh: np.savez(fh, format=np.array(FORMAT), embedder=np.array(self.embedder),
                                               keys=key_arr, vectors=vecs))
        st = out.stat()
        self._chunks.setdefault(namespace, {})[out.name] = _Chunk(
            (st.st_ino, st.st_mtime_ns, st.st_size), frozenset(keys), len(keys), usable=True, delivered=delivered)
        if keys:
            self._dim[namespace] = int(vecs.shape[1])
        return out

    def _rewrite(self, namespace: str, path: Path, rows: Mapping[bytes, np.ndarray], *,
                 delivered: bool = True) -> None:
        """Merge: one chunk with ``rows`` (written first), then every older chunk removed."""
        old = chunk_paths(path)
        self._dim.pop(namespace, None)
        fresh = self._write_chunk(namespace, path, rows, delivered=delivered) if rows else None
        for p in old:
            p.unlink(missing_ok=True)
        folder = chunk_folder(path)
        for tmp in folder.glob(".*.tmp") if folder.is_dir() else ():
            tmp.unlink(missing_ok=True)
        known = self._chunks.setdefault(namespace, {})
        for name in [n for n in known if fresh is None or n != fresh.name]:
            del known[name]

"""Deleted text out of a Chroma persistent directory's files: its write-ahead log, free pages, HNSW slots.

Chroma deletes a record from its indexes but not from the files under them: its SQLite write-ahead
table ``embeddings_queue`` keeps the ADD record (document and metadata included) until every segment
has persisted past it, SQLite keeps deleted rows' bytes in free pages, and HNSW segment files carry
heap garbage in their unused slots. :class:`~langmem_cog.store.TurnStore` cleans its embedded
database after every delete with these functions. A Chroma server's directory belongs to the server,
which no client call can clean, so :func:`purge_chroma_dir` (``langmem-cog purge-server --path DIR``)
does the same on the server's host while the server is stopped (docs/RELIABILITY.md, scale-out).

Example:
    >>> import sqlite3
    >>> conn = sqlite3.connect(":memory:")
    >>> _ = conn.execute("CREATE TABLE embeddings_queue (seq_id INTEGER, topic TEXT, id TEXT, operation INTEGER)")
    >>> _ = conn.executemany("INSERT INTO embeddings_queue VALUES (?, ?, ?, ?)",
    ...                      [(1, "t/c1", "a", 0), (2, "t/c1", "b", 0), (3, "t/c1", "a", 3), (4, "t/c1", "a", 0)])
    >>> purge_superseded(conn)  # a's first ADD is superseded by its DELETE; the later ADD stays
    1
    >>> [r[0] for r in conn.execute("SELECT seq_id FROM embeddings_queue ORDER BY seq_id")]
    [2, 3, 4]
"""

from __future__ import annotations

import logging
import os
import sqlite3
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from langmem_cog.errors import StoreError

__all__ = ["PurgeReport", "is_segment_folder", "is_segment_name", "purge_chroma_dir", "purge_dropped", "purge_superseded",
           "scrub_hnsw_segment"]

logger = logging.getLogger(__name__)

#: The header of a persisted HNSW segment (``header.bin``; chroma-core/hnswlib's ``HEADER_FIELDS``,
#: persistence version 1): version, offsetLevel0, max_elements, cur_element_count, size_data_per_element, ...
HNSW_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
_SCRUB_CHUNK = 1 << 20
#: Chroma's log operations: ADD 0, UPDATE 1, UPSERT 2, DELETE 3.
_DELETE = 3


def is_segment_name(name: str) -> bool:
    """Whether ``name`` is named like a Chroma segment folder (a UUID in its canonical form)."""
    try:
        return str(uuid.UUID(name)) == name
    except ValueError:
        return False


def is_segment_folder(path: Path) -> bool:
    """Whether ``path`` is a folder named like a Chroma segment (:func:`is_segment_name`)."""
    return path.is_dir() and is_segment_name(path.name)


def _zero_from(path: Path, start: int) -> int:
    """Overwrite with zeros the bytes of ``path`` from ``start`` to its end that are not zero; returns how many."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return 0
    written = 0
    try:
        size = os.fstat(fd).st_size
        pos = start
        while pos < size:
            chunk = os.pread(fd, min(_SCRUB_CHUNK, size - pos), pos)
            if not chunk:
                break
            if chunk.strip(b"\0"):
                os.pwrite(fd, bytes(len(chunk)), pos)
                written += len(chunk)
            pos += len(chunk)
        if written:
            os.fsync(fd)
    finally:
        os.close(fd)
    return written


def scrub_hnsw_segment(folder: Path) -> int:
    """Zero the slots past the live elements of a persisted HNSW segment; returns how many bytes changed.

    Chroma's hnswlib fork allocates ``data_level0.bin``'s and ``length.bin``'s buffers with ``malloc``
    and writes them at full capacity when it creates the index (chroma-core/chroma#7688), so the slots
    no element uses yet hold whatever the writing process's heap held: documents and log records
    included, deleted turns' text among them. Slots below ``cur_element_count`` (the header's) are
    left alone, so are folders whose header is not the known layout.
    """
    try:
        raw = (folder / "header.bin").read_bytes()
    except OSError:
        return 0
    if len(raw) != HNSW_HEADER.size:
        return 0
    version, _, max_elements, count, per_element = HNSW_HEADER.unpack(raw)[:5]
    if version != 1 or per_element <= 0 or count > max_elements:
        return 0
    return _zero_from(folder / "data_level0.bin", count * per_element) + _zero_from(folder / "length.bin", count * 4)


def purge_superseded(conn: sqlite3.Connection, *, collection_id: str | None = None,
                     ids: Sequence[str] | None = None) -> int:
    """Delete the log's ADD / UPDATE / UPSERT records that a later DELETE of the same id supersedes.

    The DELETE records stay: replaying the log after a restart then never re-adds the ids (a DELETE
    of an id the index never saw is a no-op). A write made after an id's last delete (the id stored
    again) is never touched. Safe to repeat. The caller commits.

    Args:
        conn: A connection to a Chroma ``chroma.sqlite3``.
        collection_id: Only this collection's records (``None``: every collection's).
        ids: Only these record ids (``None``: every id).

    Returns:
        How many records were deleted.
    """
    where = "operation != 3 AND seq_id < (SELECT MAX(d.seq_id) FROM embeddings_queue AS d WHERE d.topic = " \
            "embeddings_queue.topic AND d.id = embeddings_queue.id AND d.operation = 3)"
    args: list[str] = []
    if collection_id is not None:
        where += " AND topic LIKE ?"
        args.append("%/" + collection_id)
    if ids is None:
        return max(conn.execute(f"DELETE FROM embeddings_queue WHERE {where}", args).rowcount, 0)  # noqa: S608
    purged = 0
    ids = list(ids)
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        sql = f"DELETE FROM embeddings_queue WHERE {where} AND id IN ({','.join('?' * len(part))})"  # noqa: S608
        purged += max(conn.execute(sql, [*args, *part]).rowcount, 0)
    return purged


def purge_dropped(conn: sqlite3.Connection, *, collection_id: str | None = None) -> int:
    """Delete the log records of collections that no longer exist (``collection_id``: only that one's).

    Returns:
        How many records were deleted. The caller commits.
    """
    if collection_id is not None:
        cur = conn.execute("DELETE FROM embeddings_queue WHERE topic LIKE ? AND NOT EXISTS "
                           "(SELECT 1 FROM collections WHERE id = ?)", ["%/" + collection_id, collection_id])
    else:
        cur = conn.execute("DELETE FROM embeddings_queue WHERE NOT EXISTS "
                           "(SELECT 1 FROM collections AS c WHERE embeddings_queue.topic LIKE '%/' || c.id)")
    return max(cur.rowcount, 0)


@dataclass(frozen=True)
class PurgeReport:
    """What :func:`purge_chroma_dir` removed."""

    superseded_records: int
    dropped_collection_records: int
    hnsw_bytes_zeroed: int
    bytes_before: int
    bytes_after: int


def purge_chroma_dir(path: str | Path, *, timeout: float = 60.0) -> PurgeReport:
    """Remove deleted records' text from a Chroma persistent directory (a server's ``--path``).

    Deletes the superseded and dropped-collection records from the write-ahead log
    (:func:`purge_superseded`, :func:`purge_dropped`), ``VACUUM``s the SQLite file (free pages) and
    zeroes the unused HNSW slots of every segment folder (:func:`scrub_hnsw_segment`). What the
    indexes hold is not changed: every live record stays, and a restarted server serves the same
    results. Run it with the server stopped, as Chroma asks for its own ``chroma vacuum``: the
    server keeps the HNSW files open and may rewrite them.

    Args:
        path: The directory holding ``chroma.sqlite3``.
        timeout: Seconds to wait for SQLite's lock.

    Returns:
        A :class:`PurgeReport`.

    Raises:
        StoreError: If ``path`` holds no Chroma database, or SQLite refuses the purge (locked, read-only).
    """
    root = Path(path).expanduser()
    db = root / "chroma.sqlite3"
    if not db.is_file():
        raise StoreError(f"no Chroma database (chroma.sqlite3) in {root}: pass the directory the server was "
                         "started with (chroma run --path DIR)")
    before = db.stat().st_size
    conn = sqlite3.connect(str(db), timeout=timeout)
    try:
        with conn:
            superseded = purge_superseded(conn)
            dropped = purge_dropped(conn)
        conn.execute("VACUUM")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot purge {db}: {exc} (stop the Chroma server first; the file must be writable)") from exc
    finally:
        conn.close()
    zeroed = sum(scrub_hnsw_segment(f) for f in sorted(root.iterdir()) if is_segment_folder(f))
    report = PurgeReport(superseded, dropped, zeroed, before, db.stat().st_size)
    logger.info("purged %s: %s", root, report)
    return report

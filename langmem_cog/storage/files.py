"""The embedded Chroma database's files as the store keeps them clean: segment folders, log purge, vacuum.

Chroma deletes a record from its indexes but not from the files under them (see
:mod:`langmem_cog.chroma_files`, which holds the file-level functions). :class:`EmbeddedFiles` applies
them to the store's own embedded database (``data_dir/chroma``) after its writes, deletes and forgets:
it lists a collection's HNSW segment folders and the orphaned ones, zeroes the unused slots of the
segment files, removes a dropped collection's folders, drops superseded records from the write-ahead
table and ``VACUUM``s the SQLite file. In the other modes (in memory, a Chroma server) there is no file
of the store's to clean, and every method is a no-op.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langmem_cog.chroma_files import is_segment_folder, purge_dropped, purge_superseded, scrub_hnsw_segment
from langmem_cog.errors import StoreError

__all__ = ["EmbeddedFiles", "segment_stamp"]

logger = logging.getLogger("langmem_cog.store")  # the store's logger, as before the split


def segment_stamp(folder: Path) -> tuple[int, ...]:
    """The modification times and sizes of an HNSW segment folder's header and level-0 files (0 when absent)."""
    out: list[int] = []
    for name in ("header.bin", "data_level0.bin"):
        try:
            st = (folder / name).stat()
        except OSError:
            out += [0, 0]
        else:
            out += [st.st_mtime_ns, st.st_size]
    return tuple(out)


class EmbeddedFiles:
    """The files of a store's embedded Chroma database (``data_dir/chroma``), kept free of deleted text.

    Args:
        data_dir: The store's data directory.
        embedded: Whether the store runs embedded Chroma there (``chroma_mode == "persistent"``); when
            false, the methods that read or clean the database do nothing.

    Example:
        >>> files = EmbeddedFiles(Path("/nonexistent"), embedded=False)
        >>> files.has_free_pages(), files.purge_log("c1", ["t1"])
        (False, 0)
    """

    def __init__(self, data_dir: Path, *, embedded: bool) -> None:
        self.data_dir = data_dir
        self.embedded = embedded
        # Per HNSW segment folder, the (mtime, size) of its files when this store last zeroed their unused slots.
        self._segment_stamps: dict[str, tuple[int, ...]] = {}

    @property
    def root(self) -> Path:
        """The embedded database's folder (``data_dir/chroma``)."""
        return self.data_dir / "chroma"

    @property
    def db_file(self) -> Path:
        """The embedded database's SQLite file."""
        return self.root / "chroma.sqlite3"

    @contextmanager
    def db(self, timeout: float) -> Iterator[Any]:
        """A ``sqlite3`` connection to embedded Chroma's database file, closed on exit; ``None``
        when there is no such file of ours (not the persistent mode, or nothing written yet)."""
        path = self.db_file
        if not self.embedded or not path.exists():
            yield None
            return
        conn = sqlite3.connect(str(path), timeout=timeout)
        try:
            yield conn
        finally:
            conn.close()

    def segment_dirs(self, col: Any) -> list[Path]:
        """The on-disk segment folders of one embedded Chroma collection (its HNSW index files)."""
        with self.db(timeout=60) as conn:
            if conn is None:
                return []
            rows = conn.execute("SELECT id FROM segments WHERE collection = ?", (str(col.id),)).fetchall()
        return [self.root / str(r[0]) for r in rows]

    def orphan_segment_dirs(self) -> list[Path]:
        """Segment folders (uuid names) of no segment Chroma knows: left by a forget cut short after
        ``delete_collection`` (or by Chroma itself, chroma-core/chroma#5259)."""
        with self.db(timeout=60) as conn:
            if conn is None:
                return []
            known = {str(r[0]) for r in conn.execute("SELECT id FROM segments").fetchall()}
        return [p for p in self.root.iterdir() if is_segment_folder(p) and p.name not in known]

    def scrub_segments(self, *, changed_only: bool = False) -> None:
        """Zero the unused slots of every HNSW segment file of the embedded database (see
        :func:`~langmem_cog.chroma_files.scrub_hnsw_segment`): heap garbage that Chroma wrote there may hold
        deleted text.

        Args:
            changed_only: Only the folders whose files changed since this object last zeroed them (a stat
                per folder otherwise).
        """
        root = self.root
        if not self.embedded or not root.is_dir():
            return
        for folder in root.iterdir():
            if not is_segment_folder(folder):
                continue
            if changed_only and self._segment_stamps.get(folder.name) == segment_stamp(folder):
                continue
            if scrub_hnsw_segment(folder):
                logger.debug("zeroed the unused slots of the HNSW segment %s", folder.name)
            self._segment_stamps[folder.name] = segment_stamp(folder)

    def remove_segment_dirs(self, dirs: list[Path]) -> None:
        """Delete a dropped collection's segment folders, which Chroma 1.x leaves on disk.

        Its ``delete_collection`` removes the collection from SQLite but not the HNSW folder
        (chroma-core/chroma#5259), so the forgotten turns' vectors would stay in
        ``data_level0.bin`` and its neighbours. Only the dropped collection's own segments,
        read before the delete (and recorded in the forget's intent), and folders of no known
        segment are removed; missing ones are skipped (a replay).

        Args:
            dirs: The folders to remove (those outside ``data_dir/chroma`` are left alone).
        """
        root = self.root.resolve()
        for d in dict.fromkeys(dirs):
            if d.is_dir() and d.resolve().parent == root:
                shutil.rmtree(d)
                logger.info("removed the segment folder %s of a forgotten namespace", d.name)

    def purge_log(self, col: Any, ids: list[str]) -> int:
        """Remove deleted turns' text from Chroma's write-ahead log; returns how many records went.

        Embedded Chroma keeps every write (document and metadata included) in the SQLite table
        ``embeddings_queue`` until all segments of the collection have persisted past it; the
        HNSW segment persists only every ``hnsw:sync_threshold`` writes, so a deleted turn's
        ADD record (its text) can stay there indefinitely. We drop the ADD / UPDATE / UPSERT
        records of the ids that a later DELETE record of the same id supersedes, and keep the
        DELETE records: replaying the log after a restart then never re-adds them (a DELETE of
        an id the index never saw is a no-op). Safe to repeat, and never touches a write made
        after the last delete of an id (a turn stored again under that id).

        Args:
            col: The collection, or its id.
            ids: The deleted turn ids.

        Raises:
            StoreError: If SQLite refuses the purge.
        """
        if not ids:
            return 0
        col_id = str(getattr(col, "id", col))
        with self.db(timeout=60) as conn:
            if conn is None:
                return 0
            try:
                with conn:
                    return purge_superseded(conn, collection_id=col_id, ids=ids)
            except sqlite3.OperationalError as exc:
                raise StoreError(f"cannot purge deleted turns from Chroma's log at {self.db_file}: {exc}") from exc

    def purge_dropped_collection(self, col_id: str) -> None:
        """Remove what Chroma's log still holds of a collection that no longer exists (a replayed forget).

        Args:
            col_id: The dropped collection's id.
        """
        with self.db(timeout=60) as conn:
            if conn is None:
                return
            with conn:
                purge_dropped(conn, collection_id=col_id)

    def has_free_pages(self) -> bool:
        """Whether Chroma's database file has unused pages (which may hold deleted rows' bytes)."""
        with self.db(timeout=30) as conn:
            return conn is not None and conn.execute("PRAGMA freelist_count").fetchone()[0] > 0

    def vacuum(self) -> None:
        """Rewrite the embedded Chroma database so deleted text leaves the file.

        SQLite keeps deleted rows' bytes in unused page space; ``VACUUM`` rebuilds the file
        without them. Only the embedded (persistent) mode has a file of ours to vacuum.
        """
        with self.db(timeout=30) as conn:
            if conn is not None:
                conn.execute("VACUUM")

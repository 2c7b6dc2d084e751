"""Cross-process coordination of one data directory: a write lock and a change counter.

Chroma's embedded ``PersistentClient`` keeps per-process state (the HNSW index in memory,
its write-ahead position), and the BM25 logs and graph files are cached in memory by each
process. Two processes writing one data directory unguarded would each persist a stale
view. :class:`DirLock` serialises writers with ``fcntl.flock`` on ``data_dir/.lmc.lock``
and keeps a generation counter in ``data_dir/.lmc.gen`` (``"<generation> <writer pid>"``)
so a process can tell, with one small read, that another process wrote and its caches
must be reloaded.

The lock is reentrant within a process (a thread lock plus a depth count), so a
``CogMemory`` can hold it around a raw write and the graph update that follows it.

Example:
    >>> import tempfile
    >>> lock = DirLock(tempfile.mkdtemp())
    >>> with lock:
    ...     lock.bump()
    1
    >>> lock.read()[0]
    1
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from langmem_cog.errors import StoreError

try:  # POSIX only; elsewhere the lock is in-process only
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["DirLock", "atomic_write", "exclusive_file", "fsync_dir"]

logger = logging.getLogger(__name__)

_LOCK_FILE = ".lmc.lock"
_GEN_FILE = ".lmc.gen"


class DirLock:
    """An exclusive, reentrant, inter-process lock on a data directory plus its change counter.

    Args:
        directory: The data directory (created if missing).

    Raises:
        StoreError: On entry, if the lock file cannot be opened (a read-only data directory).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def _open(self) -> int:
        """The lock file, opened for writing (created if missing).

        Raises:
            StoreError: If it cannot be (a read-only data directory or file system, no permission).
        """
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            return os.open(self.directory / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # read-only directory or file system, no permission
            raise StoreError(
                f"cannot open the lock file {self.directory / _LOCK_FILE} ({type(exc).__name__}: "
                f"{exc.strerror or exc}): the data directory {self.directory} must be writable to be "
                "opened or written; make it writable (e.g. chmod -R u+w), or copy it to a writable "
                "place and open the copy. Nothing was written"
            ) from exc

    def check_writable(self) -> None:
        """Fail now, by name, if the lock could not be taken: before a write reads anything (a read of
        a read-only embedded Chroma database can fail with Chroma's own error first).

        Raises:
            StoreError: If the lock file cannot be opened for writing.
        """
        with self._thread_lock:
            if self._depth == 0:
                os.close(self._open())

    def __enter__(self) -> DirLock:
        self._thread_lock.acquire()
        try:
            if self._depth == 0:
                fd = self._open()
                try:
                    if fcntl is not None:
                        fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
            self._depth += 1
        except BaseException:
            self._thread_lock.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None:
                fd, self._fd = self._fd, None
                try:
                    if fcntl is not None:
                        fcntl.flock(fd, fcntl.LOCK_UN)
                finally:
                    os.close(fd)
        finally:
            self._thread_lock.release()

    @property
    def held(self) -> bool:
        """Whether this thread holds the lock."""
        return self._depth > 0 and self._thread_lock._is_owned()  # type: ignore[attr-defined]

    def read(self) -> tuple[int, int]:
        """The current ``(generation, pid of the last writer)``; ``(0, 0)`` before any write."""
        try:
            raw = (self.directory / _GEN_FILE).read_text(encoding="ascii").split()
            return int(raw[0]), int(raw[1])
        except (OSError, ValueError, IndexError):
            return 0, 0

    def bump(self) -> int:
        """Record a write by this process (call while holding the lock); returns the new generation.

        Raises:
            StoreError: If the counter cannot be written (a read-only data directory, a full disk).
        """
        gen = self.read()[0] + 1
        path = self.directory / _GEN_FILE
        tmp = path.with_name(f"{_GEN_FILE}.{os.getpid()}.tmp")
        try:
            tmp.write_text(f"{gen} {os.getpid()}\n", encoding="ascii")
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise StoreError(
                f"cannot update the change counter {path} ({type(exc).__name__}: {exc.strerror or exc}): other "
                f"processes may not see this write until it is; make the data directory {self.directory} "
                "writable or free disk space"
            ) from exc
        return gen


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename or a new file in it) to disk; a no-op where directories
    cannot be opened (e.g. Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Write ``path`` atomically: ``write`` fills a temp file beside it (``.<stem>.*.tmp``), which is
    fsynced and renamed over ``path``, then the folder is fsynced. A crash leaves either the old file or
    the new one, never a torn one (a stray ``.tmp`` at worst).

    Raises:
        OSError: If the folder or the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


@contextlib.contextmanager
def exclusive_file(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the file ``path`` (created if missing) across processes for the
    block; in-process only where ``fcntl`` is missing. Unlike :class:`DirLock`, not reentrant.

    Raises:
        OSError: If the file cannot be created or opened.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

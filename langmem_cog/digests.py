"""File digests: the SHA-256 of a file, read in blocks (models manifests, embedder identities, training data records).

Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> _ = path.write_bytes(b"abc")
    >>> file_sha256(path)[:16]
    'ba7816bf8f01cfea'
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["file_sha256"]


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The hex SHA-256 of a file's bytes, read a megabyte at a time.

    Raises:
        OSError: If the file cannot be read.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

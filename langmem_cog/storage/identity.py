"""A data directory's manifest: its format and the embedder its vectors come from, checked at open.

Vectors from two embedders do not mix: a data directory searched or extended with another model of the
same dimension (the same weights with another pooling, say) would return wrong neighbours with no
error. So a persistent :class:`~langmem_cog.store.TurnStore` records in ``<data dir>/langmem-cog.json``
the format of the directory and the identity of its embedder (for a local sentence-transformers
model: its name, pooling and the SHA-256 of its weights and configuration, with its precision for the
record; for another LangChain ``Embeddings``: its class and model name), and every later open compares
all but the precision (int8 and fp32 runs of one model differ by rounding): a difference is a
:class:`~langmem_cog.errors.ConfigError` that names both and the fix. A directory without the file (new,
or written by an earlier build) gets it on open.

Example:
    >>> import tempfile, pathlib
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> check_data_dir(folder, DeterministicFakeEmbedding(size=8))
    >>> check_data_dir(folder, DeterministicFakeEmbedding(size=8))  # the same embedder: nothing to say
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from langmem_cog.digests import file_sha256
from langmem_cog.errors import ConfigError, StoreError
from langmem_cog.loading import load_once

__all__ = ["DATA_DIR_FORMAT", "DATA_DIR_MANIFEST", "check_data_dir", "embedder_digest", "embedder_identity"]

#: The manifest's file name, in the data directory.
DATA_DIR_MANIFEST = "langmem-cog.json"
#: The data-directory format this library writes and reads.
DATA_DIR_FORMAT = 1
#: The files of a sentence-transformers model that decide its vectors (those present are hashed).
_MODEL_FILES = ("config.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json",
                "model.safetensors", "pytorch_model.bin", "tokenizer.json", "vocab.txt")



def _model_identity(path: Path) -> dict[str, Any]:
    files = {rel: file_sha256(path / rel) for rel in _MODEL_FILES if (path / rel).is_file()}
    pooling: Any = None
    if (path / "1_Pooling" / "config.json").is_file():
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    return {"name": path.name, "pooling": pooling, "sha256": files}


def embedder_identity(embeddings: Any) -> dict[str, Any]:
    """What makes an embedder's vectors what they are, as a JSON-ready dict.

    A local sentence-transformers model (:class:`~langmem_cog.embeddings.LocalSentenceEmbeddings`): its
    name, pooling, precision and the SHA-256 of the files that decide its vectors (hashed once per
    process per model). Any other LangChain ``Embeddings``: its class and its ``model`` or
    ``model_name`` attribute. A cache in front of an embedder (``.inner``) is looked through.
    """
    while hasattr(embeddings, "inner"):
        embeddings = embeddings.inner
    path = getattr(embeddings, "model_path", None)
    if isinstance(path, Path) and path.is_dir():
        model = load_once(("embedder-identity", str(path.resolve())), lambda: _model_identity(path))
        return {"kind": "sentence-transformers", **model, "precision": getattr(embeddings, "precision", None)}
    cls = type(embeddings)
    name = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    return {"kind": "langchain", "class": f"{cls.__module__}.{cls.__qualname__}",
            "model": name if isinstance(name, str) else None}


def embedder_digest(embeddings: Any) -> str:
    """The SHA-256 of :func:`embedder_identity` (precision included: int8 and fp32 vectors differ by rounding),
    which files of derived vectors record to tell whether they fit the embedder.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> len(embedder_digest(DeterministicFakeEmbedding(size=8)))
        64
    """
    text = json.dumps(embedder_identity(embeddings), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _describe(identity: dict[str, Any]) -> str:
    if identity.get("kind") == "sentence-transformers":
        pooling = identity.get("pooling") or {}
        modes = sorted(k.removeprefix("pooling_mode_") for k, v in pooling.items()
                       if k.startswith("pooling_mode_") and v is True)
        return (f"{identity.get('name')} ({'/'.join(modes) or 'no'} pooling, {identity.get('precision')}, weights "
                f"{str((identity.get('sha256') or {}).get('model.safetensors', ''))[:12] or '?'})")
    return f"{identity.get('class')}" + (f" ({identity['model']})" if identity.get("model") else "")


def _vectors_of(identity: Any) -> Any:
    """What decides the vectors: the identity without the precision (int8 and fp32 runs of one model give
    vectors that differ by rounding, not in kind, and a data directory may move to a machine without
    ONNX Runtime)."""
    return {k: v for k, v in identity.items() if k != "precision"} if isinstance(identity, dict) else identity


def check_data_dir(data_dir: str | os.PathLike[str], embeddings: Any) -> None:
    """Hold a data directory's manifest against the embedder it is opened with; write the manifest
    when the directory has none.

    Raises:
        ConfigError: If the directory was written with another embedder (the message names both and
            the fix), or by a newer langmem-cog (a newer format).
        StoreError: If the manifest cannot be read.
    """
    root = Path(data_dir)
    path = root / DATA_DIR_MANIFEST
    mine = embedder_identity(embeddings)
    if not path.exists():
        root.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{DATA_DIR_MANIFEST}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"format": DATA_DIR_FORMAT, "embedder": mine}, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        fmt, theirs = data["format"], data["embedder"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"{path} cannot be read ({exc}): it records which embedder wrote this data directory; "
                         "delete it to record the embedder of the next open") from None
    if not isinstance(fmt, int) or fmt > DATA_DIR_FORMAT:
        raise ConfigError(f"{root} was written by a newer langmem-cog (data format {fmt!r}; this one reads "
                          f"{DATA_DIR_FORMAT}): upgrade langmem-cog")
    if _vectors_of(theirs) != _vectors_of(mine):
        raise ConfigError(f"{root} was written with the embedder {_describe(theirs)}, and is opened with "
                          f"{_describe(mine)}: their vectors do not mix; open it with the embedder it was "
                          "written with (CogMemConfig.embedder), or ingest into a new data directory")

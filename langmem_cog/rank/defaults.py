"""The shipped cascade models: the fusion scorer and the reranker with its blend weights.

Both live in ``langmem_cog/models/`` and were fitted by ``langmem-cog train-models`` (the recipe of
:mod:`langmem_cog.bench.recipe`) on LoCoMo and LongMemEval-S dev together;
``models/reranker/training.json`` records the command, the data hashes, the recipe, the seed and the
git commit. Any folder written by that command can stand in for them (``models_dir=``,
``CogMemConfig.models_dir``). Loading never trains or downloads anything.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from langmem_cog.errors import InvalidInputError
from langmem_cog.loading import load_once
from langmem_cog.rank.compressor import ConvMemoryCompressor
from langmem_cog.rank.cross_encoder import LocalCrossEncoder, default_reranker_path
from langmem_cog.rank.scorer import FusionScorer

__all__ = ["models_path", "default_scorer", "default_compressor", "cascade_settings", "shipped_cross_encoder"]


def models_path() -> Path:
    """``langmem_cog/models`` (the shipped checkpoints)."""
    return Path(str(resources.files("langmem_cog") / "models"))


def cascade_settings(models_dir: str | Path | None = None) -> dict[str, Any]:
    """The blend weights of a models folder (``cascade.json``; default: the shipped one), or the
    untrained defaults."""
    path = Path(models_dir or models_path()) / "cascade.json"
    if path.exists():
        return dict(json.loads(path.read_text(encoding="utf-8")))
    return {"cross_encoder_weight": 1.0, "first_stage_weight": 1.0}


def default_scorer(models_dir: str | Path | None = None) -> FusionScorer:
    """The fusion scorer of a models folder (``fusion.json``; default: the shipped one), or the
    untrained fallback when absent.

    Read once per process per folder; each call returns its own copy.
    """
    folder = Path(models_dir or models_path()).resolve()
    s = load_once(("fusion-scorer", str(folder)), lambda: _scorer_at(folder))
    return FusionScorer(weights=s.weights.copy(), features=s.features, trained_on=s.trained_on, meta=dict(s.meta))


def _scorer_at(models_dir: Path) -> FusionScorer:
    path = models_dir / "fusion.json"
    if path.exists():
        return FusionScorer.from_dict(json.loads(path.read_text(encoding="utf-8")))
    return FusionScorer.untrained()


def default_compressor(*, threads: int | None = None, models_dir: str | Path | None = None, backend: str = "auto",
                       precision: str = "auto", cache_dir: str | Path | None = None,
                       **kwargs: Any) -> ConvMemoryCompressor:
    """ConvMemory v2 over the cross-encoder of a models folder (default: the shipped one) with its
    blend weights.

    Args:
        threads: Threads while the cross-encoder scores (``None``: torch's setting).
        models_dir: A folder written by ``langmem-cog train-models`` (``None``: the shipped models).
        backend: The cross-encoder's runtime (:data:`langmem_cog.runtime.BACKENDS`).
        precision: ``auto`` (``int8`` where the cross-encoder runs on ONNX Runtime, else ``fp32``), ``fp32``
            or ``int8`` (``CogMemConfig.rerank_precision``).
        cache_dir: The cache directory its exported ONNX graph goes to (``CogMemConfig.cache_dir``;
            ``None``: :func:`~langmem_cog.config.default_cache_dir`).
        **kwargs: Passed to :class:`ConvMemoryCompressor` (they override the folder's weights).

    Raises:
        ModelNotFoundError: If the reranker checkpoint is missing.
    """
    settings = cascade_settings(models_dir)
    kwargs.setdefault("cross_encoder_weight", float(settings.get("cross_encoder_weight", 1.0)))
    kwargs.setdefault("first_stage_weight", float(settings.get("first_stage_weight", 1.0)))
    kwargs.setdefault("use_positions", bool(settings.get("use_positions", True)))  # the pair format it was trained on
    kwargs.setdefault("scale", str(settings.get("scale", "z")))  # the scale its blend weight was chosen on
    reranker = str((Path(models_dir) / "reranker").resolve()) if models_dir else None
    if precision not in ("auto", "fp32", "int8"):
        raise InvalidInputError(f"precision={precision!r} is unknown: use 'auto', 'fp32' or 'int8'")
    if precision == "auto":
        from langmem_cog.runtime import resolve_backend

        precision = "int8" if resolve_backend(backend) == "onnx" else "fp32"
    ce = shipped_cross_encoder(int(settings.get("max_length", 128)), threads, reranker, backend, precision == "int8",
                               cache_dir=cache_dir)
    return ConvMemoryCompressor(cross_encoder=ce, **kwargs)


def shipped_cross_encoder(max_length: int, threads: int | None = None, path: str | None = None,
                          backend: str = "auto", quantize: bool = False, *,
                          cache_dir: str | Path | None = None) -> LocalCrossEncoder:
    """A cross-encoder checkpoint (default: the shipped one), loaded once per process per setting
    (every retriever shares it; threads that ask together wait for one load,
    :func:`~langmem_cog.loading.load_once`).

    ``cache_dir`` is :class:`~langmem_cog.rank.cross_encoder.LocalCrossEncoder`'s (where its exported
    ONNX graph goes).

    Raises:
        ModelNotFoundError: If the reranker checkpoint is missing.
    """
    cache = str(Path(cache_dir).expanduser()) if cache_dir else None
    key = ("cross-encoder", max_length, threads, path, backend, quantize, cache)
    return load_once(key, lambda: LocalCrossEncoder(path or default_reranker_path(), max_length=max_length,
                                                    threads=threads, backend=backend, quantize=quantize,
                                                    cache_dir=cache))

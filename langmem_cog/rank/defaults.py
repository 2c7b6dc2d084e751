"""The shipped cascade models: the fusion scorer and the reranker with its blend weights.

Both live in ``langmem_cog/models/`` and were fitted by ``langmem-cog train-models`` (the recipe of
:mod:`langmem_cog.bench.recipe`) on LoCoMo and LongMemEval-S dev together;
``models/reranker/training.json`` records the command, the data hashes, the recipe, the seed and the
git commit. Any folder written by that command can stand in for them (``models_dir=``,
``CogMemConfig.models_dir``). Loading never trains or downloads anything, and checks the folder
against its ``manifest.json`` first (:func:`~langmem_cog.rank.manifest.check_models`): a missing,
truncated or altered file is a named error, never a silent fallback.

A folder's ``cascade.json`` holds how its reranker's scores are blended in (:class:`BlendSettings`,
read by :func:`load_blend_settings`); the cascade's sizes are a memory's setting instead
(``CogMemConfig.cascade``, :class:`~langmem_cog.rank.settings.CascadeSettings`).

Example:
    >>> blend = load_blend_settings()  # the shipped models' cascade.json
    >>> blend.cross_encoder_weight, blend.scale, blend.max_length
    (0.25, 'center', 64)
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from langmem_cog.checks import nonnegative_weight, positive_int
from langmem_cog.errors import ConfigError, DamagedModelError, InvalidInputError
from langmem_cog.loading import load_once
from langmem_cog.rank.compressor import SCALES, ConvMemoryCompressor
from langmem_cog.rank.cross_encoder import LocalCrossEncoder, default_reranker_path
from langmem_cog.rank.manifest import check_models
from langmem_cog.rank.scorer import FusionScorer

__all__ = ["BlendSettings", "checked_folder", "models_path", "default_scorer", "default_compressor", "load_blend_settings",
           "shipped_cross_encoder"]


logger = logging.getLogger(__name__)


def models_path() -> Path:
    """``langmem_cog/models`` (the shipped checkpoints)."""
    return Path(str(resources.files("langmem_cog") / "models"))


def checked_folder(models_dir: str | Path | None = None) -> Path:
    """A models folder (``None``: the shipped one), resolved, after :func:`~langmem_cog.rank.manifest.check_models`
    (once per process per folder).

    Raises:
        ModelNotFoundError: If the folder, its manifest or a file it lists is missing.
        DamagedModelError: If a file is truncated or altered.
    """
    folder = Path(models_dir or models_path()).expanduser().resolve()
    load_once(("models-checked", str(folder)), lambda: check_models(folder))
    return folder


@dataclass(frozen=True)
class BlendSettings:
    """How a models folder's reranker is run and blended in: its ``cascade.json``, frozen.

    The defaults are those of a folder without ``cascade.json`` (an untrained blend).

    Attributes:
        cross_encoder_weight: Weight of the cross-encoder's score in the blend
            (``ConvMemoryCompressor.cross_encoder_weight``).
        first_stage_weight: Weight of the fused first-stage score (``ConvMemoryCompressor.first_stage_weight``).
        max_length: Token limit of a (query, memory) pair, as the reranker was trained.
        use_positions: Whether pairs carry ``QUERY_TIME`` / ``MEMORY_TIME`` positions, as the reranker was trained.
        scale: How both scores are put on one scale before the blend (``z`` or ``center``,
            :func:`~langmem_cog.rank.compressor.head_scale`).
        note: What the folder says about the blend (free text).

    Raises:
        InvalidInputError: If a value is out of range (a negative or non-finite weight, ``max_length``
            under 8, an unknown ``scale``).

    Example:
        >>> BlendSettings().cross_encoder_weight, BlendSettings().scale
        (1.0, 'z')
        >>> BlendSettings(scale="log")
        Traceback (most recent call last):
        ...
        langmem_cog.errors.InvalidInputError: scale='log' is unknown: use one of ['z', 'center']
    """

    cross_encoder_weight: float = 1.0
    first_stage_weight: float = 1.0
    max_length: int = 128
    use_positions: bool = True
    scale: str = "z"
    note: str = ""

    def __post_init__(self) -> None:
        for name in ("cross_encoder_weight", "first_stage_weight"):
            object.__setattr__(self, name, nonnegative_weight(getattr(self, name), name))
        object.__setattr__(self, "max_length", positive_int(self.max_length, "max_length"))
        if self.max_length < 8:
            raise InvalidInputError(f"max_length={self.max_length!r} is too small: use at least 8 tokens")
        if not isinstance(self.use_positions, bool):
            raise InvalidInputError(f"use_positions={self.use_positions!r} is invalid: pass true or false")
        if self.scale not in SCALES:
            raise InvalidInputError(f"scale={self.scale!r} is unknown: use one of {list(SCALES)}")
        if not isinstance(self.note, str):
            raise InvalidInputError(f"note={self.note!r} is invalid: pass a string")


#: The fields of :class:`BlendSettings`, the keys ``cascade.json`` may hold.
BLEND_KEYS = tuple(f.name for f in dataclasses.fields(BlendSettings))


def load_blend_settings(models_dir: str | Path | None = None) -> BlendSettings:
    """The blend settings of a models folder (its ``cascade.json``; default: the shipped models'), or
    :class:`BlendSettings`'s defaults for a folder without one.

    Args:
        models_dir: A folder written by ``langmem-cog train-models`` (``None``: the shipped models).

    Raises:
        ConfigError: If ``cascade.json`` is not a JSON object of :data:`BLEND_KEYS` with valid values;
            the message names the file and the key.
        ModelNotFoundError: If the folder, its manifest or a file it lists is missing.
        DamagedModelError: If a file is truncated or altered.
    """
    path = checked_folder(models_dir) / "cascade.json"
    if not path.exists():  # a folder whose manifest lists no cascade.json: an untrained blend
        logger.warning("%s has no cascade.json: the reranker's scores are blended with the default weights", path.parent)
        return BlendSettings()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read as JSON ({exc}): write it again with "
                          "langmem-cog train-models") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds {type(data).__name__}, not a JSON object: write it again with "
                          "langmem-cog train-models")
    unknown = sorted(set(data) - set(BLEND_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown keys {unknown}; cascade.json holds only {list(BLEND_KEYS)}")
    try:
        return BlendSettings(**data)
    except InvalidInputError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def default_scorer(models_dir: str | Path | None = None) -> FusionScorer:
    """The fusion scorer of a models folder (``fusion.json``; default: the shipped one), or the
    untrained fallback for a folder whose manifest lists no ``fusion.json`` (with a warning).

    Read once per process per folder; each call returns its own copy.

    Raises:
        ModelNotFoundError: If the folder, its manifest or a file it lists is missing.
        DamagedModelError: If a file is truncated or altered, or ``fusion.json`` is not a scorer with
            finite weights (the message names the file).
    """
    folder = checked_folder(models_dir)
    s = load_once(("fusion-scorer", str(folder)), lambda: _scorer_at(folder))
    return FusionScorer(weights=s.weights.copy(), features=s.features, trained_on=s.trained_on, meta=dict(s.meta))


def _scorer_at(models_dir: Path) -> FusionScorer:
    path = models_dir / "fusion.json"
    if not path.exists():
        logger.warning("%s has no fusion.json: the untrained fusion scorer ranks", models_dir)
        return FusionScorer.untrained()
    try:
        scorer = FusionScorer.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:  # ConfigError is a ValueError
        raise DamagedModelError(f"{path} is not a fusion scorer ({exc}): write it again with "
                                "`langmem-cog train-models --out DIR`, or reinstall langmem-cog") from None
    if not np.isfinite(scorer.weights).all() or not np.isfinite(scorer.lexical_weight):
        raise DamagedModelError(f"{path} holds non-finite weights: write it again with "
                                "`langmem-cog train-models --out DIR`, or reinstall langmem-cog")
    return scorer


def default_compressor(*, threads: int | None = None, models_dir: str | Path | None = None, backend: str = "auto",
                       precision: str = "auto", cache_dir: str | Path | None = None,
                       **kwargs: Any) -> ConvMemoryCompressor:
    """ConvMemory v2 over the cross-encoder of a models folder (default: the shipped one) with its
    blend weights (:func:`load_blend_settings`).

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
        ModelNotFoundError: If the reranker checkpoint, the folder's manifest or a file it lists is missing.
        DamagedModelError: If a file of the folder is truncated or altered.
        ConfigError: If the folder's ``cascade.json`` is invalid.
    """
    blend = load_blend_settings(models_dir)
    kwargs.setdefault("cross_encoder_weight", blend.cross_encoder_weight)
    kwargs.setdefault("first_stage_weight", blend.first_stage_weight)
    kwargs.setdefault("use_positions", blend.use_positions)  # the pair format it was trained on
    kwargs.setdefault("scale", blend.scale)  # the scale its blend weight was chosen on
    reranker = str((Path(models_dir) / "reranker").resolve()) if models_dir else None
    if precision not in ("auto", "fp32", "int8"):
        raise InvalidInputError(f"precision={precision!r} is unknown: use 'auto', 'fp32' or 'int8'")
    if precision == "auto":
        from langmem_cog.runtime import resolve_backend

        precision = "int8" if resolve_backend(backend) == "onnx" else "fp32"
    ce = shipped_cross_encoder(blend.max_length, threads, reranker, backend, precision == "int8", cache_dir=cache_dir)
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

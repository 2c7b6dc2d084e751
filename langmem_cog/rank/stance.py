"""A learned reading of stance: does a turn state its speaker's own opinion, judgement, prediction, worry or
advice?

The stance lexicon (:func:`~langmem_cog.rank.questions.states_stance`) reads a stance from its words and
misses evaluations in words no list holds ("an absolute steal", "a speed trap", "you'll regret selling
that boat"). :class:`StanceModel` reads it from the turn's stored vector instead: a logistic regression over
the default embedder's vectors, distilled from a local LLM's labels of unlabelled chat turns
(``benchmarks/stance_teacher.py``; the shipped model's file records how it was made). It costs one dot
product per turn and applies only to vectors of the embedder it was fitted on (:meth:`StanceModel.fits`);
with any other embedder the cascade reads stance from the lexicon alone.

Example:
    >>> import numpy as np
    >>> model = StanceModel(weights=np.array([2.0, -2.0]), bias=0.0, threshold=0.6, embedder_sha256="x")
    >>> model.probability(np.array([[1.0, 0.0], [0.0, 1.0]])).round(3).tolist()
    [0.881, 0.119]
    >>> model.reads(np.array([[1.0, 0.0], [0.0, 1.0]])).tolist()
    [True, False]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from langmem_cog.errors import DamagedModelError, InvalidInputError, ModelNotFoundError
from langmem_cog.loading import load_once

__all__ = ["StanceModel", "shipped_stance_model"]


@dataclass(frozen=True, eq=False)
class StanceModel:
    """A linear stance reader over an embedder's vectors (compared by identity: its weights are an array).

    Attributes:
        weights: One weight per vector dimension.
        bias: The intercept.
        threshold: The least probability read as a stance.
        embedder_sha256: The SHA-256 of the weights file of the embedder it was fitted on
            (``model.safetensors``), which :meth:`fits` compares.
        provenance: How it was made (teacher, prompt, data, command), as the model file says.

    Raises:
        InvalidInputError: If ``weights`` is empty or not finite, or ``threshold`` is outside (0, 1).
    """

    weights: np.ndarray = field(repr=False)
    bias: float
    threshold: float
    embedder_sha256: str
    provenance: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float64)
        if w.ndim != 1 or not w.size or not np.isfinite(w).all() or not np.isfinite(self.bias):
            raise InvalidInputError("a stance model needs a non-empty, finite weight vector and a finite bias")
        if not 0.0 < float(self.threshold) < 1.0:
            raise InvalidInputError(f"threshold={self.threshold!r} is invalid: use a probability between 0 and 1")
        object.__setattr__(self, "weights", w)

    @classmethod
    def from_file(cls, path: str | Path) -> StanceModel:
        """Load a model file (JSON: ``weights``, ``bias``, ``threshold``, ``embedder_sha256``, ``provenance``).

        Raises:
            ModelNotFoundError: If the file does not exist.
            DamagedModelError: If the file is not such a JSON object.
        """
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise ModelNotFoundError(f"stance model {path} is missing; reinstall langmem-cog") from exc
        try:
            raw = json.loads(text)
            return cls(weights=np.asarray(raw["weights"], dtype=np.float64), bias=float(raw["bias"]),
                       threshold=float(raw["threshold"]), embedder_sha256=str(raw["embedder_sha256"]),
                       provenance=dict(raw.get("provenance") or {}))
        except (OSError, ValueError, KeyError, TypeError, InvalidInputError) as exc:
            raise DamagedModelError(f"stance model {path} cannot be read ({exc}); reinstall langmem-cog or rebuild it "
                                    "with benchmarks/stance_teacher.py") from exc

    def fits(self, identity: dict[str, Any]) -> bool:
        """Whether vectors of the embedder ``identity`` describes
        (:func:`~langmem_cog.storage.identity.embedder_identity`) are the ones this model reads."""
        sha = (identity.get("sha256") or {}).get("model.safetensors") if identity.get("kind") == "sentence-transformers" \
            else None
        return sha == self.embedder_sha256

    def probability(self, vectors: np.ndarray) -> np.ndarray:
        """The probability that each row of ``vectors`` (one turn's stored vector) states a stance.

        Raises:
            InvalidInputError: If the vectors' dimension is not the model's.
        """
        x = np.asarray(vectors, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.weights.size:
            raise InvalidInputError(f"vectors of shape {x.shape} do not fit a stance model of dimension "
                                    f"{self.weights.size}")
        return 1.0 / (1.0 + np.exp(-(x @ self.weights + self.bias)))

    def reads(self, vectors: np.ndarray) -> np.ndarray:
        """Whether each row of ``vectors`` is read as a stance (probability at least ``threshold``)."""
        return self.probability(vectors) >= self.threshold


def shipped_stance_model() -> StanceModel:
    """The packaged model, ``langmem_cog/data/stance_model.json`` (loaded once per process).

    Raises:
        ModelNotFoundError: If the file is missing.
        DamagedModelError: If it is unreadable.
    """
    path = Path(str(resources.files("langmem_cog") / "data" / "stance_model.json"))
    return load_once(("stance-model", str(path)), lambda: StanceModel.from_file(path))

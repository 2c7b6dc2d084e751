"""The light first stage: a linear scorer over :mod:`~langmem_cog.rank.features`, learned listwise.

``FusionScorer`` ranks a query's candidates by ``X @ w``. :meth:`FusionScorer.fit` learns ``w``
from training queries with a listwise, gold-only objective: the negative log of the softmax
probability mass on the query's gold candidates, plus an L2 penalty (L-BFGS, exact gradient).
:meth:`FusionScorer.untrained` is the documented fallback when nothing has been trained: plain
``z(dense) + z(bm25)`` plus half the neighbour window (the prior measured useful on held-out
conversations, not fitted to any test set), so a fresh install ranks sensibly. No cross-encoder
runs here.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> lists = [rng.normal(size=(20, len(FEATURE_NAMES))) for _ in range(30)]
    >>> golds = [np.eye(20, dtype=bool)[int(np.argmax(X[:, 0]))] for X in lists]  # gold = best dense_z
    >>> scorer = FusionScorer.fit(lists, golds)
    >>> bool(scorer.weights[FEATURE_NAMES.index("dense_z")] > 1.0)
    True
    >>> FusionScorer.from_dict(scorer.to_dict()).weights.tolist() == scorer.weights.tolist()
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from langmem_cog.errors import ConfigError, InvalidInputError
from langmem_cog.rank.features import CONTEXT_FEATURES, FEATURE_NAMES

__all__ = ["FusionScorer"]


def _listwise_loss(w: np.ndarray, lists: Sequence[np.ndarray], golds: Sequence[np.ndarray], l2: float) -> tuple[float, np.ndarray]:
    total = 0.0
    grad = np.zeros_like(w)
    for X, g in zip(lists, golds, strict=True):
        s = X @ w
        s = s - s.max()
        e = np.exp(s)
        z = e.sum()
        p = e / z
        pg = p[g].sum()
        total -= np.log(max(pg, 1e-300))
        # d(-log sum_g p)/dw = E_p[x] - E_{p restricted to gold}[x]
        q = np.where(g, p, 0.0) / max(pg, 1e-300)
        grad += (p - q) @ X
    n = max(len(lists), 1)
    return total / n + l2 * float(w @ w), grad / n + 2 * l2 * w


@dataclass
class FusionScorer:
    """A linear first-stage scorer over :data:`~langmem_cog.rank.features.FEATURE_NAMES`.

    Attributes:
        weights: One weight per feature.
        features: The feature names, in order (checked on load).
        trained_on: Free-form provenance (what it was fitted on).
        meta: What the fit reports (loss, number of queries, L2 penalty).
        lexical_weight: BM25's weight in the hybrid score its features were computed with (the
            neighbour windows and session statistics); the cascade computes them with it too.
    """

    weights: np.ndarray
    features: tuple[str, ...] = FEATURE_NAMES
    trained_on: str = "untrained"
    meta: dict[str, Any] = field(default_factory=dict)
    lexical_weight: float = 1.0

    def __post_init__(self) -> None:
        self.weights = np.asarray(self.weights, dtype=np.float64)
        features = tuple(self.features)
        if self.weights.shape != (len(features),):
            raise ConfigError(f"scorer has {self.weights.shape} weights for {len(features)} features; "
                              "pass one weight per feature")
        if features != FEATURE_NAMES:
            # A scorer fitted by an earlier version (a subset of today's features) gives the newer ones weight 0.
            unknown = [f for f in features if f not in FEATURE_NAMES]
            if unknown or len(set(features)) != len(features):
                raise ConfigError(
                    f"scorer features {list(features)} are not a subset of this version's {list(FEATURE_NAMES)} "
                    f"(unknown or repeated: {unknown or sorted({f for f in features if features.count(f) > 1})}): "
                    "retrain the scorer (langmem-cog train-models) or use FusionScorer.untrained()"
                )
            full = np.zeros(len(FEATURE_NAMES))
            for name, w in zip(features, self.weights, strict=True):
                full[FEATURE_NAMES.index(name)] = w
            self.weights, self.features = full, FEATURE_NAMES

    @classmethod
    def untrained(cls) -> FusionScorer:
        """The fallback: ``z(dense) + z(bm25) + 0.5 * window2`` (no training data needed)."""
        w = np.zeros(len(FEATURE_NAMES))
        w[FEATURE_NAMES.index("dense_z")] = 1.0
        w[FEATURE_NAMES.index("lexical_z")] = 1.0
        w[FEATURE_NAMES.index("window2")] = 0.5
        return cls(weights=w, trained_on="untrained prior")

    @classmethod
    def fit(
        cls, lists: Sequence[np.ndarray], golds: Sequence[np.ndarray], *, l2: float = 1e-3, trained_on: str = "",
        lexical_weight: float = 1.0,
    ) -> FusionScorer:
        """Fit the weights listwise on training queries.

        Args:
            lists: Per query, its feature matrix (candidates x features).
            golds: Per query, a boolean mask of its gold candidates; queries with no gold are skipped.
            l2: L2 penalty on the weights.
            trained_on: Provenance recorded in the scorer.
            lexical_weight: The BM25 weight ``lists`` were computed with (recorded in the scorer).

        Raises:
            InvalidInputError: If the lists and masks disagree or no query has a gold candidate.
        """
        from scipy.optimize import minimize

        if len(lists) != len(golds):
            raise InvalidInputError(f"{len(lists)} feature lists but {len(golds)} gold masks: pass one mask per list")
        keep = [(np.asarray(X, float), np.asarray(g, bool)) for X, g in zip(lists, golds, strict=True) if np.any(g)]
        if not keep:
            raise InvalidInputError("no training query has a gold candidate: nothing to fit")
        for X, g in keep:
            if X.ndim != 2 or X.shape[1] != len(FEATURE_NAMES) or len(g) != len(X):
                raise InvalidInputError(
                    f"feature list of shape {X.shape} with {len(g)} gold flags: expected (n, {len(FEATURE_NAMES)}) and n flags"
                )
        Xs, gs = [k[0] for k in keep], [k[1] for k in keep]
        w0 = cls.untrained().weights
        res = minimize(_listwise_loss, w0, args=(Xs, gs, l2), jac=True, method="L-BFGS-B", options={"maxiter": 300})
        return cls(weights=res.x, trained_on=trained_on or f"{len(keep)} queries",
                   meta={"train_loss": float(res.fun), "n_queries": len(keep), "l2": l2},
                   lexical_weight=float(lexical_weight))

    @property
    def active_features(self) -> frozenset[str]:
        """The features whose weight is not zero: the only ones :meth:`score` needs computed.

        Example:
            >>> sorted(FusionScorer.untrained().active_features)
            ['dense_z', 'lexical_z', 'window2']
        """
        return frozenset(f for f, w in zip(self.features, self.weights, strict=True) if w != 0)

    @property
    def uses_context(self) -> bool:
        """Whether a context feature (:data:`~langmem_cog.rank.features.CONTEXT_FEATURES`) has a
        non-zero weight, so the cascade should ask the store for context scores."""
        return any(self.weights[FEATURE_NAMES.index(f)] != 0 for f in CONTEXT_FEATURES)

    def score(self, X: np.ndarray) -> np.ndarray:
        """Scores of the candidates of one query (higher is better)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(FEATURE_NAMES):
            raise InvalidInputError(f"feature matrix of shape {X.shape}: expected (n, {len(FEATURE_NAMES)})")
        return X @ self.weights

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (see :meth:`from_dict`)."""
        return {"features": list(self.features), "weights": [float(x) for x in self.weights],
                "trained_on": self.trained_on, "meta": self.meta, "lexical_weight": self.lexical_weight}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FusionScorer:
        """Load a scorer written by :meth:`to_dict` (one without ``lexical_weight`` was fitted with 1.0).

        Raises:
            ConfigError: If the dict is not a scorer of this version.
        """
        try:
            return cls(weights=np.asarray(data["weights"], dtype=np.float64), features=tuple(data["features"]),
                       trained_on=str(data.get("trained_on", "")), meta=dict(data.get("meta") or {}),
                       lexical_weight=float(data.get("lexical_weight", 1.0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"not a FusionScorer dict ({exc}): write it with FusionScorer.to_dict()") from exc

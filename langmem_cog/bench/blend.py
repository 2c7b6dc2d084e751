"""Choosing the cross-encoder's blend weight from held-out questions (pure functions over score arrays).

A *head* is one held-out question's protected top 10: the cross-encoder's z-scored scores, the first
stage's z-scored scores and the gold mask (:func:`~langmem_cog.bench.cascade.blend_heads` builds them).
The compressor ranks a head by ``w * ce_z + first_z``; these functions score every weight of
:data:`BLEND_GRID` and pick one by a rule of :data:`BLEND_RULES`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from langmem_cog.errors import InvalidInputError

__all__ = ["BLEND_GRID", "BLEND_RULES", "best_blend", "blend_grid"]

#: Cross-encoder weights tried against the first stage's (fixed at 1) on held-out train questions.
BLEND_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)

#: How :func:`best_blend` picks a weight of :data:`BLEND_GRID` from held-out MRR.
BLEND_RULES = ("best", "one_se")


def best_blend(heads: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
               rule: str = "best") -> tuple[float, dict[str, float]]:
    """The cross-encoder weight of :data:`BLEND_GRID` chosen on ``heads``
    (:func:`~langmem_cog.bench.cascade.blend_heads`) by ``rule``, and the MRR of every weight.

    Rules (:data:`BLEND_RULES`):

    - ``best``: the weight with the best MRR (ties: the smaller weight).
    - ``one_se``: the one-standard-error rule: the smallest weight whose MRR is within one standard
      error of the best weight's MRR (the standard error of that mean over the questions). The
      cross-encoder is the model that can overfit one style of conversation; among weights that the
      held-out questions cannot tell apart, this keeps the one closest to the first stage.

    Raises:
        InvalidInputError: If ``rule`` is unknown.

    Example:
        >>> import numpy as np
        >>> up = (np.array([0.0, 1.0]), np.array([1.0, 0.0]), np.array([False, True]))  # the CE is right
        >>> agree = (np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.array([True, False]))
        >>> miss = (np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([False, False]))  # no gold in the head
        >>> best_blend([up, agree, miss])[0], best_blend([up, agree, miss], rule="one_se")[0]
        (1.0, 0.0)
    """
    if rule not in BLEND_RULES:
        raise InvalidInputError(f"blend rule {rule!r} is unknown: use one of {list(BLEND_RULES)}")
    rr = _blend_reciprocal_ranks(heads, BLEND_GRID)
    grid = {str(w): round(float(r.mean()), 6) for w, r in rr.items()}
    best = max(BLEND_GRID, key=lambda w: (float(rr[w].mean()), -w))
    if rule == "one_se" and len(heads) > 1:
        floor = float(rr[best].mean()) - float(rr[best].std(ddof=1)) / np.sqrt(len(heads))
        best = min(w for w in BLEND_GRID if float(rr[w].mean()) >= floor)
    return float(best), grid


def blend_grid(heads: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
               weights: Sequence[float] = BLEND_GRID) -> dict[float, tuple[float, float]]:
    """MRR and H@1 of ``w * ce_z + first_z`` over ``heads`` (:func:`~langmem_cog.bench.cascade.blend_heads`),
    per weight ``w``; a question whose gold is not in its top 10 counts as a miss.

    Example:
        >>> import numpy as np
        >>> heads = [(np.array([0.0, 1.0]), np.array([1.0, 0.0]), np.array([False, True]))]
        >>> blend_grid(heads, [0.5, 2.0])
        {0.5: (0.5, 0.0), 2.0: (1.0, 1.0)}
    """
    return {w: (float(r.mean()), float((r == 1.0).mean())) for w, r in _blend_reciprocal_ranks(heads, weights).items()}


def _blend_reciprocal_ranks(heads: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
                            weights: Sequence[float]) -> dict[float, np.ndarray]:
    """Per weight, every question's reciprocal rank of its first gold turn under ``w * ce_z + first_z``
    (0 when the gold is not in the head)."""
    out = {}
    for w in weights:
        rr = np.zeros(len(heads))
        for i, (ce_z, first_z, g) in enumerate(heads):
            if g.any():
                s = w * ce_z + first_z
                rr[i] = 1.0 / (1 + int((s > s[g].max()).sum()))
        out[w] = rr
    return out

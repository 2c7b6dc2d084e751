"""Fusing a pool's dense and lexical scores into one score per turn."""

from __future__ import annotations

import numpy as np

from langmem_cog.fusion import rrf_fuse, zscore_fuse
from langmem_cog.storage.types import PoolScores


def fuse(pool: PoolScores, mode: str, weight: float, rule: str, rrf_k: int) -> np.ndarray:
    if mode == "dense":
        return pool.dense
    if mode == "lexical":
        return pool.lexical
    if rule == "rrf":
        return rrf_fuse([pool.dense, pool.lexical], [1.0, weight], k=rrf_k)
    return zscore_fuse([pool.dense, pool.lexical], [1.0, weight])

"""The retrieval cascade's sizes, :class:`CascadeSettings`: one frozen object, set on a memory's config.

It lives apart from :mod:`langmem_cog.rank.cascade` so that :mod:`langmem_cog.config` can hold it
(``CogMemConfig.cascade``) without importing the cascade's stages. Every :class:`~langmem_cog.rank.cascade.Cascade`
takes its sizes from the config of the store it searches unless it is given its own.

Example:
    >>> from langmem_cog.config import CogMemConfig
    >>> CogMemConfig(cascade=CascadeSettings(rerank_depth=5)).cascade.rerank_depth
    5
    >>> CogMemConfig().cascade == CascadeSettings()
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from langmem_cog.checks import nonnegative_int, positive_int
from langmem_cog.rank.head import RAW_PROTECT, RERANK_DEPTH

__all__ = ["CascadeSettings", "FEATURE_POOL_MAX"]

#: Pools larger than this are cut to the best hybrid candidates (plus grounded turns) before features.
FEATURE_POOL_MAX = 2000


@dataclass(frozen=True)
class CascadeSettings:
    """The cascade's sizes, in one frozen object (``CogMemConfig.cascade``).

    The defaults are the sizes the shipped models were chosen with; changing them changes rankings.

    Attributes:
        rerank_depth: How many fused documents go to the compressor, which may reorder them all
            (ConvMemory v2's protected top 10: Recall@10 is kept by construction).
        raw_protect: The fused top ``rerank_depth`` always holds plain hybrid search's best ``raw_protect``
            turns (:func:`~langmem_cog.rank.head.head_order`; 0: the fused order as it is).
        raw_candidates: Size of the raw top list that decides the ``raw`` / ``graph`` stage label.
        feature_pool_max: Pools larger than this are cut before features are computed ...
        pool_cut: ... to their best ``pool_cut`` hybrid candidates, plus the grounded turns (and, with a
            filter, the best ``pool_cut`` that pass it).

    Raises:
        InvalidInputError: If a size is not a positive integer (``raw_protect`` may be 0).

    Example:
        >>> CascadeSettings(rerank_depth=5).raw_protect
        8
        >>> CascadeSettings(pool_cut=0)
        Traceback (most recent call last):
        ...
        langmem_cog.errors.InvalidInputError: pool_cut=0 is invalid: pass a positive integer
    """

    rerank_depth: int = RERANK_DEPTH
    raw_protect: int = RAW_PROTECT
    raw_candidates: int = 50
    feature_pool_max: int = FEATURE_POOL_MAX
    pool_cut: int = 200

    def __post_init__(self) -> None:
        for name in ("rerank_depth", "raw_candidates", "feature_pool_max", "pool_cut"):
            positive_int(getattr(self, name), name)
        nonnegative_int(self.raw_protect, "raw_protect")

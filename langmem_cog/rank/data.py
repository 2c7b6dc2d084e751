"""Training lists for the reranker and the fusion scorer, built from a train split.

:func:`rerank_examples` turns scored candidate pools into :class:`~langmem_cog.rank.training.RerankExample`
lists: the fused top ``depth`` in order (with plain hybrid search's best ``protect`` kept in it, as the
cascade keeps them: :func:`~langmem_cog.rank.head.head_order`), plus any gold candidate the first stage left out (so
every list teaches something), each pair formatted exactly as the compressor formats it. The pools
themselves come from the retriever's candidate stage (:mod:`langmem_cog.bench.pools`).

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.records import make_turn
    >>> ts = datetime(2023, 1, 1, tzinfo=timezone.utc)
    >>> turns = [make_turn(id=f"t{i}", namespace="d", speaker="a", text=f"text {i}", position=i, timestamp=ts)
    ...          for i in range(4)]
    >>> pool = CandidatePool(turns=turns, dense=np.zeros(4), lexical=np.zeros(4))
    >>> [ex] = rerank_examples([("q?", pool, np.array([3.0, 2.0, 1.0, 0.0]), np.array([0, 0, 0, 1], bool))], depth=2)
    >>> ex.docs, ex.gold
    (['MEMORY_TIME: 0. a: text 0', 'MEMORY_TIME: 1. a: text 1', 'MEMORY_TIME: 3. a: text 3'], [False, False, True])
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np

from langmem_cog.rank.cross_encoder import format_pair
from langmem_cog.rank.features import CandidatePool
from langmem_cog.rank.head import RAW_PROTECT, RERANK_DEPTH, head_order
from langmem_cog.rank.training import RerankExample

__all__ = ["rerank_examples", "ScoredPool"]

logger = logging.getLogger(__name__)

#: ``(query, pool, fused scores, gold mask)``
ScoredPool = tuple[str, CandidatePool, np.ndarray, np.ndarray]


def rerank_examples(pools: Iterable[ScoredPool], depth: int = RERANK_DEPTH, add_missed_gold: bool = True, *,
                    protect: int = RAW_PROTECT, lexical_weight: float = 1.0, positions: bool = True) -> list[RerankExample]:
    """One training list per pool: the fused top ``depth`` (+ missed gold), formatted as the compressor does,
    with each candidate's fused score as the example's ``prior``.

    ``protect`` and ``lexical_weight``: the head holds hybrid's best ``min(protect, depth)`` candidates
    (hybrid = ``z(dense) + lexical_weight * z(BM25)``), as in :meth:`~langmem_cog.rank.cascade.Cascade.rank_pool`.
    ``positions``: the pairs carry the ``QUERY_TIME`` / ``MEMORY_TIME`` positions (the compressor's
    ``use_positions``); ``False``: the plain ``(question, memory text)`` pair.
    """
    out = []
    for query, pool, fused, gold in pools:
        order = [int(i) for i in head_order(fused, pool.hybrid(lexical_weight), depth=depth, protect=min(protect, depth))[:depth]]
        if add_missed_gold:
            order += [int(i) for i in np.flatnonzero(gold) if int(i) not in set(order)]
        if not order:
            continue
        max_pos = max(t.position for t in pool.turns)
        pairs = [format_pair(query, pool.turns[i].memory_text, pos=pool.turns[i].position, max_pos=max_pos)
                 if positions else (query, pool.turns[i].memory_text) for i in order]
        out.append(RerankExample(query=pairs[0][0], docs=[p[1] for p in pairs], gold=[bool(gold[i]) for i in order],
                                 prior=[float(fused[i]) for i in order]))
    return out

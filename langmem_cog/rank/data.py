"""Training lists for the reranker and the fusion scorer, built from a train split.

:func:`rerank_examples` turns scored candidate pools into :class:`~langmem_cog.rank.training.RerankExample`
lists: the fused top ``depth`` in order, plus any gold candidate the first stage left out (so
every list teaches something), each pair formatted exactly as the compressor formats it.
:func:`longmemeval_pools` builds cheap pools for LongMemEval questions (the haystacks are long:
BM25 over the whole haystack, then dense scores only for BM25's top candidates).

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
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from langmem_cog.lexical import LexicalIndex
from langmem_cog.rank.cross_encoder import format_pair
from langmem_cog.rank.features import CandidatePool
from langmem_cog.rank.training import RerankExample

__all__ = ["rerank_examples", "longmemeval_pools", "ScoredPool"]

logger = logging.getLogger(__name__)

#: ``(query, pool, fused scores, gold mask)``
ScoredPool = tuple[str, CandidatePool, np.ndarray, np.ndarray]


def rerank_examples(pools: Iterable[ScoredPool], depth: int = 10, add_missed_gold: bool = True) -> list[RerankExample]:
    """One training list per pool: the fused top ``depth`` (+ missed gold), formatted as the compressor does,
    with each candidate's fused score as the example's ``prior``."""
    out = []
    for query, pool, fused, gold in pools:
        order = list(np.argsort(-np.asarray(fused), kind="stable")[:depth])
        if add_missed_gold:
            order += [int(i) for i in np.flatnonzero(gold) if int(i) not in set(order)]
        if not order:
            continue
        max_pos = max(t.position for t in pool.turns)
        pairs = [format_pair(query, pool.turns[i].memory_text, pos=pool.turns[i].position, max_pos=max_pos) for i in order]
        out.append(RerankExample(query=pairs[0][0], docs=[p[1] for p in pairs], gold=[bool(gold[i]) for i in order],
                                 prior=[float(fused[i]) for i in order]))
    return out


def longmemeval_pools(
    questions: Sequence[Any],
    embed: Callable[[list[str]], np.ndarray],
    *,
    bm25_depth: int = 30,
    embed_chars: int = 600,
    progress: Callable[[Iterable[Any], str, int], Iterable[Any]] | None = None,
) -> list[tuple[Any, CandidatePool, np.ndarray]]:
    """Cheap candidate pools of LongMemEval questions: BM25's top ``bm25_depth`` turns of each haystack
    plus its ``bm25_depth // 4`` most recent turns, with dense scores for those only.

    Args:
        questions: :class:`~langmem_cog.loaders.LongMemEvalQuestion` objects (abstentions are skipped).
        embed: Normalised embeddings of a list of texts (first the query, then the turns).
        bm25_depth: BM25 candidates per question.
        embed_chars: Turns are embedded from their first ``embed_chars`` characters (LongMemEval's
            assistant turns run to thousands of characters; the bi-encoder reads 256 tokens at most).
        progress: Optional progress wrapper.

    Returns:
        ``(question, pool, gold_mask)`` per question. Gold turns outside the pool stay outside: the
        pool is what a first stage would see.
    """
    items = [q for q in questions if not q.is_abstention and q.turns]
    it: Iterable[Any] = progress(items, "longmemeval pools", len(items)) if progress else items
    out = []
    for q in it:
        index = LexicalIndex()
        index.add([t.id for t in q.turns], [t.memory_text for t in q.turns])
        ids, scores = index.scores(q.question)
        by_id = {t.id: t for t in q.turns}
        top = [ids[i] for i in np.argsort(-scores, kind="stable")[:bm25_depth]]
        recent = [t.id for t in q.turns[-max(1, bm25_depth // 4):]]
        keep = list(dict.fromkeys(top + recent))
        keep.sort(key=lambda i: by_id[i].position)
        turns = [by_id[i] for i in keep]
        vecs = embed([q.question] + [t.memory_text[:embed_chars] for t in turns])
        dense = vecs[1:] @ vecs[0]
        lexical = scores[[ids.index(i) for i in keep]]
        gold = np.isin(np.array(keep), q.gold_turn_ids)
        out.append((q, CandidatePool(turns=turns, dense=dense, lexical=lexical), gold))
    return out

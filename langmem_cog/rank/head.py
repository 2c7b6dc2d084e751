"""The head of a fused ranking: what the compressor reads, with raw retrieval's best kept in it.

The fusion scorer lifts turns that raw retrieval ranks low (a grounded Event, the reply next to a
strong match). Each lift pushes another turn out of the top 10, and when that turn was one of plain
hybrid search's best, the memory costs evidence raw retrieval had found (the memory tax).
:func:`head_order` bounds that cost by construction: the first ``depth`` places of the fused ranking
always hold hybrid's best ``protect`` turns (the fused order decides everything else), so at most
``depth - protect`` places are open to lifted turns. The compressor then reorders only that head.

Example:
    >>> import numpy as np
    >>> fused = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    >>> hybrid = np.array([0.0, 0.1, 0.2, 0.3, 9.0])  # hybrid's best turn is the fusion's last
    >>> head_order(fused, hybrid, depth=3, protect=1).tolist()
    [0, 1, 4, 2, 3]
    >>> head_order(fused, hybrid, depth=3, protect=0).tolist()
    [0, 1, 2, 3, 4]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from langmem_cog.errors import InvalidInputError

__all__ = ["RERANK_DEPTH", "RAW_PROTECT", "head_order"]

#: How many fused turns the compressor reorders (ConvMemory v2 protects this top 10).
RERANK_DEPTH = 10
#: How many of plain hybrid search's best turns the fused top ``RERANK_DEPTH`` always holds. Chosen by
#: leaving one dataset out (docs/BENCHMARKS.md, "The default retriever: a fitted fusion on features that
#: transfer"): 8 kept the Hit@10 memory tax under 1% of hybrid's hits in both directions, where the
#: unguarded fusion lost 1-2%.
RAW_PROTECT = 8


def head_order(fused: np.ndarray, hybrid: np.ndarray, *, depth: int = RERANK_DEPTH, protect: int = RAW_PROTECT,
               allowed: Sequence[int] | None = None) -> np.ndarray:
    """The fused ranking (candidate indices, best first) with hybrid's best ``protect`` in its first ``depth``.

    Inside the head and after it, candidates keep their fused order; a candidate pushed out of the head
    by a protected one leads the rest.

    Args:
        fused: The fused score of every candidate.
        hybrid: Plain hybrid search's score of every candidate (``z(dense) + w * z(BM25)``).
        depth: The head's size.
        protect: How many of hybrid's best candidates the head must hold (0: the plain fused order).
        allowed: Only these candidate indices are ranked (a filter), in any order; ``None``: all.

    Returns:
        An int64 array of candidate indices.

    Raises:
        InvalidInputError: If the scores disagree in length or ``protect`` is outside ``0..depth``.
    """
    fused, hybrid = np.asarray(fused, dtype=np.float64), np.asarray(hybrid, dtype=np.float64)
    if fused.shape != hybrid.shape or fused.ndim != 1:
        raise InvalidInputError(f"fused scores {fused.shape} and hybrid scores {hybrid.shape} must be one per candidate")
    if isinstance(protect, bool) or not 0 <= protect <= depth:
        raise InvalidInputError(f"protect={protect!r} is invalid: pass an integer from 0 to depth ({depth})")
    order = np.argsort(-fused, kind="stable")
    if allowed is not None:
        keep = np.zeros(len(fused), dtype=bool)
        keep[np.asarray(list(allowed), dtype=np.int64)] = True
        order = order[keep[order]]
    if protect == 0 or len(order) <= depth:
        return order.astype(np.int64)
    by_hybrid = order[np.argsort(-hybrid[order], kind="stable")]
    kept = set(by_hybrid[:protect].tolist())
    head: list[int] = []
    free = depth - len(kept)
    for i in order.tolist():
        if i in kept:
            head.append(i)
        elif free > 0:
            head.append(i)
            free -= 1
        if len(head) == depth:
            break
    in_head = set(head)
    return np.array(head + [i for i in order.tolist() if i not in in_head], dtype=np.int64)

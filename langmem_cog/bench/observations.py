"""Extra reranker training lists from LoCoMo's per-session observations (train conversations only).

Every LoCoMo record carries ``observation``: per session and speaker, short statements written by the
dataset's annotators, each linked to the turn(s) it came from (``["Caroline attended an LGBTQ support
group ...", "D1:3"]``). Used as pseudo-queries they give about as many training lists again as the
record's questions: the statement is the query, its linked turns are the gold, and the candidates
are the statement's hybrid (dense + BM25) top ten over the whole conversation, formatted exactly as
the compressor formats pairs. They are read only from the records of a seed's train conversations;
nothing here is used at query time.

Example:
    >>> rec = {"observation": {"session_1_observation": {"Leo": [["Leo works at a bakery.", "D1:1"],
    ...                                                         ["Leo likes jazz.", ["D1:2", "D9:9"]]]}}}
    >>> locomo_observations(rec)
    [('Leo works at a bakery.', ['D1:1']), ('Leo likes jazz.', ['D1:2', 'D9:9'])]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from langmem_cog.errors import InvalidInputError
from langmem_cog.fusion import zscore
from langmem_cog.lexical import LexicalIndex
from langmem_cog.rank.data import ScoredPool
from langmem_cog.rank.features import CandidatePool
from langmem_cog.records import Turn

__all__ = ["locomo_observations", "observation_pools"]


def locomo_observations(record: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """The ``(statement, evidence ids)`` pairs of one LoCoMo record, in file order.

    Raises:
        InvalidInputError: If ``observation`` is present but not shaped as LoCoMo writes it.
    """
    obs = record.get("observation") or {}
    if not isinstance(obs, Mapping):
        raise InvalidInputError(f"'observation' must map sessions to speakers, got {type(obs).__name__}")
    out: list[tuple[str, list[str]]] = []
    for by_speaker in obs.values():
        if not isinstance(by_speaker, Mapping):
            raise InvalidInputError(f"an observation session must map speakers to statements, got {by_speaker!r:.80}")
        for items in by_speaker.values():
            for item in items:
                if not (isinstance(item, Sequence) and len(item) == 2 and isinstance(item[0], str)):
                    raise InvalidInputError(f"an observation must be [statement, evidence], got {item!r:.80}")
                ev = item[1]
                ids = [ev] if isinstance(ev, str) else [str(e) for e in ev]
                out.append((item[0], [i.strip() for i in ids if i and i.strip()]))
    return out


def observation_pools(
    statements: Sequence[tuple[str, Sequence[str]]],
    turns: Sequence[Turn],
    embed: Callable[[list[str]], np.ndarray],
    *,
    lexical_weight: float,
) -> list[ScoredPool]:
    """Scored pools for observation statements over one conversation's turns.

    Args:
        statements: ``(statement, evidence ids)`` pairs (:func:`locomo_observations`).
        turns: The conversation's turns (the whole pool a question of it would see).
        embed: Unit-normalised embeddings of a list of texts.
        lexical_weight: BM25's weight in the hybrid score (dense has weight 1).

    Returns:
        ``(statement, pool, hybrid scores, gold mask)`` for each statement with at least one
        evidence id among ``turns``; the others are skipped.
    """
    ids = [t.id for t in turns]
    keep = [(s, ev) for s, ev in statements if any(e in set(ids) for e in ev)]
    if not keep or not turns:
        return []
    index = LexicalIndex()
    index.add(ids, [t.memory_text for t in turns])
    turn_vecs = np.asarray(embed([t.memory_text for t in turns]), dtype=np.float64)
    query_vecs = np.asarray(embed([s for s, _ in keep]), dtype=np.float64)
    out: list[ScoredPool] = []
    for (statement, ev), qv in zip(keep, query_vecs, strict=True):
        dense = turn_vecs @ qv
        lexical = index.scores_for(statement, ids).astype(np.float64)
        fused = zscore(dense) + lexical_weight * zscore(lexical)
        pool = CandidatePool(turns=list(turns), dense=dense, lexical=lexical)
        out.append((statement, pool, fused, np.isin(np.array(ids), list(ev))))
    return out

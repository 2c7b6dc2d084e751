"""The records the raw-turn store hands out: scored turns, score pools, ingest timings, search modes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from langmem_cog.records import Turn

__all__ = ["PoolScores", "ScoredTurn", "SearchMode", "StageTimes"]

SearchMode = Literal["hybrid", "dense", "lexical"]


@dataclass
class StageTimes:
    """Seconds ``add_turns`` spent in each of its steps since the store was opened (or :meth:`reset`).

    ``embed``: the embedder; ``chroma``: Chroma's write; ``bm25``: the BM25 index and its log;
    ``context``: the context vectors (only for namespaces that have them); ``total``: the whole calls;
    ``turns``: the turns the calls were given. ``langmem-cog bench ingest`` reports the shares.
    """

    embed: float = 0.0
    chroma: float = 0.0
    bm25: float = 0.0
    context: float = 0.0
    total: float = 0.0
    turns: int = 0

    def reset(self) -> None:
        """Set every figure back to zero."""
        self.embed = self.chroma = self.bm25 = self.context = self.total = 0.0
        self.turns = 0


@dataclass(frozen=True)
class ScoredTurn:
    """A turn with its retrieval scores.

    Attributes:
        turn: The raw turn.
        score: The fused score (higher is better).
        dense_score: Cosine similarity of the query and the turn.
        lexical_score: BM25 score.
        rank: 1-based rank in the result list.
    """

    turn: Turn
    score: float
    dense_score: float
    lexical_score: float
    rank: int


@dataclass
class PoolScores:
    """Dense and lexical scores of every turn of a namespace for one query (aligned arrays)."""

    ids: list[str]
    dense: np.ndarray
    lexical: np.ndarray
    context: np.ndarray | None = None  # cosine to each turn's context vector (None: context vectors off)
    context_lexical: np.ndarray | None = None  # BM25 against each turn's context text (None: as ``context``)

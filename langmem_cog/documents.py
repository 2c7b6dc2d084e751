"""Turns as LangChain ``Document`` objects: the page content and the metadata every stage returns.

Example:
    >>> from datetime import UTC, datetime
    >>> from langmem_cog.records import make_turn
    >>> t = make_turn(id="D1:3", namespace="demo", conversation_id="c", session_id="s1", speaker="Leo",
    ...               text="I am allergic to shellfish.", timestamp=datetime(2024, 5, 1, tzinfo=UTC), position=3)
    >>> d = turn_document(t, score=1.5, dense_score=0.7, lexical_score=2.1, rank=1, stage="raw")
    >>> d.page_content, d.metadata["turn_id"], d.metadata["stage"]
    ('Leo: I am allergic to shellfish.', 'D1:3', 'raw')
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document

from langmem_cog.records import Turn
from langmem_cog.storage.types import ScoredTurn

__all__ = ["scored_turn_to_document", "turn_document"]


def scored_turn_to_document(hit: ScoredTurn, stage: str = "raw") -> Document:
    """A search hit as a ``Document``: ``"speaker: text"`` plus full metadata."""
    return turn_document(hit.turn, score=hit.score, dense_score=hit.dense_score, lexical_score=hit.lexical_score,
                         rank=hit.rank, stage=stage)


def turn_document(t: Turn, *, score: float, dense_score: float, lexical_score: float, rank: int, stage: str,
                  **extra: Any) -> Document:
    """A turn as a ``Document`` with the standard metadata (plus ``extra`` keys).

    The turn's own metadata comes as ``turn_<key>``; where such a name is a standard key (a metadata
    key ``id`` would be ``turn_id``), the standard key wins, so a citation always names the turn.
    """
    return Document(
        id=t.id,
        page_content=t.memory_text,
        metadata={
            **{f"turn_{k}": v for k, v in t.metadata.items()},
            "turn_id": t.id,
            "namespace": t.namespace,
            "conversation_id": t.conversation_id,
            "session_id": t.session_id,
            "speaker": t.speaker,
            "timestamp": t.timestamp.isoformat(),
            "position": t.position,
            "score": score,
            "dense_score": dense_score,
            "lexical_score": lexical_score,
            "rank": rank,
            "stage": stage,
            **extra,
        },
    )

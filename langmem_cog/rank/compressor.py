"""``ConvMemoryCompressor``: the recall-preserving last step (ConvMemory v2).

The compressor takes the fused ranking, protects its top ``protect`` (10) documents, scores each
of them with a :class:`~langchain_core.cross_encoders.BaseCrossEncoder` on the pair
``("QUERY_TIME: {max_pos}. {query}", "MEMORY_TIME: {pos}. {text}")`` (ConvMemory v2's format,
``use_positions=True``) or ``(query, text)`` (``use_positions=False``, how the shipped cross-encoder was
trained: :func:`~langmem_cog.rank.defaults.default_compressor` reads it from the models folder), optionally blends that
score with the incoming first-stage score (both put on one scale within the ten: z-scored, or, with
``scale="center"``, only centred, so that a confident model moves the order more), reorders only those
ten and appends the tail unchanged. The set of the top ten and the order of the tail never
change, so Recall@10 is preserved by construction. Documents are reordered by index, never
matched by text.

Two ways in: :meth:`ConvMemoryCompressor.compress_documents` (LangChain's API) reads each document's
first-stage score and position from its metadata; :meth:`ConvMemoryCompressor.rerank` is handed them
as values (:class:`Candidate`, what the retrieval cascade passes) and returns the new order as indices
(:class:`Reranked`), which :meth:`Reranked.apply` turns into the reordered documents.

Anti-shortcut contract: a candidate whose metadata carries a gold or teacher field
(:data:`FORBIDDEN_FIELDS`) is refused with :class:`~langmem_cog.errors.ShortcutFieldError`
(a ``ValueError``): a ranker must never see the answer.

Example:
    >>> from langchain_core.documents import Document
    >>> class LengthCE(BaseCrossEncoder):  # a toy cross-encoder: longer memory = more relevant
    ...     def score(self, text_pairs):
    ...         return [float(len(m)) for _, m in text_pairs]
    >>> docs = [Document(page_content="x" * n, metadata={"score": 0.0, "position": i})
    ...         for i, n in enumerate([1, 3, 2])]
    >>> out = ConvMemoryCompressor(cross_encoder=LengthCE(), protect=2, first_stage_weight=0.0).compress_documents(docs, "q")
    >>> [len(d.page_content) for d in out]  # the top 2 reordered, the tail kept
    [3, 1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
from langchain_core.callbacks import Callbacks
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, Field

from langmem_cog.errors import InvalidInputError, ShortcutFieldError
from langmem_cog.fusion import zscore
from langmem_cog.rank.cross_encoder import format_pair

__all__ = ["SCALES", "Candidate", "ConvMemoryCompressor", "FORBIDDEN_FIELDS", "Reranked", "check_no_shortcuts",
           "head_scale"]

#: How :func:`head_scale` puts a head's scores on one scale before they are blended.
Scale = Literal["z", "center"]
SCALES: tuple[str, ...] = get_args(Scale)


def head_scale(scores: Sequence[float] | np.ndarray, scale: str = "z") -> np.ndarray:
    """``scores`` of one head on the blend's scale: ``z`` standardises them (mean 0, std 1); ``center``
    only subtracts their mean, so a listwise model's logits keep their spread (how sure the model is).

    Example:
        >>> head_scale([1.0, 3.0], "z").tolist(), head_scale([1.0, 3.0], "center").tolist()
        ([-1.0, 1.0], [-1.0, 1.0])
        >>> head_scale([1.0, 1.5], "z").tolist(), head_scale([1.0, 1.5], "center").tolist()
        ([-1.0, 1.0], [-0.25, 0.25])
    """
    x = np.asarray(scores, dtype=np.float64)
    if scale == "z":
        return zscore(x)
    if scale == "center":
        return x - x.mean() if x.size else x
    raise InvalidInputError(f"scale={scale!r} is unknown: use one of {list(SCALES)}")

#: Metadata keys that would leak the answer or a teacher's verdict into a ranker.
FORBIDDEN_FIELDS: frozenset[str] = frozenset({
    "gold", "gold_ids", "gold_id", "is_gold", "evidence", "evidence_ids", "answer", "answer_text", "answers",
    "label", "labels", "relevant", "is_relevant", "is_current", "is_latest", "latest", "stale", "is_stale",
    "ce_score", "teacher_score", "teacher", "judge_score", "llm_score", "oracle_score", "target",
})


def check_no_shortcuts(documents: Sequence[Document]) -> None:
    """Raise if any document carries a gold or teacher field.

    Raises:
        ShortcutFieldError: Naming the document index and the fields to remove.
    """
    for i, doc in enumerate(documents):
        bad = sorted(k for k in doc.metadata if str(k).lower() in FORBIDDEN_FIELDS)
        if bad:
            raise ShortcutFieldError(
                f"candidate {i} (id {doc.id!r}) carries gold/teacher fields {bad}: a reranker must never see "
                "labels; remove these metadata keys before reranking"
            )


@dataclass(frozen=True)
class Candidate:
    """One entry of a ranking handed to :meth:`ConvMemoryCompressor.rerank`, as values.

    Attributes:
        turn_id: The entry's turn.
        text: The text the cross-encoder reads (its document's ``page_content``).
        score: Its first-stage score (the cascade's fused score).
        position: Its turn's position in the namespace (``None``: unknown), for ``use_positions``.
    """

    turn_id: str
    text: str
    score: float
    position: int | None = None


@dataclass(frozen=True)
class Reranked:
    """A compressor's new order of a ranking.

    Attributes:
        order: Indices into the ranking, best first: the head reordered, then the tail as it was.
        relevance: The relevance score of each place of ``order`` (the blended score in the head;
            below the head's, descending, in the tail).
        head: How many leading places were reranked.
    """

    order: tuple[int, ...]
    relevance: tuple[float, ...]
    head: int

    def apply(self, documents: Sequence[Document]) -> list[Document]:
        """Copies of the ranking's ``documents`` in the new order, their metadata gaining
        ``relevance_score`` and ``reranked`` (whether the place is in the head)."""
        return [_copy(documents[i], relevance_score=r, reranked=place < self.head)
                for place, (i, r) in enumerate(zip(self.order, self.relevance, strict=True))]


def _position(value: Any) -> int | None:
    return int(value) if isinstance(value, int | np.integer) else None


class ConvMemoryCompressor(BaseDocumentCompressor):
    """Rerank the protected top ``protect`` documents with a cross-encoder; keep the tail.

    Attributes:
        cross_encoder: Any ``BaseCrossEncoder`` (the shipped :class:`~langmem_cog.rank.cross_encoder.LocalCrossEncoder`,
            or e.g. a hub MS MARCO model a user has locally).
        protect: How many leading documents may be reordered (10: Recall@10 preserved).
        cross_encoder_weight: Weight of the cross-encoder's score (on the ``scale``).
        first_stage_weight: Weight of the incoming score (``first_stage_key``, on the ``scale``); 0 = cross-encoder alone.
        first_stage_key: Metadata key :meth:`compress_documents` reads the incoming first-stage score from
            (:meth:`rerank` is handed it: :attr:`Candidate.score`).
        use_positions: Prefix ``QUERY_TIME`` / ``MEMORY_TIME`` to the pairs (from metadata ``position`` and
            ``max_position``, or the :class:`Candidate` positions and ``max_position`` :meth:`rerank` is given).
        scale: How both scores are put on one scale within the head before the blend (:func:`head_scale`):
            ``z`` (z-scores) or ``center`` (centred logits: the spread, how sure each model is, is kept).

    Each returned document is a copy whose metadata gains ``relevance_score`` (the blended score for
    the protected head; for the tail, its unchanged order is kept and the score is below the head's) and
    ``reranked`` (whether it was in the protected head); :meth:`rerank` returns the same order as
    indices (:class:`Reranked`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    cross_encoder: BaseCrossEncoder
    protect: int = Field(default=10, ge=1)
    cross_encoder_weight: float = Field(default=1.0, ge=0.0)
    first_stage_weight: float = Field(default=1.0, ge=0.0)
    first_stage_key: str = "score"
    use_positions: bool = True
    scale: Scale = "z"

    def pairs(self, head: Sequence[Document], query: str) -> list[tuple[str, str]]:
        """The (query, memory) pairs the cross-encoder scores for ``head``, in the format it was trained on
        (``use_positions``: with ``QUERY_TIME`` / ``MEMORY_TIME`` markers from metadata ``position`` and
        ``max_position``)."""
        if not self.use_positions:
            return [(query, d.page_content) for d in head]
        return self._pairs(query, [d.page_content for d in head], [_position(d.metadata.get("position")) for d in head],
                           _position(head[0].metadata.get("max_position")))

    def _pairs(self, query: str, texts: Sequence[str], positions: Sequence[int | None],
               max_position: int | None) -> list[tuple[str, str]]:
        """The pairs of ``texts``; without ``max_position``, the latest of ``positions`` is the query's."""
        if not self.use_positions:
            return [(query, t) for t in texts]
        if max_position is None:
            max_position = max((p for p in positions if p is not None), default=None)
        return [format_pair(query, t, pos=p, max_pos=max_position) for t, p in zip(texts, positions, strict=True)]

    def rerank_scores(self, head: Sequence[Document], query: str) -> np.ndarray:
        """Blended scores of the protected head (higher is better), aligned with ``head`` (the first-stage
        score read from metadata ``first_stage_key``)."""
        if not head:
            return np.zeros(0)
        first = [float(d.metadata.get(self.first_stage_key, 0.0) or 0.0) for d in head] if self.first_stage_weight else None
        return self._blend(self.pairs(head, query), first)

    def _blend(self, pairs: Sequence[tuple[str, str]], first: Sequence[float] | None) -> np.ndarray:
        """The cross-encoder's scores of ``pairs`` blended with the first-stage scores ``first`` (read only
        when ``first_stage_weight`` is not 0)."""
        ce = np.asarray(self.cross_encoder.score(list(pairs)), dtype=np.float64)
        if len(ce) != len(pairs):
            raise ValueError(f"cross-encoder returned {len(ce)} scores for {len(pairs)} pairs: it must return one per pair")
        final = self.cross_encoder_weight * head_scale(ce, self.scale)
        if self.first_stage_weight and first is not None:
            final = final + self.first_stage_weight * head_scale(np.array(first, dtype=np.float64), self.scale)
        return final

    def rerank(self, candidates: Sequence[Candidate], query: str, max_position: int | None = None) -> Reranked:
        """The new order of a ranking handed over as values: its first ``protect`` entries reordered by
        the blended score (ties keep their order), the rest kept.

        Args:
            candidates: The ranking, best first.
            query: The question.
            max_position: The namespace's latest turn position (``QUERY_TIME``); ``None``: the latest
                position in the head.
        """
        head = candidates[: self.protect]
        if not head:
            return _reorder(np.zeros(0), len(candidates))
        pairs = self._pairs(query, [c.text for c in head], [c.position for c in head], max_position)
        return _reorder(self._blend(pairs, [c.score for c in head]), len(candidates))

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """The documents with the protected head reordered by the blended score and the tail unchanged
        (first-stage scores and positions read from their metadata).

        Raises:
            ShortcutFieldError: If a candidate carries a gold or teacher field.
        """
        docs = list(documents)
        check_no_shortcuts(docs)
        head = docs[: self.protect]
        return _reorder(self.rerank_scores(head, query), len(docs)).apply(docs)


def _reorder(scores: np.ndarray, size: int) -> Reranked:
    """The head (``scores``, aligned with its entries) by score, ties in their order, then the rest of
    ``size`` entries as they are, each below the head's lowest score."""
    order = np.argsort(-scores, kind="stable")
    floor = float(scores.min()) if len(scores) else 0.0
    tail = range(len(scores), size)
    return Reranked(order=tuple(int(j) for j in order) + tuple(tail),
                    relevance=tuple(float(scores[int(j)]) for j in order) + tuple(floor - 1.0 - i for i in range(len(tail))),
                    head=len(scores))


def _copy(doc: Document, **meta: Any) -> Document:
    return Document(id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, **meta})

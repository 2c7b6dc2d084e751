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
from typing import Any, Literal, get_args

import numpy as np
from langchain_core.callbacks import Callbacks
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, Field

from langmem_cog.errors import InvalidInputError, ShortcutFieldError
from langmem_cog.fusion import zscore
from langmem_cog.rank.cross_encoder import format_pair

__all__ = ["SCALES", "ConvMemoryCompressor", "FORBIDDEN_FIELDS", "check_no_shortcuts", "head_scale"]

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


class ConvMemoryCompressor(BaseDocumentCompressor):
    """Rerank the protected top ``protect`` documents with a cross-encoder; keep the tail.

    Attributes:
        cross_encoder: Any ``BaseCrossEncoder`` (the shipped :class:`~langmem_cog.rank.cross_encoder.LocalCrossEncoder`,
            or e.g. a hub MS MARCO model a user has locally).
        protect: How many leading documents may be reordered (10: Recall@10 preserved).
        cross_encoder_weight: Weight of the cross-encoder's score (on the ``scale``).
        first_stage_weight: Weight of the incoming score (``first_stage_key``, on the ``scale``); 0 = cross-encoder alone.
        first_stage_key: Metadata key of the incoming first-stage score.
        use_positions: Prefix ``QUERY_TIME`` / ``MEMORY_TIME`` from metadata ``position`` and ``max_position``.
        scale: How both scores are put on one scale within the head before the blend (:func:`head_scale`):
            ``z`` (z-scores) or ``center`` (centred logits: the spread, how sure each model is, is kept).

    Each returned document is a copy whose metadata gains ``relevance_score`` (the blended score for
    the protected head; for the tail, its unchanged order is kept and the score is below the head's) and
    ``reranked`` (whether it was in the protected head).
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
        (``use_positions``: with ``QUERY_TIME`` / ``MEMORY_TIME`` markers)."""
        if not self.use_positions:
            return [(query, d.page_content) for d in head]
        positions = [d.metadata.get("position") for d in head]
        known = [int(p) for p in positions if isinstance(p, int | np.integer)]
        given = head[0].metadata.get("max_position")
        max_pos = int(given) if isinstance(given, int | np.integer) else max(known, default=None)
        return [format_pair(query, d.page_content, pos=int(p) if isinstance(p, int | np.integer) else None, max_pos=max_pos)
                for d, p in zip(head, positions, strict=True)]

    def rerank_scores(self, head: Sequence[Document], query: str) -> np.ndarray:
        """Blended scores of the protected head (higher is better), aligned with ``head``."""
        if not head:
            return np.zeros(0)
        ce = np.asarray(self.cross_encoder.score(self.pairs(head, query)), dtype=np.float64)
        if len(ce) != len(head):
            raise ValueError(f"cross-encoder returned {len(ce)} scores for {len(head)} pairs: it must return one per pair")
        final = self.cross_encoder_weight * head_scale(ce, self.scale)
        if self.first_stage_weight:
            first = np.array([float(d.metadata.get(self.first_stage_key, 0.0) or 0.0) for d in head])
            final = final + self.first_stage_weight * head_scale(first, self.scale)
        return final

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """The documents with the protected head reordered by the blended score and the tail unchanged.

        Raises:
            ShortcutFieldError: If a candidate carries a gold or teacher field.
        """
        docs = list(documents)
        check_no_shortcuts(docs)
        head, tail = docs[: self.protect], docs[self.protect :]
        scores = self.rerank_scores(head, query)
        order = np.argsort(-scores, kind="stable")  # ties keep the first-stage order
        out: list[Document] = []
        for j in order:
            out.append(_copy(head[int(j)], relevance_score=float(scores[int(j)]), reranked=True))
        floor = float(scores.min()) if len(scores) else 0.0
        for i, d in enumerate(tail):
            out.append(_copy(d, relevance_score=floor - 1.0 - i, reranked=False))
        return out


def _copy(doc: Document, **meta: Any) -> Document:
    return Document(id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, **meta})

"""``CogMemRetriever``: a LangChain retriever over a namespace's memory.

For now the retriever runs hybrid raw retrieval (dense + BM25, z-score fusion)
over the raw-turn store; later stages plug in behind the same interface.

Example:
    >>> from langmem_cog import CogMemConfig, CogMemRetriever, TurnStore
    >>> store = TurnStore(CogMemConfig.preset("ephemeral"))  # doctest: +SKIP
    >>> retriever = CogMemRetriever(store=store, namespace="demo-1", k=3)  # doctest: +SKIP
    >>> docs = retriever.invoke("What is Leo allergic to?")  # doctest: +SKIP
    >>> docs[0].metadata["turn_id"], docs[0].metadata["stage"]  # doctest: +SKIP
    ('D1:18', 'raw')
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langmem_cog.errors import InvalidInputError
from langmem_cog.records import Turn, validate_namespace
from langmem_cog.store import ScoredTurn, SearchMode, TurnStore
from langmem_cog.tokens import count_tokens

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

__all__ = ["CogMemRetriever", "scored_turn_to_document", "turn_document", "trim_to_budget"]


def scored_turn_to_document(hit: ScoredTurn, stage: str = "raw") -> Document:
    """A search hit as a ``Document``: ``"speaker: text"`` plus full metadata."""
    return turn_document(hit.turn, score=hit.score, dense_score=hit.dense_score, lexical_score=hit.lexical_score,
                         rank=hit.rank, stage=stage)


def turn_document(t: Turn, *, score: float, dense_score: float, lexical_score: float, rank: int, stage: str,
                  **extra: Any) -> Document:
    """A turn as a ``Document`` with the standard metadata (plus ``extra`` keys)."""
    return Document(
        id=t.id,
        page_content=t.memory_text,
        metadata={
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
            **{f"turn_{k}": v for k, v in t.metadata.items()},
            **extra,
        },
    )


def trim_to_budget(docs: list[Document], max_tokens: int | None) -> list[Document]:
    """Keep the longest prefix of ``docs`` whose page contents fit in ``max_tokens`` (cl100k_base).

    The first document is always kept, so a budget never returns nothing when there is evidence;
    each kept document records its ``tokens``.
    """
    if max_tokens is None:
        return docs
    out: list[Document] = []
    used = 0
    for doc in docs:
        n = count_tokens(doc.page_content)
        if out and used + n > max_tokens:
            break
        doc.metadata["tokens"] = n
        out.append(doc)
        used += n
    return out


class CogMemRetriever(BaseRetriever):
    """Retrieve cited evidence turns from one namespace of memory.

    With only a ``store``, it runs hybrid raw retrieval (dense + BM25, z-score fusion). Turning on
    any later stage runs the full cascade (:class:`~langmem_cog.rank.cascade.Cascade`): raw + graph
    candidates -> learned fusion -> the recall-preserving compressor. :meth:`full` builds the
    shipped configuration (graph loop, the shipped fusion scorer and cross-encoder).

    Attributes:
        store: The raw-turn store (taken from ``memory`` when omitted).
        namespace: The namespace searched (one user's or agent's memory).
        k: How many documents to return (overridable per call: ``invoke(q, k=3)``).
        max_tokens: Token budget (cl100k_base) of the returned page contents, or ``None``.
        mode: ``hybrid`` (default), ``dense`` or ``lexical`` (the plain path only).
        lexical_weight: Weight of BM25 in fusion; ``None`` uses the store's config.
        missing_ok: Return ``[]`` for a namespace with no turns yet (default) instead of raising
            :class:`~langmem_cog.errors.UnknownNamespaceError`.
        memory: A :class:`~langmem_cog.memory.CogMemory` (needed by the graph stage).
        use_graph: Run the operator loop and use what it grounds (needs ``memory``).
        fusion: A :class:`~langmem_cog.rank.scorer.FusionScorer`; ``None`` with a cascade on uses its
            untrained fallback.
        compressor: The last step, e.g. :class:`~langmem_cog.rank.compressor.ConvMemoryCompressor`.
        now: When questions are asked (relative dates in questions resolve against it); ``None``: now.

    Every returned ``Document`` has ``metadata`` with ``turn_id``, ``speaker``, ``session_id``,
    ``timestamp`` (ISO 8601), ``score``, ``dense_score``, ``lexical_score``, ``rank`` and
    ``stage`` (``"raw"`` for raw-turn evidence, ``"graph"`` / ``"raw+graph"`` for turns the operator
    loop grounded); after a compressor also ``relevance_score`` and ``reranked``.

    Example:
        >>> retriever = CogMemRetriever.full(memory, namespace="demo-1")  # doctest: +SKIP
        >>> [d.metadata["stage"] for d in retriever.invoke("What is Leo allergic to?", k=3)]  # doctest: +SKIP
        ['raw+graph', 'raw', 'raw']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: TurnStore | None = None
    namespace: str
    k: int = Field(default=10, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    mode: SearchMode = "hybrid"
    lexical_weight: float | None = Field(default=None, ge=0.0)
    missing_ok: bool = True
    memory: Any = None
    use_graph: bool = False
    fusion: Any = None
    compressor: BaseDocumentCompressor | None = None
    now: datetime | str | None = None
    _cascade: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic runs, so callers get our named errors rather than a ValidationError.
        if "namespace" in data:
            validate_namespace(data["namespace"])
        if data.get("store") is None and data.get("memory") is None:
            raise InvalidInputError("CogMemRetriever needs store=TurnStore(...) or memory=CogMemory(...)")
        if data.get("use_graph") and data.get("memory") is None:
            raise InvalidInputError("use_graph=True needs memory=CogMemory(...): the graph lives in the memory")
        super().__init__(**data)

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, v: str) -> str:
        return validate_namespace(v)

    @model_validator(mode="after")
    def _check_stages(self) -> CogMemRetriever:
        if self.store is None:
            self.store = self.memory.store
        return self

    @classmethod
    def full(cls, memory: CogMemory, namespace: str, **kwargs: Any) -> CogMemRetriever:
        """The shipped cascade: raw + graph -> the shipped fusion scorer -> ConvMemory v2 rerank.

        The cross-encoder scores on ``memory.config.rerank_threads`` torch threads.

        Raises:
            ModelNotFoundError: If the shipped reranker checkpoint is missing.
        """
        from langmem_cog.rank.defaults import default_compressor, default_scorer

        kwargs.setdefault("fusion", default_scorer())
        if "compressor" not in kwargs:
            kwargs["compressor"] = default_compressor(threads=memory.config.rerank_threads)
        return cls(memory=memory, namespace=namespace, use_graph=True, **kwargs)

    @property
    def cascade_on(self) -> bool:
        return self.use_graph or self.fusion is not None or self.compressor is not None

    def _search(self, query: str, k: int | None, max_tokens: int | None) -> list[Document]:
        k_eff = self.k if k is None else k
        if isinstance(k_eff, bool) or not isinstance(k_eff, int) or k_eff < 1:
            raise InvalidInputError(f"k={k_eff!r} is invalid: pass a positive integer")
        store = self.store
        assert store is not None  # set by the validator
        if self.missing_ok and not store.has_namespace(self.namespace):
            return []
        if self.cascade_on:
            from langmem_cog.rank.cascade import Cascade

            if self._cascade is None:  # built once: the operator loop's compiled graph is reused
                self._cascade = Cascade(store=store, memory=self.memory, scorer=self.fusion,
                                        compressor=self.compressor, use_graph=self.use_graph)
            docs = self._cascade.rank(self.namespace, query, k=k_eff, now=self.now).documents
        else:
            hits = store.search(self.namespace, query, k=k_eff, mode=self.mode, lexical_weight=self.lexical_weight)
            docs = [scored_turn_to_document(h) for h in hits]
        return trim_to_budget(docs, self.max_tokens if max_tokens is None else max_tokens)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return self._search(query, k, max_tokens)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return await asyncio.to_thread(self._search, query, k, max_tokens)

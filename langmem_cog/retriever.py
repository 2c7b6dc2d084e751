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
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator

from langmem_cog.errors import InvalidInputError
from langmem_cog.records import validate_namespace
from langmem_cog.store import ScoredTurn, SearchMode, TurnStore
from langmem_cog.tokens import count_tokens

__all__ = ["CogMemRetriever", "scored_turn_to_document", "trim_to_budget"]


def scored_turn_to_document(hit: ScoredTurn, stage: str = "raw") -> Document:
    """A search hit as a ``Document``: ``"speaker: text"`` plus full metadata."""
    t = hit.turn
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
            "score": hit.score,
            "dense_score": hit.dense_score,
            "lexical_score": hit.lexical_score,
            "rank": hit.rank,
            "stage": stage,
            **{f"turn_{k}": v for k, v in t.metadata.items()},
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
    """Retrieve cited evidence turns from one namespace of a :class:`TurnStore`.

    Attributes:
        store: The raw-turn store.
        namespace: The namespace searched (one user's or agent's memory).
        k: How many documents to return (overridable per call: ``invoke(q, k=3)``).
        max_tokens: Token budget (cl100k_base) of the returned page contents, or ``None``.
        mode: ``hybrid`` (default), ``dense`` or ``lexical``.
        lexical_weight: Weight of BM25 in fusion; ``None`` uses the store's config.
        missing_ok: Return ``[]`` for a namespace with no turns yet (default) instead of raising
            :class:`~langmem_cog.errors.UnknownNamespaceError`.

    Every returned ``Document`` has ``metadata`` with ``turn_id``, ``speaker``, ``session_id``,
    ``timestamp`` (ISO 8601), ``score``, ``dense_score``, ``lexical_score``, ``rank`` and
    ``stage`` (``"raw"`` for raw-turn evidence).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: TurnStore
    namespace: str
    k: int = Field(default=10, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    mode: SearchMode = "hybrid"
    lexical_weight: float | None = Field(default=None, ge=0.0)
    missing_ok: bool = True

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, v: str) -> str:
        return validate_namespace(v)

    def _search(self, query: str, k: int | None, max_tokens: int | None) -> list[Document]:
        k_eff = self.k if k is None else k
        if isinstance(k_eff, bool) or not isinstance(k_eff, int) or k_eff < 1:
            raise InvalidInputError(f"k={k_eff!r} is invalid: pass a positive integer")
        if self.missing_ok and not self.store.has_namespace(self.namespace):
            return []
        hits = self.store.search(
            self.namespace, query, k=k_eff, mode=self.mode, lexical_weight=self.lexical_weight
        )
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

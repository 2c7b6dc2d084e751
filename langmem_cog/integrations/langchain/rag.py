"""An LCEL RAG chain over a memory retriever, returning the answer with its cited sources.

The chain is plain LCEL: ``RunnableParallel(question, docs) | assign(context) | assign(answer =
prompt | model | StrOutputParser())``, so it streams, batches and traces like any runnable.

Example:
    >>> import uuid
    >>> from datetime import datetime, timezone
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog.integrations.offline import OfflineEvidenceChatModel
    >>> from langmem_cog import CogMemConfig, CogMemRetriever, TurnStore, make_turn
    >>> store = TurnStore(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
    >>> ns = "doc-rag-" + uuid.uuid4().hex[:8]
    >>> _ = store.add_turns([make_turn(id="D1:18", namespace=ns, speaker="Leo", text="I'm allergic to shellfish.",
    ...                                timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc))])
    >>> chain = create_rag_chain(CogMemRetriever(store=store, namespace=ns, k=3), OfflineEvidenceChatModel())
    >>> out = chain.invoke("What is Leo allergic to?")
    >>> out["answer"]
    "From memory: I'm allergic to shellfish. [D1:18 | Leo | 2023-05-08]"
    >>> [d.metadata["turn_id"] for d in out["docs"]]
    ['D1:18']
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnableParallel, RunnablePassthrough

from langmem_cog.integrations.evidence import format_evidence

__all__ = ["RAG_PROMPT", "create_rag_chain", "NO_CONTEXT"]

#: Shown to the model when retrieval finds nothing.
NO_CONTEXT = "(no memories found)"

#: The default prompt: cited evidence in the system message, the question as the user message.
RAG_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer the question from these memories of past conversations. Cite the memories you "
               "use by their [turn id]. If they do not contain the answer, say so.\n\nMemories:\n{context}"),
    ("human", "{question}"),
])


def _context(docs: list[Document]) -> str:
    return format_evidence(docs) or NO_CONTEXT


def create_rag_chain(
    retriever: BaseRetriever,
    model: BaseChatModel | Runnable[Any, Any],
    *,
    prompt: ChatPromptTemplate = RAG_PROMPT,
) -> Runnable[str, dict[str, Any]]:
    """Build ``question -> {"question", "docs", "context", "answer"}``.

    Args:
        retriever: Any retriever returning documents with ``turn_id``, ``speaker`` and ``timestamp``
            metadata (e.g. :class:`~langmem_cog.CogMemRetriever`).
        model: A chat model (or any runnable taking the prompt's messages).
        prompt: A chat prompt with ``{context}`` and ``{question}`` variables.

    Returns:
        The chain; ``docs`` are the retrieved documents (the sources), ``context`` the cited lines
        the model saw, ``answer`` the model's text.
    """
    missing = {"context", "question"} - set(prompt.input_variables)
    if missing:
        from langmem_cog.errors import InvalidInputError

        raise InvalidInputError(f"the RAG prompt lacks the variables {sorted(missing)}: add {{context}} and {{question}}")
    answer = prompt | model | StrOutputParser()
    return (
        RunnableParallel(question=RunnablePassthrough(), docs=retriever)
        .assign(context=RunnableLambda(lambda x: _context(x["docs"])))
        .assign(answer=answer)
        .with_config(run_name="cogmem_rag")
    )

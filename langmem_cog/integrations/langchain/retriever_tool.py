"""A retriever tool (``langchain_core.tools.create_retriever_tool``) that returns cited evidence.

Example:
    >>> import uuid
    >>> from datetime import datetime, timezone
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog import CogMemConfig, CogMemRetriever, TurnStore, make_turn
    >>> store = TurnStore(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
    >>> ns = "doc-rt-" + uuid.uuid4().hex[:8]
    >>> _ = store.add_turns([make_turn(id="D1:18", namespace=ns, speaker="Leo", text="I'm allergic to shellfish.",
    ...                                timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc))])
    >>> tool = create_memory_retriever_tool(CogMemRetriever(store=store, namespace=ns, k=3))
    >>> tool.invoke({"query": "What is Leo allergic to?"})
    "[D1:18 | Leo | 2023-05-08] I'm allergic to shellfish."
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.prompts import StringPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, create_retriever_tool

from langmem_cog.errors import InvalidInputError
from langmem_cog.integrations.evidence import MemoryToolError, evidence_line, tool_error_content

__all__ = ["CitedDocumentPrompt", "create_memory_retriever_tool", "DEFAULT_TOOL_DESCRIPTION"]

#: The tool description the model sees.
DEFAULT_TOOL_DESCRIPTION = (
    "Search long-term memory of past conversations. Input: a natural-language query. "
    "Returns cited turns, one per line: [turn id | speaker | date] text."
)


class CitedDocumentPrompt(StringPromptTemplate):
    """A document prompt for ``create_retriever_tool``: ``[turn_id | speaker | date] text``.

    Example:
        >>> CitedDocumentPrompt().format(page_content="Leo: hi", turn_id="t1", speaker="Leo",
        ...                              timestamp="2023-05-08T13:56:00+00:00")
        '[t1 | Leo | 2023-05-08] hi'
    """

    input_variables: list[str] = ["page_content", "turn_id", "speaker", "timestamp"]

    def format(self, **kwargs: Any) -> str:
        """Format one document's fields (``format_document`` passes page content and metadata)."""
        content = kwargs.pop("page_content")
        return evidence_line(Document(page_content=content, metadata=kwargs))

    @property
    def _prompt_type(self) -> str:
        return "langmem-cog-cited-document"


def create_memory_retriever_tool(
    retriever: BaseRetriever,
    name: str = "search_memory",
    description: str = DEFAULT_TOOL_DESCRIPTION,
    *,
    response_format: Literal["content", "content_and_artifact"] = "content",
    handle_tool_errors: bool = True,
) -> BaseTool:
    """``create_retriever_tool`` over a :class:`~langmem_cog.CogMemRetriever`, with cited output.

    Args:
        retriever: A retriever whose documents carry ``turn_id``, ``speaker`` and ``timestamp``
            metadata (``CogMemRetriever`` does).
        name: The tool name.
        description: The tool description.
        response_format: ``"content_and_artifact"`` also returns the documents as the artifact.
        handle_tool_errors: Return a query the retriever rejects (empty, too long) to the model as an
            error ``ToolMessage`` it can correct, as ``create_memory_tools`` does; ``False`` raises a
            :class:`~langmem_cog.integrations.evidence.MemoryToolError` (an ``InvalidInputError``) instead.

    Returns:
        The tool; its output is one ``[turn_id | speaker | date] text`` line per document.
    """
    tool = create_retriever_tool(retriever, name, description, document_prompt=CitedDocumentPrompt(),
                                 document_separator="\n", response_format=response_format)
    run, arun = tool.func, tool.coroutine
    assert run is not None and arun is not None  # create_retriever_tool sets both

    # The same signatures as create_retriever_tool's, so the tool still passes its callbacks on.
    def func(query: str, callbacks: Callbacks = None) -> Any:
        try:
            return run(query, callbacks=callbacks)
        except InvalidInputError as exc:
            raise MemoryToolError(str(exc)) from exc

    async def afunc(query: str, callbacks: Callbacks = None) -> Any:
        try:
            return await arun(query, callbacks=callbacks)
        except InvalidInputError as exc:
            raise MemoryToolError(str(exc)) from exc

    tool.func, tool.coroutine = func, afunc
    tool.handle_tool_error = tool_error_content if handle_tool_errors else False
    return tool

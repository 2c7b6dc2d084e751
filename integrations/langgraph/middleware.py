"""A memory middleware for ``langchain.agents.create_agent``.

:class:`CogMemoryMiddleware` retrieves before every model call (through
:class:`~langmem_cog.CogMemRetriever`: the shipped cascade over the user's namespace by default, with the
last user message as the query) and appends the cited evidence to the system
message; after the agent replies it stores the conversation's new user and assistant turns in the
same namespace (raw store first, then the graph, through :class:`~langmem_cog.memory.CogMemory`).
The namespace is the ``user_id`` of the runtime context (``context_schema=MemoryContext``).

Example:
    >>> import uuid
    >>> from langchain.agents import create_agent
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from integrations.langgraph import MemoryContext
    >>> from integrations.offline import OfflineEvidenceChatModel
    >>> from langmem_cog import CogMemConfig
    >>> from langmem_cog.memory import CogMemory
    >>> mem = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
    >>> agent = create_agent(OfflineEvidenceChatModel(), middleware=[CogMemoryMiddleware(mem)],
    ...                      context_schema=MemoryContext)
    >>> user = MemoryContext(user_id="doc-mw-" + uuid.uuid4().hex[:8])
    >>> _ = agent.invoke({"messages": [("user", "My dog is called Rex.")]}, context=user)
    >>> out = agent.invoke({"messages": [("user", "What is my dog called?")]}, context=user)
    >>> out["messages"][-1].content.startswith("From memory: My dog is called Rex. [")
    True
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime

from integrations.evidence import format_evidence, search_evidence
from integrations.langgraph.tools import (
    context_value,
    create_memory_tools,
    last_user_text,
    message_turn_ids,
    namespace_from_context,
    store_new_turns,
    unstored_turns,
)
from langmem_cog.config import RetrievalMode
from langmem_cog.errors import InvalidInputError
from langmem_cog.records import Turn, validate_namespace

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

__all__ = ["CogMemoryMiddleware", "EVIDENCE_HEADER"]

logger = logging.getLogger(__name__)

#: Heads the evidence appended to the system message.
EVIDENCE_HEADER = (
    "Relevant memories from earlier conversations (cite the ones you use by their [turn id]):"
)


class CogMemoryMiddleware(AgentMiddleware):
    """Retrieve cited evidence before each model call; store the new turns after the agent replies.

    Args:
        memory: The memory (raw store + graph).
        k: Evidence turns per model call.
        namespace: A fixed namespace; ``None`` reads ``runtime.context[context_key]``.
        context_key: The context field naming the user's namespace.
        store_turns: Whether to store the conversation's turns after the agent replies.
        with_tools: Also give the agent the ``search_memory`` and ``remember`` tools.
        conversation_id: The conversation id of stored turns.
        header: The line heading the evidence in the system message.
        mode: The retrieval path (``cascade``, ``hybrid``, ``dense``, ``lexical``); ``None``:
            ``memory.config.retrieval``, the shipped cascade unless configured otherwise.

    Stored turns keep their message ids as turn ids, so a thread replayed from a checkpointer is
    never stored twice; tool messages and assistant messages that only call tools are not stored.
    Evidence from messages already in the conversation is left out of the injected evidence.

    Memory never fails the agent's reply: a message that cannot be stored as is is stored in a
    form that can (NUL characters removed, a text over the turn limit split into turns
    ``<message id>#1``, ``#2``, ..., a speaker name without letters or digits given its code
    points), and an error while retrieving or storing is logged and the agent goes on (without
    evidence, or without remembering that turn). Only a missing namespace in the runtime context
    (a setup error) and LangGraph's control-flow exceptions (``GraphBubbleUp``) propagate.
    """

    def __init__(
        self,
        memory: CogMemory,
        *,
        k: int = 5,
        namespace: str | None = None,
        context_key: str = "user_id",
        store_turns: bool = True,
        with_tools: bool = False,
        conversation_id: str = "chat",
        header: str = EVIDENCE_HEADER,
        mode: RetrievalMode | None = None,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k={k!r} is invalid: pass a positive integer")
        if namespace is not None:
            validate_namespace(namespace)
        self.memory = memory
        self.k = k
        self.namespace = namespace
        self.context_key = context_key
        self.store_turns = store_turns
        self.conversation_id = conversation_id
        self.header = header
        self.mode = mode
        self.tools = (create_memory_tools(memory, namespace=namespace, context_key=context_key, k=k, mode=mode)
                      if with_tools else [])

    # ------------------------------------------------------------------ helpers
    def namespace_of(self, runtime: Runtime[Any] | None) -> str:
        """The namespace of this run (fixed, or from the runtime context)."""
        if self.namespace is not None:
            return self.namespace
        return namespace_from_context(runtime.context if runtime is not None else None, self.context_key)

    def retrieve(self, namespace: str, messages: Sequence[BaseMessage], now: Any = None) -> list[Document]:
        """Evidence for the last user message (its first
        :data:`~integrations.langgraph.tools.MAX_QUERY_CHARS` characters), leaving out turns already
        in ``messages``; relative dates in it resolve against ``now`` (``None``: the current time)."""
        query = last_user_text(messages)
        if query is None:
            return []
        present = {str(m.id) for m in messages if m.id} | {i for m in messages for i in message_turn_ids(m)}
        return search_evidence(self.memory, namespace, query, k=self.k, exclude_ids=present, mode=self.mode,
                               now=now)

    def _with_evidence(self, request: ModelRequest) -> ModelRequest:
        namespace = self.namespace_of(request.runtime)
        ctx = request.runtime.context if request.runtime is not None else None
        try:
            docs = self.retrieve(namespace, request.messages, now=context_value(ctx, "now") if ctx is not None else None)
        except GraphBubbleUp:
            raise
        except Exception:
            logger.exception("retrieval for namespace %r failed; calling the model without evidence", namespace)
            return request
        if not docs:
            return request
        logger.debug("injecting %d evidence turns: %s", len(docs), [d.metadata["turn_id"] for d in docs])
        block = f"{self.header}\n{format_evidence(docs)}"
        base = request.system_message.text if request.system_message is not None else ""
        content = f"{base}\n\n{block}" if base else block
        return request.override(system_message=SystemMessage(content=content))

    def new_turns(self, messages: Sequence[AnyMessage], runtime: Runtime[Any] | None) -> list[Turn]:
        """The turns of ``messages`` not stored yet (see :func:`~integrations.langgraph.tools.unstored_turns`)."""
        ctx = runtime.context if runtime is not None else None
        user_name = context_value(ctx, "user_name") if ctx is not None else None
        session = context_value(ctx, "session_id") if ctx is not None else None
        return unstored_turns(self.memory, self.namespace_of(runtime), messages, conversation_id=self.conversation_id,
                              session_id=str(session or "0"), user_name=str(user_name) if user_name else None)

    def _store(self, state: AgentState, runtime: Runtime[Any]) -> None:
        if not self.store_turns:
            return
        ctx = runtime.context if runtime is not None else None
        user_name = context_value(ctx, "user_name") if ctx is not None else None
        session = context_value(ctx, "session_id") if ctx is not None else None
        store_new_turns(self.memory, self.namespace_of(runtime), state.get("messages") or [],
                        conversation_id=self.conversation_id, session_id=str(session or "0"),
                        user_name=str(user_name) if user_name else None)

    # ------------------------------------------------------------------ hooks
    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Append cited evidence to the system message, then call the model."""
        return handler(self._with_evidence(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async :meth:`wrap_model_call` (retrieval runs in a worker thread)."""
        return await handler(await asyncio.to_thread(self._with_evidence, request))

    def after_agent(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Store the conversation's new turns in the user's namespace (a failure is logged, never raised)."""
        self._store(state, runtime)
        return None

    async def aafter_agent(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        await asyncio.to_thread(self._store, state, runtime)
        return None

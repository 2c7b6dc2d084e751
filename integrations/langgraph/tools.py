"""Memory tools for an agent: ``search_memory`` (cited evidence) and ``remember``.

The namespace searched and written is fixed (``namespace=...``) or read per call from the
agent's runtime context (``context_schema``; by default its ``user_id``), so one agent serves
many users without their memories crossing.

Example:
    >>> import uuid
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog import CogMemConfig
    >>> from langmem_cog.memory import CogMemory
    >>> mem = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
    >>> ns = "doc-tools-" + uuid.uuid4().hex[:8]
    >>> search_memory, remember = create_memory_tools(mem, namespace=ns)
    >>> remember.invoke({"text": "My sister Ana lives in Porto."}).startswith("Remembered as [mem-")
    True
    >>> out = search_memory.invoke({"query": "Where does Ana live?"})
    >>> "| user |" in out and "My sister Ana lives in Porto." in out
    True
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolRuntime

from integrations.evidence import evidence_line, format_evidence, search_evidence
from langmem_cog.config import RetrievalMode
from langmem_cog.errors import InvalidInputError
from langmem_cog.loaders import turns_from_messages
from langmem_cog.records import Turn, make_turn, validate_namespace

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

__all__ = [
    "MemoryContext",
    "NO_EVIDENCE",
    "context_value",
    "create_memory_tools",
    "last_user_text",
    "namespace_from_context",
    "remember_text",
    "unstored_turns",
]

#: What ``search_memory`` returns when nothing is found.
NO_EVIDENCE = "No memories found."


@dataclass(frozen=True)
class MemoryContext:
    """A runtime context for agents with memory (``create_agent(..., context_schema=MemoryContext)``).

    Attributes:
        user_id: The user; their memory namespace.
        user_name: The speaker name given to the user's turns (default ``"user"``).
        session_id: The session the new turns belong to.
    """

    user_id: str
    user_name: str | None = None
    session_id: str = "0"


def context_value(context: Any, key: str) -> Any:
    """``context[key]`` of a dict context, ``context.key`` of a dataclass or pydantic one (else ``None``)."""
    if isinstance(context, Mapping):
        return context.get(key)
    return getattr(context, key, None)


def namespace_from_context(context: Any, key: str = "user_id") -> str:
    """The memory namespace named by ``context[key]`` (a dict, dataclass or pydantic context).

    Raises:
        InvalidInputError: If the context has no such value (the message says how to pass it).
        InvalidNamespaceError: If the value is not a valid namespace id.

    Example:
        >>> namespace_from_context(MemoryContext(user_id="alice"))
        'alice'
    """
    value = context_value(context, key) if context is not None else None
    if value is None:
        raise InvalidInputError(
            f"no {key!r} in the runtime context ({type(context).__name__}): invoke the agent with "
            f"context={{'{key}': 'user-42'}} (context_schema=MemoryContext), or give the tools a fixed namespace"
        )
    return validate_namespace(str(value))


def last_user_text(messages: Sequence[BaseMessage]) -> str | None:
    """The text of the last ``HumanMessage`` (``None`` when there is none or it is empty)."""
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            return m.text.strip() or None
    return None


def unstored_turns(
    memory: CogMemory,
    namespace: str,
    messages: Sequence[BaseMessage],
    *,
    conversation_id: str = "chat",
    session_id: str = "0",
    user_name: str | None = None,
) -> list[Turn]:
    """The turns of a conversation's messages that the namespace does not hold yet.

    User messages and assistant replies with text are kept (tool messages and assistant messages
    that only call tools are not); a message's id is its turn id, so replaying a thread stores
    nothing twice. Timestamps are now (UTC), one second apart.
    """
    keep = [m for m in messages if isinstance(m, HumanMessage)
            or (isinstance(m, AIMessage) and not m.tool_calls and m.text.strip())]
    if not keep:
        return []
    stored = {t.id for t in memory.store.get_turns(namespace, [str(m.id) for m in keep if m.id])}
    fresh = [m for m in keep if not m.id or str(m.id) not in stored]
    now = datetime.now(UTC)
    return turns_from_messages(
        fresh, namespace, conversation_id=conversation_id, session_id=session_id, start=now,
        start_position=memory.store.count(namespace),
        id_prefix=f"{conversation_id}:{now.strftime('%Y%m%d%H%M%S%f')}:",
        speaker_names={"human": user_name} if user_name else None,
    )


def remember_text(memory: CogMemory, namespace: str, text: str, *, speaker: str = "user",
                  session_id: str = "remember", now: datetime | None = None) -> Document:
    """Store one free-text memory as a raw turn (id ``mem-<hex>``); returns it as a cited ``Document``."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("remember needs non-empty text: pass what should be remembered")
    ts = now or datetime.now(UTC)
    turn = make_turn(id=f"mem-{uuid.uuid4().hex[:16]}", namespace=namespace, conversation_id="memories",
                     session_id=session_id, speaker=speaker, text=text.strip(), timestamp=ts,
                     position=memory.store.count(namespace))
    memory.add_turns([turn])
    return Document(page_content=turn.memory_text, metadata={
        "turn_id": turn.id, "speaker": turn.speaker, "timestamp": turn.timestamp.isoformat(),
        "session_id": turn.session_id, "namespace": namespace, "stage": "raw",
    })


def create_memory_tools(
    memory: CogMemory,
    *,
    namespace: str | None = None,
    context_key: str = "user_id",
    k: int = 5,
    speaker: str | None = None,
    mode: RetrievalMode | None = None,
) -> list[BaseTool]:
    """``[search_memory, remember]`` over a :class:`~langmem_cog.memory.CogMemory`.

    Args:
        memory: The memory (raw store + graph).
        namespace: A fixed namespace; ``None`` reads ``runtime.context[context_key]`` per call.
        context_key: The context field naming the namespace.
        k: Default number of evidence turns.
        speaker: Speaker name of remembered text (default: the context's ``user_name``, else ``"user"``).
        mode: The retrieval path of ``search_memory`` (``cascade``, ``hybrid``, ``dense``, ``lexical``);
            ``None``: ``memory.config.retrieval``, the shipped cascade unless configured otherwise.

    Returns:
        The two tools. ``search_memory`` returns cited lines ``[turn_id | speaker | date] text`` as
        content and the documents' metadata as the tool message's artifact.
    """
    if namespace is not None:
        validate_namespace(namespace)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k={k!r} is invalid: pass a positive integer")

    def ns_of(runtime: ToolRuntime | None) -> str:
        if namespace is not None:
            return namespace
        return namespace_from_context(runtime.context if runtime is not None else None, context_key)

    @tool("search_memory", response_format="content_and_artifact", parse_docstring=True)
    def search_memory(
        query: str,
        speaker: str | None = None,
        start: str | None = None,
        end: str | None = None,
        k: int | None = None,
        runtime: ToolRuntime[Any, Any] = None,  # type: ignore[assignment]  # injected by the agent
    ) -> tuple[str, list[dict[str, Any]]]:
        """Search long-term memory of past conversations; returns cited turns [turn id | speaker | date] text.

        Args:
            query: What to look for, in natural language.
            speaker: Only turns said by this person.
            start: Only turns on or after this ISO date (e.g. 2023-05-08).
            end: Only turns on or before this ISO date.
            k: How many turns to return.
            runtime: Injected by the agent (not for the model).
        """
        docs = search_evidence(memory, ns_of(runtime), query, k=k or default_k, speaker=speaker,
                               start=start, end=end, mode=mode)
        return (format_evidence(docs) or NO_EVIDENCE), [d.metadata for d in docs]

    @tool("remember", parse_docstring=True)
    def remember(text: str, runtime: ToolRuntime[Any, Any] = None) -> str:  # type: ignore[assignment]
        """Store a fact or preference in long-term memory so it can be recalled in later sessions.

        Args:
            text: The fact to remember, as a full sentence.
            runtime: Injected by the agent (not for the model).
        """
        ctx = runtime.context if runtime is not None else None
        who = speaker or (context_value(ctx, "user_name") if ctx is not None else None) or "user"
        session = str((context_value(ctx, "session_id") if ctx is not None else None) or "remember")
        doc = remember_text(memory, ns_of(runtime), text, speaker=str(who), session_id=session)
        return f"Remembered as {evidence_line(doc)}"

    default_k = k
    return [search_memory, remember]

"""Memory tools for an agent: ``search_memory`` (cited evidence) and ``remember``.

The namespace searched and written is fixed (``namespace=...``) or read per call from the
agent's runtime context (``context_schema``; by default its ``user_id``), so one agent serves
many users without their memories crossing.

Arguments the model gets wrong (an empty query, ``k=0``, a ``start`` that is not a date) come back
to it as an error ``ToolMessage`` it can correct (:class:`MemoryToolError`, a ``ToolException``);
``start`` and ``end`` take ISO dates and relative expressions ("yesterday", "last month", "in May"),
resolved against the context's ``now`` (default: the current time).

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
    >>> search_memory.invoke({"query": "Ana", "start": "someday"}).startswith("Error: 'someday' is not a date")
    True
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolRuntime

from integrations.evidence import (
    MemoryToolError,
    evidence_line,
    format_evidence,
    search_evidence,
    tool_error_content,
)
from langmem_cog.config import RetrievalMode
from langmem_cog.errors import InvalidInputError
from langmem_cog.filters import parse_time
from langmem_cog.loaders import message_turn_id, turns_from_messages
from langmem_cog.records import (
    Turn,
    is_valid_id,
    make_turn,
    split_text,
    storable_speaker,
    storable_text,
    validate_namespace,
)

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

__all__ = [
    "MAX_QUERY_CHARS",
    "MemoryContext",
    "MemoryToolError",
    "NO_EVIDENCE",
    "context_value",
    "create_memory_tools",
    "last_user_text",
    "message_turn_ids",
    "namespace_from_context",
    "remember_text",
    "store_new_turns",
    "unstored_turns",
]

logger = logging.getLogger(__name__)

#: What ``search_memory`` returns when nothing is found.
NO_EVIDENCE = "No memories found."

#: Longest query taken from a user message (characters; the rest of a longer message is not searched).
MAX_QUERY_CHARS = 4_000


@dataclass(frozen=True)
class MemoryContext:
    """A runtime context for agents with memory (``create_agent(..., context_schema=MemoryContext)``).

    Attributes:
        user_id: The user; their memory namespace.
        user_name: The speaker name given to the user's turns (default ``"user"``).
        session_id: The session the new turns belong to.
        now: When the conversation takes place (a datetime or ISO string): relative dates in
            searches ("last month") resolve against it; ``None``: the current time.
    """

    user_id: str
    user_name: str | None = None
    session_id: str = "0"
    now: datetime | str | None = None


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


def last_user_text(messages: Sequence[BaseMessage], max_chars: int | None = MAX_QUERY_CHARS) -> str | None:
    r"""The text of the last ``HumanMessage``, usable as a query (``None`` when there is none or it is empty).

    NUL characters and lone surrogates are removed and the text is cut to ``max_chars`` characters
    (at a space where possible), so a huge or malformed message still gives a query the retriever takes.

    Example:
        >>> last_user_text([HumanMessage("where is\x00 my dog?")])
        'where is my dog?'
        >>> last_user_text([HumanMessage("a b c")], max_chars=3)
        'a b'
    """
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            text = storable_text(m.text).strip()
            if max_chars is not None and len(text) > max_chars:
                head = text[: max_chars + 1]
                cut = head.rfind(" ")
                text = (head[:cut] if cut > 0 else text[:max_chars]).strip()
            return text or None
    return None


def message_turn_ids(message: BaseMessage) -> list[str]:
    """The ids of the turns a message with an id is stored as (``[]`` without an id).

    One turn keeps the message id; a text longer than a turn holds is stored as ``<id>#1``,
    ``<id>#2``, ... (see :func:`~langmem_cog.loaders.turns_from_messages`).
    """
    tid = message_turn_id(message.id)
    if tid is None:
        return []
    n = len(split_text(storable_text(message.text)))
    return [tid] if n <= 1 else [f"{tid}#{j}" for j in range(1, n + 1)]


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
    that only call tools are not); a message's id is its turn id (a message too long for one turn
    is stored as turns ``<id>#1``, ``<id>#2``, ...), so replaying a thread stores nothing twice.
    Timestamps are now (UTC), one second apart. See
    :func:`~langmem_cog.loaders.turns_from_messages` for how unstorable text and speaker names are
    made storable.
    """
    keep = [m for m in messages if isinstance(m, HumanMessage)
            or (isinstance(m, AIMessage) and not m.tool_calls and m.text.strip())]
    if not keep:
        return []
    ids = {m.id: message_turn_id(m.id) for m in keep if m.id}
    probe = [x for tid in ids.values() if tid for x in (tid, f"{tid}#1")]
    stored = {t.id for t in memory.store.get_turns(namespace, probe)} if probe else set()
    fresh = [m for m in keep if not m.id or not ({ids[m.id], f"{ids[m.id]}#1"} & stored)]
    if not fresh:
        return []
    now = datetime.now(UTC)
    return turns_from_messages(
        fresh, namespace, conversation_id=conversation_id, session_id=session_id, start=now,
        start_position=memory.store.count(namespace), id_prefix=f"{conversation_id}:",
        speaker_names={"human": user_name} if user_name else None,
    )


def store_new_turns(
    memory: CogMemory,
    namespace: str,
    messages: Sequence[BaseMessage],
    *,
    conversation_id: str = "chat",
    session_id: str = "0",
    user_name: str | None = None,
) -> list[str]:
    """Store the turns of ``messages`` the namespace does not hold yet; never fails the conversation.

    A failure to remember is logged (with its traceback) and the conversation goes on: when a
    batch cannot be stored, its turns are stored one by one so one bad turn cannot keep the others
    (or the thread's later turns) out. Only LangGraph's control-flow exceptions
    (``langgraph.errors.GraphBubbleUp``: interrupts, ``Command`` hand-offs) propagate.

    Args:
        memory: The memory.
        namespace: The user's namespace.
        messages: The conversation (e.g. the agent state's ``messages``).
        conversation_id: The conversation id of the stored turns.
        session_id: Their session.
        user_name: The speaker name of user turns (default ``"user"``).

    Returns:
        The ids of the turns stored.
    """
    try:
        turns = unstored_turns(memory, namespace, messages, conversation_id=conversation_id,
                               session_id=session_id, user_name=user_name)
    except GraphBubbleUp:
        raise
    except Exception:
        logger.exception("could not read the new turns of namespace %r; nothing was remembered", namespace)
        return []
    if not turns:
        return []
    try:
        ids = memory.add_turns(turns)
    except GraphBubbleUp:
        raise
    except Exception:
        logger.exception("could not store %d new turns in namespace %r; storing them one by one",
                         len(turns), namespace)
    else:
        logger.debug("stored %d new turns in namespace %r", len(ids), namespace)
        return ids
    stored: list[str] = []
    try:  # a failed batch may have reached the raw store before failing (the graph is repaired on next use)
        already = {t.id for t in memory.store.get_turns(namespace, [t.id for t in turns])}
    except GraphBubbleUp:
        raise
    except Exception:
        already = set()
    for turn in turns:
        if turn.id in already:
            continue
        try:
            stored += memory.add_turns([turn])
        except GraphBubbleUp:
            raise
        except Exception:
            logger.exception("could not store turn %r in namespace %r; it is not remembered", turn.id, namespace)
    return stored


def remember_text(memory: CogMemory, namespace: str, text: str, *, speaker: str = "user",
                  session_id: str = "remember", now: datetime | None = None) -> Document:
    """Store one free-text memory as a raw turn (id ``mem-<hex>``); returns it as a cited ``Document``.

    NUL characters and lone surrogates are removed from the text; a speaker name without letters
    or digits gets its code points appended (:func:`~langmem_cog.records.storable_speaker`).

    Raises:
        InvalidInputError: If the text is empty or longer than a turn holds.
    """
    if not isinstance(text, str) or not storable_text(text).strip():
        raise InvalidInputError("remember needs non-empty text: pass what should be remembered")
    ts = now or datetime.now(UTC)
    turn = make_turn(id=f"mem-{uuid.uuid4().hex[:16]}", namespace=namespace, conversation_id="memories",
                     session_id=session_id, speaker=storable_speaker(speaker), text=storable_text(text).strip(),
                     timestamp=ts, position=memory.store.count(namespace))
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
    handle_tool_errors: bool = True,
) -> list[BaseTool]:
    """``[search_memory, remember]`` over a :class:`~langmem_cog.memory.CogMemory`.

    Args:
        memory: The memory (raw store + graph).
        namespace: A fixed namespace; ``None`` reads ``runtime.context[context_key]`` per call.
        context_key: The context field naming the namespace.
        k: Default number of evidence turns.
        speaker: Speaker name of remembered text (default: the context's ``user_name``, else ``"user"``).
        mode: The retrieval path of ``search_memory`` (``cascade``, ``hybrid``, ``dense``, ``lexical``);
            ``None``: ``memory.config.retriever.mode``, the shipped cascade unless configured otherwise.
        handle_tool_errors: Return a bad argument to the model as an error ``ToolMessage``
            (``"Error: ... Correct the arguments and call the tool again."``) instead of raising
            :class:`MemoryToolError`. A missing namespace in the runtime context, or a ``now`` or
            ``session_id`` there that cannot be used, is a setup error and is always raised.

    Returns:
        The two tools. ``search_memory`` returns cited lines ``[turn_id | speaker | date] text`` as
        content and the documents' metadata as the tool message's artifact. ``start`` and ``end``
        take ISO dates or relative expressions, resolved against the context's ``now``.
    """
    if namespace is not None:
        validate_namespace(namespace)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k={k!r} is invalid: pass a positive integer")

    def ns_of(runtime: ToolRuntime | None) -> str:
        if namespace is not None:
            return namespace
        return namespace_from_context(runtime.context if runtime is not None else None, context_key)

    # The runtime context is the developer's, not the model's: a bad value in it is raised (as a
    # missing namespace is), never returned to the model as an argument to correct.
    def now_of(runtime: ToolRuntime | None) -> Any:
        ctx = runtime.context if runtime is not None else None
        now = context_value(ctx, "now") if ctx is not None else None
        if now is not None:
            try:
                ok = isinstance(now, str | datetime) and parse_time(now) is not None
            except InvalidInputError:
                ok = False
            if not ok:
                raise InvalidInputError(f"the runtime context's now={now!r} is not a datetime or an ISO date: "
                                        "fix the context the agent is invoked with (e.g. '2023-05-08T12:00:00+00:00')")
        return now

    def session_of(runtime: ToolRuntime | None) -> str:
        ctx = runtime.context if runtime is not None else None
        session = str((context_value(ctx, "session_id") if ctx is not None else None) or "remember")
        if not is_valid_id(session):
            raise InvalidInputError(f"the runtime context's session_id={session!r} is not a valid id: fix the "
                                    "context the agent is invoked with (1-256 printable characters)")
        return session

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
            start: Only turns on or after this date: ISO (2023-05-08) or relative ("yesterday", "last month", "in May").
            end: Only turns on or before this date: ISO or relative (end="last month" ends with last month).
            k: How many turns to return.
            runtime: Injected by the agent (not for the model).
        """
        ns = ns_of(runtime)
        now = now_of(runtime)
        try:
            docs = search_evidence(memory, ns, query, k=default_k if k is None else k, speaker=speaker,
                                   start=start, end=end, mode=mode, now=now)
        except InvalidInputError as exc:
            raise MemoryToolError(str(exc)) from exc
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
        session = session_of(runtime)
        ns = ns_of(runtime)
        try:
            doc = remember_text(memory, ns, text, speaker=str(who), session_id=session)
        except InvalidInputError as exc:
            raise MemoryToolError(str(exc)) from exc
        return f"Remembered as {evidence_line(doc)}"

    default_k = k
    tools: list[BaseTool] = [search_memory, remember]
    for t in tools:
        t.handle_tool_error = tool_error_content if handle_tool_errors else False
    return tools

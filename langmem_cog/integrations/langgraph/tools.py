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

import hashlib
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolRuntime

from langmem_cog.config import RetrievalMode
from langmem_cog.errors import InvalidInputError
from langmem_cog.integrations.evidence import (
    MemoryToolError,
    evidence_line,
    format_evidence,
    reference_time,
    search_evidence,
    tool_error_content,
)
from langmem_cog.loaders import message_turn_id, turns_from_messages
from langmem_cog.records import (
    NAMESPACE_PATTERN,
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
    "USER_HASH_PREFIX",
    "USER_ID_PREFIX",
    "context_value",
    "create_memory_tools",
    "last_user_text",
    "message_turn_ids",
    "namespace_from_context",
    "now_from_context",
    "remember_text",
    "store_new_turns",
    "unstored_turns",
    "user_id_of",
    "user_namespace",
]

logger = logging.getLogger(__name__)

#: What ``search_memory`` returns when nothing is found.
NO_EVIDENCE = "No memories found."

#: Longest query taken from a user message (characters; the rest of a longer message is not searched).
MAX_QUERY_CHARS = 4_000

#: Starts the namespace of a user id that is not a namespace id itself (see :func:`user_namespace`).
USER_ID_PREFIX = "id:"
#: Starts the namespace of a user id too long to spell out in one (see :func:`user_namespace`).
USER_HASH_PREFIX = "idh:"
# Characters an encoded user id keeps as they are; every other one is written as "_" and the hex
# digits of its UTF-8 bytes, so "_" always starts an escape and the encoding can be read back.
_PLAIN = re.compile(r"[A-Za-z0-9.@-]")
_ESCAPE = re.compile(r"(?:_[0-9a-f]{2})+")

#: A function from a context's user id to its memory namespace.
NamespaceMapper = Callable[[Any], str]


def user_namespace(user_id: Any) -> str:
    """The memory namespace of a user id: any string, int, UUID, e-mail address or Unicode name.

    A user id whose ``str`` is a namespace id (``"alice"``, ``"user-42"``, ``"ana@example.com"``, a
    UUID, ``42``) is its own namespace. Any other id is spelled out after :data:`USER_ID_PREFIX`,
    each character outside ``A-Z a-z 0-9 . @ -`` written as ``_`` and the hex digits of its UTF-8
    bytes (``"auth0|5f7c"`` -> ``"id:auth0_7c5f7c"``), so :func:`user_id_of` reads the id back
    for display; an id whose spelling would pass 128 characters becomes :data:`USER_HASH_PREFIX`
    and 32 hex digits of its SHA-256. An id that is a namespace id but starts with either prefix is
    spelled out too, so distinct ids always get distinct namespaces (the mapping is injective,
    unless SHA-256 collides) and the same id always gets the same one.

    Args:
        user_id: The user id (converted with ``str``).

    Returns:
        A valid namespace id.

    Raises:
        InvalidInputError: If the id is empty.

    Example:
        >>> user_namespace("alice"), user_namespace(42), user_namespace("auth0|5f7c8ec7")
        ('alice', '42', 'id:auth0_7c5f7c8ec7')
        >>> user_namespace("José"), user_id_of(user_namespace("José"))
        ('id:Jos_c3_a9', 'José')
    """
    raw = str(user_id)
    if not raw:
        raise InvalidInputError("the user id is empty: give each user a non-empty id (a string, int or UUID)")
    if NAMESPACE_PATTERN.fullmatch(raw) and not raw.startswith((USER_ID_PREFIX, USER_HASH_PREFIX)):
        return raw
    spelled = USER_ID_PREFIX + "".join(
        ch if _PLAIN.fullmatch(ch) else "".join(f"_{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        for ch in raw
    )
    if NAMESPACE_PATTERN.fullmatch(spelled):
        return spelled
    return USER_HASH_PREFIX + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def user_id_of(namespace: str) -> str | None:
    """The user id whose :func:`user_namespace` is ``namespace`` (``None`` for a hashed one).

    Example:
        >>> user_id_of("id:auth0_7c5f7c8ec7"), user_id_of("alice"), user_id_of("idh:" + "0" * 32)
        ('auth0|5f7c8ec7', 'alice', None)
    """
    if namespace.startswith(USER_HASH_PREFIX):
        return None
    if not namespace.startswith(USER_ID_PREFIX):
        return namespace
    return _ESCAPE.sub(lambda m: bytes.fromhex(m.group(0).replace("_", "")).decode("utf-8", "surrogatepass"),
                       namespace[len(USER_ID_PREFIX):])


@dataclass(frozen=True)
class MemoryContext:
    """A runtime context for agents with memory (``create_agent(..., context_schema=MemoryContext)``).

    Attributes:
        user_id: The user (any string, int or UUID); :func:`user_namespace` maps it to their memory
            namespace.
        user_name: The speaker name given to the user's turns (default ``"user"``).
        session_id: The session the new turns belong to.
        now: When the conversation takes place (a datetime or ISO string; naive means UTC). The
            turns stored in this run are dated from it (one second apart), so relative dates in
            them ("yesterday") and the order of changed opinions follow the conversation's time,
            and relative dates in searches ("last month") resolve against it; ``None``: the
            current time.
    """

    user_id: str | int | uuid.UUID
    user_name: str | None = None
    session_id: str = "0"
    now: datetime | str | None = None


def context_value(context: Any, key: str) -> Any:
    """``context[key]`` of a dict context, ``context.key`` of a dataclass or pydantic one (else ``None``)."""
    if isinstance(context, Mapping):
        return context.get(key)
    return getattr(context, key, None)


def namespace_from_context(context: Any, key: str = "user_id", mapper: NamespaceMapper = user_namespace) -> str:
    """The memory namespace of ``context[key]`` (a dict, dataclass or pydantic context).

    Args:
        context: The runtime context.
        key: The field holding the user id.
        mapper: Maps the value to a namespace id (default :func:`user_namespace`, which takes any
            string, int or UUID). A custom mapper must give distinct users distinct namespaces.

    Raises:
        InvalidInputError: If the context has no such value, or an empty one (the message says how to
            pass it).
        InvalidNamespaceError: If ``mapper`` returns an invalid namespace id.

    Example:
        >>> namespace_from_context(MemoryContext(user_id="alice"))
        'alice'
        >>> namespace_from_context({"user_id": "auth0|5f7c8ec7"})
        'id:auth0_7c5f7c8ec7'
    """
    value = context_value(context, key) if context is not None else None
    if value is None or (isinstance(value, str) and not value):
        raise InvalidInputError(
            f"no {key!r} in the runtime context ({type(context).__name__}): invoke the agent with "
            f"context={{'{key}': 'user-42'}} (context_schema=MemoryContext), or give the tools a fixed namespace"
        )
    return validate_namespace(mapper(value))


def now_from_context(context: Any) -> datetime | None:
    """The context's ``now`` as an aware datetime (naive means UTC), or ``None`` when it has none.

    Raises:
        InvalidInputError: If ``now`` is neither a datetime nor an ISO date or datetime (a setup
            error: the message says how to fix the context).

    Example:
        >>> now_from_context({"now": "2024-03-10T10:00:00Z"}).isoformat()
        '2024-03-10T10:00:00+00:00'
    """
    now = context_value(context, "now") if context is not None else None
    if now is None:
        return None
    try:
        return reference_time(now)
    except InvalidInputError:
        raise InvalidInputError(f"the runtime context's now={now!r} is not a datetime or an ISO date: fix the "
                                "context the agent is invoked with (e.g. '2023-05-08T12:00:00+00:00')") from None


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
    now: datetime | None = None,
) -> list[Turn]:
    """The turns of a conversation's messages that the namespace does not hold yet.

    User messages and assistant replies with text are kept (tool messages and assistant messages
    that only call tools are not); a message's id is its turn id (a message too long for one turn
    is stored as turns ``<id>#1``, ``<id>#2``, ...), so replaying a thread stores nothing twice.
    The first new turn is dated ``now`` (default: the current time, UTC), each later one a second
    after the one before. See
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
    return turns_from_messages(
        fresh, namespace, conversation_id=conversation_id, session_id=session_id, start=now or datetime.now(UTC),
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
    now: datetime | None = None,
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
        now: When the new turns were said: the first is dated ``now``, each later one a second
            after (default: the current time).

    Returns:
        The ids of the turns stored.
    """
    try:
        turns = unstored_turns(memory, namespace, messages, conversation_id=conversation_id,
                               session_id=session_id, user_name=user_name, now=now)
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
    namespace_mapper: NamespaceMapper = user_namespace,
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
        namespace_mapper: Maps the context's user id to a namespace (default :func:`user_namespace`:
            any string, int or UUID); unused with a fixed ``namespace``.

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
        return namespace_from_context(runtime.context if runtime is not None else None, context_key,
                                      namespace_mapper)

    # The runtime context is the developer's, not the model's: a bad value in it is raised (as a
    # missing namespace is), never returned to the model as an argument to correct.
    def now_of(runtime: ToolRuntime | None) -> datetime | None:
        return now_from_context(runtime.context if runtime is not None else None)

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
        now = now_of(runtime)
        try:
            doc = remember_text(memory, ns, text, speaker=str(who), session_id=session, now=now)
        except InvalidInputError as exc:
            raise MemoryToolError(str(exc)) from exc
        return f"Remembered as {evidence_line(doc)}"

    default_k = k
    tools: list[BaseTool] = [search_memory, remember]
    for t in tools:
        t.handle_tool_error = tool_error_content if handle_tool_errors else False
    return tools

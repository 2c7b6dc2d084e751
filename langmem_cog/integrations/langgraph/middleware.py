"""A memory middleware for ``langchain.agents.create_agent``.

:class:`CogMemoryMiddleware` retrieves before every model call (through
:class:`~langmem_cog.CogMemRetriever`: the shipped cascade over the user's namespace by default, with the
last user message as the query) and appends the cited evidence to the system
message; after the agent replies it stores the conversation's new user and assistant turns worth
remembering in the same namespace (raw store first, then the graph, through
:class:`~langmem_cog.memory.CogMemory`): filler ("ok", "Noted.") and user messages that only ask a
question are left out by default (see :meth:`CogMemoryMiddleware.should_store`), and a stored turn's
id is short and stable, ``<thread>:<12 hex digits of its message id>`` (see
:meth:`CogMemoryMiddleware.turn_id`). The namespace is the ``user_id`` of the runtime context
(``context_schema=MemoryContext``).

Example:
    >>> import uuid
    >>> from langchain.agents import create_agent
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog.integrations.langgraph import MemoryContext
    >>> from langmem_cog.integrations.offline import OfflineEvidenceChatModel
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
import hashlib
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime

from langmem_cog.config import RetrievalMode
from langmem_cog.errors import InvalidInputError
from langmem_cog.integrations.evidence import format_evidence, search_evidence
from langmem_cog.integrations.langgraph.tools import (
    NamespaceMapper,
    context_value,
    create_memory_tools,
    last_user_text,
    message_turn_ids,
    namespace_from_context,
    now_from_context,
    store_new_turns,
    unstored_turns,
    user_namespace,
)
from langmem_cog.lexical import tokenize
from langmem_cog.loaders import message_turn_id
from langmem_cog.records import Turn, storable_text, validate_namespace

if TYPE_CHECKING:
    from langmem_cog.memory import CogMemory

__all__ = [
    "CogMemoryMiddleware",
    "ECHO_COVERAGE",
    "EVIDENCE_HEADER",
    "ROLES",
    "count_words",
    "is_non_answer",
    "is_pure_question",
    "restates",
    "short_scope",
]

logger = logging.getLogger(__name__)

#: Heads the evidence appended to the system message.
EVIDENCE_HEADER = (
    "Relevant memories from earlier conversations (cite the ones you use by their [turn id]):"
)

#: The roles whose messages the middleware can store (``roles=``): user messages and the
#: assistant's text replies (tool messages and tool-calling assistant messages are never stored).
ROLES = ("user", "assistant")

# A word: a run of letters/digits (an inner apostrophe does not split "I'm"); a CJK ideograph or a
# kana counts as one word, since those scripts write no spaces.
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_]+(?:['\u2019][^\W_]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|\n+|;")
_CLAUSE_END = re.compile(r"[,:\uff0c\uff1a]|\s[-\u2013\u2014]+\s")
_QUESTION_MARKS = ("?", "\uff1f")
# First words of an interrogative clause ("Can you remind me, ...": not a statement).
_INTERROGATIVE = frozenset((
    "what", "what's", "whats", "who", "who's", "whom", "whose", "which", "when", "when's", "where", "where's",
    "why", "why's", "how", "how's", "do", "does", "did", "is", "are", "was", "were", "am", "can", "could",
    "would", "will", "shall", "should", "may", "might", "must", "have", "has", "had", "isn't", "aren't",
    "wasn't", "weren't", "don't", "doesn't", "didn't", "can't", "couldn't", "won't", "wouldn't", "shouldn't",
    "haven't", "hasn't", "hadn't", "any", "anything", "anyone",
))
#: Words a clause needs to count as a statement in :func:`is_pure_question`.
_STATEMENT_WORDS = 3
#: Share of a reply's content words (:func:`~langmem_cog.lexical.tokenize`) that must appear in what
#: memory already holds for the reply to count as a restatement (:func:`restates`).
ECHO_COVERAGE = 0.75
# Cited evidence in a reply: "[turn id | speaker | date]".
_CITATION = re.compile(r"\[(?P<turn_id>[^|\]\[]+?) \| [^|\]]+ \| [^\]]*\]")
# A reply that says memory holds nothing: "I don't have anything in memory about that.", "I couldn't
# find that.", "I'm not sure.", "No memories found."
_NOT_KNOWN = re.compile(
    r"\b(?:(?:do|does|did|can|could)\s*(?:n['\u2019]?t|not)\s+(?:have|find|know|recall|remember|see)"
    r"|(?:am|'m|\u2019m)\s+not\s+sure|no\s+(?:memor(?:y|ies)|record|information|mention)s?"
    r"|nothing\s+(?:in|about|on))\b",
    re.IGNORECASE,
)
#: Longest part of a reply searched for in memory when judging whether it restates memory (characters).
MAX_ECHO_QUERY_CHARS = 2_000
#: A reply of more words than this is never taken for a non-answer (:func:`is_non_answer`).
_NON_ANSWER_MAX_WORDS = 25
# Where a reply's content came from, not content ("from memory", "you told me", "as you mentioned"):
# stems of tokenize(), left out when judging whether a reply restates memory.
_PROVENANCE_WORDS = frozenset({"memori", "rememb", "recal", "told", "mention", "said", "say", "note", "accord",
                               "earlier"})
# Pieces of a reply judged apart by is_non_answer: sentences, and clauses after ", but" / "; ".
_PIECES = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|\n+|;|,?\s+but\s+", re.IGNORECASE)
_SCOPE_OK = re.compile(r"[A-Za-z0-9_.@-]{1,24}")
_SCOPE_UNSAFE = re.compile(r"[^A-Za-z0-9_.@-]+")


def count_words(text: str) -> int:
    """The number of words of ``text`` (each CJK ideograph or kana counts as one).

    Example:
        >>> count_words("I'm vegan, honestly."), count_words("ok"), count_words("我的狗")
        (3, 1, 3)
    """
    return len(_WORD.findall(text))


def _statement(clause: str) -> bool:
    words = _WORD.findall(clause.casefold().replace("\u2019", "'"))
    return len(words) >= _STATEMENT_WORDS and words[0] not in _INTERROGATIVE


def is_pure_question(text: str) -> bool:
    """Whether ``text`` only asks: it ends with ``?`` and holds no statement clause.

    A statement clause is a sentence that is not a question, or a clause before the last one of a
    question (split at ``,`` ``:`` and dashes), with at least three words and not opening with an
    interrogative word ("what", "can", "do", ...). So "My dog is Rex. What's yours?" and "I moved
    to Oslo, any tips?" state something; "Hi, what's my dog called?" does not.

    Example:
        >>> is_pure_question("What is my dog called?"), is_pure_question("Can you remind me, where do I work?")
        (True, True)
        >>> is_pure_question("I moved to Oslo last month, any tips?"), is_pure_question("My dog is Rex.")
        (False, False)
    """
    text = text.strip()
    if not text.endswith(_QUESTION_MARKS):
        return False
    for sentence in (x.strip() for x in _SENTENCE_END.split(text)):
        if not sentence:
            continue
        clauses = _CLAUSE_END.split(sentence)[:-1] if sentence.endswith(_QUESTION_MARKS) else [sentence]
        if any(_statement(c) for c in clauses):
            return False
    return True


def is_non_answer(text: str) -> bool:
    """Whether a reply only says that memory holds nothing about the question.

    A short reply (at most 25 words) that says it does not have, find, know or recall something, is
    not sure, or found no memories, and says nothing else: each of its other sentences or clauses
    has fewer than two content words. Such a reply is not stored: it holds nothing to recall later.

    Example:
        >>> is_non_answer("I don't have anything in memory about that."), is_non_answer("Sorry, I'm not sure.")
        (True, True)
        >>> is_non_answer("Your dog is called Rex."), is_non_answer("I don't know Oslo well, but try the fjords.")
        (False, False)
    """
    if count_words(text) > _NON_ANSWER_MAX_WORDS or _NOT_KNOWN.search(text) is None:
        return False
    return all(_NOT_KNOWN.search(p) or len(tokenize(p)) < 2 for p in _PIECES.split(text) if p.strip())


def restates(text: str, sources: Iterable[str], *, coverage: float = ECHO_COVERAGE) -> bool:
    """Whether ``text`` says nothing beyond ``sources``: at least ``coverage`` of its content words
    (stemmed; stopwords, citations ``[turn id | speaker | date]`` and words of provenance such as
    "memory", "told", "mentioned" left out) appear in them. A text without content words restates
    nothing.

    Example:
        >>> restates("From memory: your dog is called Rex. [t1 | user | 2024-01-02]", ["My dog is called Rex."])
        True
        >>> restates("Rex is a great name; take him to the vet in Oslo.", ["My dog is called Rex."])
        False
    """
    words = [w for w in tokenize(_CITATION.sub(" ", text)) if w not in _PROVENANCE_WORDS]
    if not words:  # no content at all: filler, which the filler rule judges
        return False
    known = {w for s in sources for w in tokenize(s)}
    return sum(w in known for w in words) >= coverage * len(words)


def short_scope(value: str) -> str:
    """A short, turn-id-safe form of a thread or conversation id; distinct ids stay distinct.

    An id of at most 24 characters ``A-Z a-z 0-9 _ . @ -`` is kept; any other becomes its first
    characters made safe, ``~`` and 8 hex digits of its SHA-256 (a kept id never holds ``~``).

    Example:
        >>> short_scope("thread-7"), short_scope("Alice's chat about the move")
        ('thread-7', 'Alice-s-chat~cddf73a7')
    """
    if _SCOPE_OK.fullmatch(value):
        return value
    slug = _SCOPE_UNSAFE.sub("-", value).strip("-")[:12].strip("-") or "t"
    return f"{slug}~{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def _thread_id(runtime: Runtime[Any] | None) -> str | None:
    """The LangGraph thread id of this run (``None`` without a checkpointer thread)."""
    info = getattr(runtime, "execution_info", None) if runtime is not None else None
    tid = getattr(info, "thread_id", None)
    if tid is None:
        try:
            from langgraph.config import get_config

            tid = (get_config().get("configurable") or {}).get("thread_id")
        except RuntimeError:  # outside a runnable context
            tid = None
    return None if tid is None or str(tid) == "" else str(tid)


def _nonnegative(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name}={value!r} is invalid: pass a non-negative integer")
    return value


class CogMemoryMiddleware(AgentMiddleware):
    """Retrieve cited evidence before each model call; store the new turns after the agent replies.

    Args:
        memory: The memory (raw store + graph).
        k: Evidence turns per model call.
        namespace: A fixed namespace; ``None`` reads ``runtime.context[context_key]``.
        context_key: The context field naming the user's namespace.
        store_turns: Whether to store the conversation's turns after the agent replies.
        with_tools: Also give the agent the ``search_memory`` and ``remember`` tools.
        conversation_id: The conversation id of stored turns (and the id scope of a run without a
            checkpointer thread).
        header: The line heading the evidence in the system message.
        mode: The retrieval path (``cascade``, ``hybrid``, ``dense``, ``lexical``); ``None``:
            ``memory.config.retriever.mode``, the shipped cascade unless configured otherwise.
        roles: The roles whose messages are stored, from :data:`ROLES` (``"user"``, ``"assistant"``).
        min_words: With ``min_chars``, the filler threshold: a message with fewer than ``min_words``
            words (:func:`count_words`) *and* fewer than ``min_chars`` characters (after stripping)
            is not stored ("ok", "Noted.", "Thanks!"). ``0`` for either keeps every message.
        min_chars: See ``min_words``.
        skip_questions: Leave out user messages that only ask a question (:func:`is_pure_question`:
            "What is my dog called?", but not "My dog is Rex. What's yours?"); the question is still
            the retrieval query. ``False`` stores them.
        namespace_mapper: Maps the context's user id to a namespace (default
            :func:`~langmem_cog.integrations.langgraph.tools.user_namespace`: any string, int or UUID, e.g.
            ``"auth0|5f7c8ec7"`` -> ``"id:auth0_7c5f7c8ec7"``); unused with a fixed ``namespace``.

    Which messages are stored: user messages and assistant text replies whose role is in ``roles``,
    that are not filler and (for user messages) not a pure question; override
    :meth:`should_store` for another rule. Tool messages and assistant messages that only call
    tools are never stored. With the defaults a one-word message under 12 characters ("ok",
    "Noted.", "Thanks!") is filler, while a short fact such as "I'm 34." or "I'm vegan." is kept.
    Assistant replies are kept because they can hold what a user asks about later (a
    recommendation, a plan), but never a reply that only restates memory (its content words are in
    the turns it cites, the stored turns most like it, or this conversation's other messages:
    :func:`restates`) or says memory holds nothing (:func:`is_non_answer`), and never a user message
    whose content a ``remember`` tool call of the conversation already stored.

    The turns of a run are dated from the context's ``now`` (one second apart) when it has one,
    else from the current time, so a replayed or imported conversation keeps its own time.

    A stored turn's id is ``<thread>:<12 hex digits of the SHA-256 of its message id>`` (see
    :meth:`turn_id`): short to cite, unique across threads, and stable, so a thread replayed or
    retried from a checkpointer is never stored twice (a message stored by an earlier version
    under its raw message id is recognised too). Evidence from messages already in the
    conversation is left out of the injected evidence.

    Memory never fails the agent's reply: a message that cannot be stored as is is stored in a
    form that can (NUL characters removed, a text over the turn limit split into turns
    ``<turn id>#1``, ``#2``, ..., a speaker name without letters or digits given its code
    points), and an error while retrieving or storing is logged and the agent goes on (without
    evidence, or without remembering that turn). Only setup errors in the runtime context (no user
    id, or a ``now`` that is not a time) and LangGraph's control-flow exceptions (``GraphBubbleUp``)
    propagate.

    Raises:
        InvalidInputError: If ``k`` is not a positive integer, ``roles`` names a role outside
            :data:`ROLES`, or ``min_words`` / ``min_chars`` is not a non-negative integer.
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
        roles: Iterable[str] = ROLES,
        min_words: int = 2,
        min_chars: int = 12,
        skip_questions: bool = True,
        namespace_mapper: NamespaceMapper = user_namespace,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k={k!r} is invalid: pass a positive integer")
        if namespace is not None:
            validate_namespace(namespace)
        if isinstance(roles, str):
            roles = (roles,)
        wanted = tuple(dict.fromkeys(roles))
        unknown = [r for r in wanted if r not in ROLES]
        if unknown:
            raise InvalidInputError(f"roles={list(wanted)!r} names unknown roles {unknown}: use {list(ROLES)}")
        self.memory = memory
        self.k = k
        self.namespace = namespace
        self.context_key = context_key
        self.store_turns = store_turns
        self.conversation_id = conversation_id
        self.header = header
        self.mode = mode
        self.roles = frozenset(wanted)
        self.min_words = _nonnegative("min_words", min_words)
        self.min_chars = _nonnegative("min_chars", min_chars)
        self.skip_questions = bool(skip_questions)
        self.namespace_mapper = namespace_mapper
        self.tools = (create_memory_tools(memory, namespace=namespace, context_key=context_key, k=k, mode=mode,
                                          namespace_mapper=namespace_mapper)
                      if with_tools else [])

    # ------------------------------------------------------------------ helpers
    def namespace_of(self, runtime: Runtime[Any] | None) -> str:
        """The namespace of this run (fixed, or from the runtime context)."""
        if self.namespace is not None:
            return self.namespace
        return namespace_from_context(runtime.context if runtime is not None else None, self.context_key,
                                      self.namespace_mapper)

    def scope_of(self, runtime: Runtime[Any] | None) -> str:
        """The first part of this run's turn ids: its thread id, else ``conversation_id``
        (made short and safe by :func:`short_scope`)."""
        return short_scope(_thread_id(runtime) or self.conversation_id)

    def turn_id(self, message: BaseMessage, runtime: Runtime[Any] | None = None, *, scope: str | None = None) -> str:
        """The id of the turn ``message`` is stored as: ``<scope>:<12 hex digits>``.

        The hex digits are the start of the SHA-256 of the message id, so the same message of the
        same thread always gets the same turn id; a message without an id gets a random one.

        Args:
            message: The message.
            runtime: The run (its thread names the scope, see :meth:`scope_of`).
            scope: The scope, if the caller has it (then ``runtime`` is not read).

        Example:
            >>> from langmem_cog import CogMemConfig
            >>> from langmem_cog.memory import CogMemory
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> mw = CogMemoryMiddleware(CogMemory(CogMemConfig.preset("ephemeral"),
            ...                                    embeddings=DeterministicFakeEmbedding(size=8)))
            >>> mw.turn_id(HumanMessage("hi", id="lc_run--01a2b3c4-0"), scope="thread-7")
            'thread-7:5a0b301085b0'
        """
        mid = str(message.id) if message.id else uuid.uuid4().hex
        digest = hashlib.sha256(mid.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return f"{scope or self.scope_of(runtime)}:{digest}"

    def is_filler(self, text: str) -> bool:
        """Whether ``text`` (stripped) is shorter than ``min_words`` words and ``min_chars`` characters."""
        text = text.strip()
        return len(text) < self.min_chars and count_words(text) < self.min_words

    def should_store(self, message: BaseMessage) -> bool:
        """Whether ``message`` is worth remembering (see the class docs); override for another rule."""
        if isinstance(message, HumanMessage):
            role = "user"
        elif isinstance(message, AIMessage) and not message.tool_calls:
            role = "assistant"
        else:
            return False
        if role not in self.roles:
            return False
        text = storable_text(message.text).strip()
        if not text or self.is_filler(text):
            return False
        return not (role == "user" and self.skip_questions and is_pure_question(text))

    def restates_memory(self, reply: AIMessage, namespace: str, messages: Sequence[BaseMessage]) -> bool:
        """Whether an assistant reply only restates memory or says it holds nothing.

        True for a non-answer (:func:`is_non_answer`), and for a reply whose content words are in the
        turns it cites, the stored turns most like it (plain hybrid search) or the conversation's
        other messages (:func:`restates`).
        """
        text = storable_text(reply.text).strip()
        if is_non_answer(text):
            return True
        sources = [storable_text(m.text) for m in messages if m is not reply and not isinstance(m, AIMessage)]
        if restates(text, sources):
            return True
        cited = list(dict.fromkeys(m["turn_id"].strip() for m in _CITATION.finditer(text)))
        if self.memory.store.count(namespace) == 0:
            return False
        sources += [t.text for t in self.memory.store.get_turns(namespace, cited)] if cited else []
        sources += [d.page_content for d in search_evidence(self.memory, namespace, text[:MAX_ECHO_QUERY_CHARS],
                                                            k=5, mode="hybrid")]
        return restates(text, sources)

    def messages_to_store(self, messages: Sequence[BaseMessage], runtime: Runtime[Any] | None) -> list[BaseMessage]:
        """The messages :meth:`should_store` keeps, each a copy whose id is its :meth:`turn_id`, less
        assistant replies that only restate memory (:meth:`restates_memory`), user messages whose
        content a ``remember`` call in ``messages`` stored, and those an earlier version stored
        under their raw message id."""
        scope = self.scope_of(runtime)
        chosen = [m for m in messages if self.should_store(m)]
        if not chosen:
            return []
        namespace = self.namespace_of(runtime)
        # Each message's turn id, and the raw message id an earlier version stored it under: one lookup
        # finds the messages already stored either way (an earlier run of this thread, or that version).
        ids = {id(m): self.turn_id(m, scope=scope) for m in chosen}
        legacy = {id(m): message_turn_id(m.id) for m in chosen}
        probe = [x for tid in (*ids.values(), *legacy.values()) if tid for x in (tid, f"{tid}#1")]
        held = {t.id for t in self.memory.store.get_turns(namespace, probe)}
        remembered = [str(c["args"].get("text", "")) for m in messages if isinstance(m, AIMessage)
                      for c in m.tool_calls if c["name"] == "remember" and isinstance(c.get("args"), dict)]
        keep: list[BaseMessage] = []
        for m in chosen:
            if {x for tid in (ids[id(m)], legacy[id(m)]) if tid for x in (tid, f"{tid}#1")} & held:
                continue  # already stored: nothing to judge
            if isinstance(m, HumanMessage) and remembered and restates(storable_text(m.text), remembered):
                logger.debug("not storing a user message the remember tool stored: %r", m.id)
                continue
            if isinstance(m, AIMessage) and self._restates_memory_logged(m, namespace, messages):
                continue
            keep.append(m)
        return [m.model_copy(update={"id": ids[id(m)]}) for m in keep]

    def _restates_memory_logged(self, reply: AIMessage, namespace: str, messages: Sequence[BaseMessage]) -> bool:
        try:
            echo = self.restates_memory(reply, namespace, messages)
        except GraphBubbleUp:
            raise
        except Exception:
            logger.exception("could not compare a reply with memory in namespace %r; storing it", namespace)
            return False
        if echo:
            logger.debug("not storing a reply that only restates memory: %r", reply.id)
        return echo

    def retrieve(self, namespace: str, messages: Sequence[BaseMessage], now: Any = None, *,
                 runtime: Runtime[Any] | None = None) -> list[Document]:
        """Evidence for the last user message (its first
        :data:`~langmem_cog.integrations.langgraph.tools.MAX_QUERY_CHARS` characters), leaving out turns already
        in ``messages`` (their turn ids in the scope of ``runtime``, and raw message ids); relative
        dates in it resolve against ``now`` (``None``: the current time)."""
        query = last_user_text(messages)
        if query is None:
            return []
        scope = self.scope_of(runtime)
        present = {str(m.id) for m in messages if m.id} | {i for m in messages for i in message_turn_ids(m)}
        present |= {i for m in messages if m.id
                    for i in message_turn_ids(m.model_copy(update={"id": self.turn_id(m, scope=scope)}))}
        return search_evidence(self.memory, namespace, query, k=self.k, exclude_ids=present, mode=self.mode,
                               now=now)

    def _with_evidence(self, request: ModelRequest) -> ModelRequest:
        namespace = self.namespace_of(request.runtime)
        now = now_from_context(request.runtime.context if request.runtime is not None else None)
        try:
            docs = self.retrieve(namespace, request.messages, now=now, runtime=request.runtime)
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
        """The turns of ``messages`` that would be stored now: those of :meth:`messages_to_store` the
        namespace does not hold yet (see :func:`~langmem_cog.integrations.langgraph.tools.unstored_turns`)."""
        ctx = runtime.context if runtime is not None else None
        user_name = context_value(ctx, "user_name") if ctx is not None else None
        session = context_value(ctx, "session_id") if ctx is not None else None
        return unstored_turns(self.memory, self.namespace_of(runtime), self.messages_to_store(messages, runtime),
                              conversation_id=self.conversation_id, session_id=str(session or "0"),
                              user_name=str(user_name) if user_name else None, now=now_from_context(ctx))

    def _store(self, state: AgentState, runtime: Runtime[Any]) -> None:
        if not self.store_turns:
            return
        namespace = self.namespace_of(runtime)
        ctx = runtime.context if runtime is not None else None
        user_name = context_value(ctx, "user_name") if ctx is not None else None
        session = context_value(ctx, "session_id") if ctx is not None else None
        now = now_from_context(ctx)
        try:
            messages = self.messages_to_store(state.get("messages") or [], runtime)
        except GraphBubbleUp:
            raise
        except Exception:
            logger.exception("could not select the new turns of namespace %r; nothing was remembered", namespace)
            return
        store_new_turns(self.memory, namespace, messages, conversation_id=self.conversation_id,
                        session_id=str(session or "0"), user_name=str(user_name) if user_name else None, now=now)

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

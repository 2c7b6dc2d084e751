"""The operator subgraph as a node of a parent agent graph.

:func:`build_memory_agent_graph` compiles a small agent::

    START -> prepare -> recall (the operator loop, a subgraph) -> respond -> remember -> END

``prepare`` takes the query from the last user message and the namespace from the state, a fixed
namespace or the runtime context; ``recall`` *is* the compiled graph of
:func:`langmem_cog.graph.loop.build_operator_graph` (shared keys ``query``, ``namespace``,
``now``, ``evidence``), so it streams and checkpoints as a subgraph; ``respond`` calls the chat model
with the cited evidence (graph evidence first, topped up with hybrid retrieval) in the system
message; ``remember`` stores the new turns.

Stored turns are named as :class:`~langmem_cog.integrations.langgraph.middleware.CogMemoryMiddleware` names
them, ``<thread>:<12 hex digits of the message id>`` (see
:meth:`~langmem_cog.integrations.langgraph.middleware.CogMemoryMiddleware.turn_id`; the scope is the
checkpointer thread, else ``"chat"``), so a thread replayed or invoked again is never stored twice,
and a turn an earlier version stored under its raw message id is recognised. Every user message and
assistant text reply is stored (the graph keeps no filler rule). Without the ``langchain`` package
(``langmem-cog[agents]``), which the middleware needs, turns keep their raw message ids.

Example:
    >>> import uuid
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog.integrations.offline import OfflineEvidenceChatModel
    >>> from langmem_cog import CogMemConfig
    >>> from langmem_cog.memory import CogMemory
    >>> mem = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=DeterministicFakeEmbedding(size=32))
    >>> app = build_memory_agent_graph(mem, OfflineEvidenceChatModel())
    >>> user = {"user_id": "doc-graph-" + uuid.uuid4().hex[:8]}
    >>> _ = app.invoke({"messages": [("user", "I adopted a beagle named Pickle.")]}, context=user)
    >>> out = app.invoke({"messages": [("user", "What is the name of my beagle?")]}, context=user)
    >>> out["messages"][-1].content.startswith("From memory: I adopted a beagle named Pickle. [")
    True
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.loop import build_operator_graph
from langmem_cog.integrations.evidence import format_evidence, search_evidence
from langmem_cog.integrations.langgraph.tools import (
    context_value,
    last_user_text,
    message_turn_ids,
    namespace_from_context,
    now_from_context,
    store_new_turns,
)
from langmem_cog.records import validate_namespace

if TYPE_CHECKING:
    from langmem_cog.integrations.langgraph.middleware import CogMemoryMiddleware
    from langmem_cog.memory import CogMemory

__all__ = ["MemoryAgentState", "build_memory_agent_graph", "DEFAULT_SYSTEM_PROMPT"]

logger = logging.getLogger(__name__)

#: The system prompt of :func:`build_memory_agent_graph` (the evidence is appended to it).
DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory. Answer from the memories below when they are "
    "relevant and cite them by [turn id]; say so when memory holds nothing relevant."
)


class MemoryAgentState(MessagesState, total=False):
    """The parent graph's state: the chat plus the keys shared with the operator subgraph."""

    query: str
    namespace: str
    now: str | None
    evidence: list[dict[str, Any]]


def _turn_namer(memory: CogMemory) -> Callable[[str], CogMemoryMiddleware] | None:
    """Make, per namespace, the middleware that names and selects the turns the graph stores (every
    user message and assistant text reply, less replies that only restate memory or say it holds
    nothing: no filler rule, questions kept); ``None`` without ``langchain``, which the middleware needs."""
    try:
        from langmem_cog.integrations.langgraph.middleware import CogMemoryMiddleware
    except ImportError:
        return None
    return lambda namespace: CogMemoryMiddleware(memory, namespace=namespace, min_words=0, min_chars=0,
                                                 skip_questions=False)


def _conversation_turn_ids(messages: Sequence[BaseMessage], runtime: Runtime[Any],
                           namer: CogMemoryMiddleware | None) -> set[str]:
    """The turn ids the conversation's messages are (or were) stored under: raw message ids and
    their parts, and the ids :meth:`CogMemoryMiddleware.turn_id` gives them in this run's scope."""
    present = {str(m.id) for m in messages if m.id} | {i for m in messages for i in message_turn_ids(m)}
    if namer is not None:
        scope = namer.scope_of(runtime)
        present |= {i for m in messages if m.id
                    for i in message_turn_ids(m.model_copy(update={"id": namer.turn_id(m, scope=scope)}))}
    return present


def build_memory_agent_graph(
    memory: CogMemory,
    model: BaseChatModel,
    *,
    namespace: str | None = None,
    context_key: str = "user_id",
    k: int = 5,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    hybrid_top_up: bool = True,
    store_turns: bool = True,
    checkpointer: Any = None,
    context_schema: type[Any] | None = None,
    **operator_kwargs: Any,
) -> CompiledStateGraph:
    """Compile a chat agent whose recall step is the CogMem operator loop (a subgraph node).

    Args:
        memory: The memory (raw store + graph).
        model: Any LangChain chat model.
        namespace: A fixed namespace; else the state's ``namespace``, else
            ``runtime.context[context_key]``.
        context_key: The context field naming the user's namespace.
        k: Evidence turns given to the model.
        system_prompt: The system prompt (the evidence is appended).
        hybrid_top_up: Fill up to ``k`` evidence turns with hybrid retrieval when the graph
            grounds fewer.
        store_turns: Store the new user and assistant turns after replying, as turns
            ``<thread>:<12 hex digits>`` (see the module docs); a failure is logged, never raised.
        checkpointer: A LangGraph checkpointer for the parent graph.
        context_schema: The runtime context's type (e.g. ``MemoryContext``; a dict works without one).
        **operator_kwargs: Passed to :func:`~langmem_cog.graph.loop.build_operator_graph`.

    Returns:
        The compiled parent graph (state :class:`MemoryAgentState`; invoke with ``messages`` and a
        ``context`` holding ``user_id``).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k={k!r} is invalid: pass a positive integer")
    if namespace is not None:
        validate_namespace(namespace)
    recall = build_operator_graph(memory, name="recall", **operator_kwargs)

    def prepare(state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any]:
        # A user message without text (empty, only an image) is answered without recalled evidence.
        query = last_user_text(state["messages"]) or ""
        ns = namespace or state.get("namespace") or namespace_from_context(runtime.context, context_key)
        return {"query": query, "namespace": validate_namespace(ns), "evidence": []}

    def route(state: MemoryAgentState) -> str:
        return "recall" if state["query"] else "respond"

    namer_for = _turn_namer(memory)
    if namer_for is None and store_turns:
        logger.warning("langchain is not installed: build_memory_agent_graph stores turns under their raw "
                       "message ids; install langmem-cog[agents] for stable <thread>:<hex> turn ids")

    def respond(state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any]:
        present = _conversation_turn_ids(state["messages"], runtime,
                                         namer_for(state["namespace"]) if namer_for else None)
        evidence: list[Any] = [e for e in state.get("evidence") or [] if e["turn_id"] not in present][:k]
        if hybrid_top_up and len(evidence) < k and state["query"]:
            seen = present | {e["turn_id"] for e in evidence}
            evidence += search_evidence(memory, state["namespace"], state["query"], k=k - len(evidence),
                                        exclude_ids=seen, mode="hybrid")
        system = system_prompt
        if evidence:
            system = f"{system_prompt}\n\nMemories (cite by [turn id]):\n{format_evidence(evidence)}"
        reply = model.invoke([SystemMessage(content=system), *state["messages"]])
        return {"messages": [reply]}

    def remember(state: MemoryAgentState, runtime: Runtime[Any]) -> dict[str, Any]:
        ctx = runtime.context
        name = context_value(ctx, "user_name") if ctx is not None else None
        session = context_value(ctx, "session_id") if ctx is not None else None
        ns = state["namespace"]
        messages: Sequence[BaseMessage] = state["messages"]
        namer = namer_for(ns) if namer_for else None
        if namer is not None:
            try:
                messages = namer.messages_to_store(messages, runtime)
            except GraphBubbleUp:
                raise
            except Exception:
                logger.exception("could not select the new turns of namespace %r; nothing was remembered", ns)
                return {}
        store_new_turns(memory, ns, messages, session_id=str(session or "0"), user_name=str(name) if name else None,
                        now=now_from_context(ctx))
        return {}

    builder = StateGraph(MemoryAgentState, context_schema=context_schema)
    builder.add_node("prepare", prepare)
    builder.add_node("recall", recall)
    builder.add_node("respond", respond)
    builder.add_edge(START, "prepare")
    builder.add_conditional_edges("prepare", route, ["recall", "respond"])
    builder.add_edge("recall", "respond")
    if store_turns:
        builder.add_node("remember", remember)
        builder.add_edge("respond", "remember")
        builder.add_edge("remember", END)
    else:
        builder.add_edge("respond", END)
    return builder.compile(checkpointer=checkpointer, name="memory_agent")

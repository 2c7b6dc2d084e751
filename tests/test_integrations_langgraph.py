"""LangGraph integrations run for real: memory tools inside ``create_agent`` with a scripted
tool-calling fake model, the memory middleware, the ``BaseStore`` adapter, and the operator
subgraph inside a parent agent graph."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import unique_namespace
from fakes import FakeEmbeddings, make_turns, scripted
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from langmem_cog import CogMemConfig
from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.resolve import canonical_person_id
from langmem_cog.integrations.evidence import parse_evidence_line
from langmem_cog.integrations.langgraph import (
    CogMemoryMiddleware,
    CogMemStore,
    MemoryContext,
    build_memory_agent_graph,
    create_memory_tools,
)
from langmem_cog.integrations.langgraph.tools import MemoryToolError, store_new_turns
from langmem_cog.integrations.offline import OfflineEvidenceChatModel
from langmem_cog.memory import CogMemory
from langmem_cog.records import MAX_TEXT_CHARS, make_turn

TEXTS = [
    "I adopted a terrier called Pickle last week.",
    "My favourite book is Piranesi by Susanna Clarke.",
    "I am allergic to shellfish, so no crab boil for me.",
    "The weather was grey all day.",
]


def system_text(prompt: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in prompt if isinstance(m, SystemMessage))


@pytest.fixture(scope="module")
def memory() -> CogMemory:
    return CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())


@pytest.fixture
def seeded(memory: CogMemory) -> str:
    ns = unique_namespace("user")
    memory.add_turns(make_turns(ns, TEXTS, speaker="Leo", start=datetime(2023, 5, 8, 12, tzinfo=UTC)))
    return ns


# ---------------------------------------------------------------------------- tools
def test_both_keyword_matches_rank_near_the_top(memory: CogMemory, seeded: str) -> None:
    memory.add_turns(make_turns(seeded, ["Maya loves crab boil parties."], speaker="Maya", id_prefix="m",
                                start=datetime(2023, 9, 1, tzinfo=UTC)))
    search, _ = create_memory_tools(memory, namespace=seeded)
    cited = [parse_evidence_line(x) for x in search.invoke({"query": "crab boil shellfish"}).splitlines()]
    assert {"t2", "m0"} <= {c[0] for c in cited[:3]}  # both crab-boil turns near the top (fake embeddings)


def test_search_memory_cites_turns_and_filters(memory: CogMemory, seeded: str) -> None:
    other = make_turns(seeded, ["Maya loves crab boil parties."], speaker="Maya", id_prefix="m",
                       start=datetime(2023, 9, 1, tzinfo=UTC))
    memory.add_turns(other)
    search, _ = create_memory_tools(memory, namespace=seeded)
    lines = search.invoke({"query": "crab boil shellfish"}).splitlines()
    cited = [parse_evidence_line(x) for x in lines]
    assert all(c is not None for c in cited)
    assert cited[0][0] == "t2"  # the turn that holds every query word first
    only_maya = search.invoke({"query": "crab boil", "speaker": "maya"}).splitlines()
    assert [parse_evidence_line(x)[:3] for x in only_maya] == [("m0", "Maya", "2023-09-01")]
    before = search.invoke({"query": "crab boil", "end": "2023-05-08", "k": 10}).splitlines()
    assert "m0" not in {parse_evidence_line(x)[0] for x in before} and len(before) == len(TEXTS)
    msg = search.invoke({"type": "tool_call", "id": "c1", "name": "search_memory",
                         "args": {"query": "crab", "start": "2023-06-01"}})
    assert isinstance(msg, ToolMessage) and [a["turn_id"] for a in msg.artifact] == ["m0"]
    # A bad argument is returned (to the model) as an error, not raised ...
    swapped = {"query": "crab", "start": "2023-09-02", "end": "2023-09-01"}
    assert search.invoke(swapped).startswith("Error: start='2023-09-02'")
    # ... unless the developer asks for exceptions.
    strict, _ = create_memory_tools(memory, namespace=seeded, handle_tool_errors=False)
    with pytest.raises(MemoryToolError, match="not before") as info:
        strict.invoke(swapped)
    assert isinstance(info.value, InvalidInputError)


def test_remember_then_search_in_a_fresh_namespace(memory: CogMemory) -> None:
    ns = unique_namespace("fresh")
    search, remember = create_memory_tools(memory, namespace=ns, speaker="Ana")
    assert search.invoke({"query": "anything"}) == "No memories found."
    out = remember.invoke({"text": "My sister lives in Porto."})
    tid = parse_evidence_line(out.removeprefix("Remembered as "))[0]
    assert memory.store.get_turns(ns, [tid])[0].speaker == "Ana"
    assert parse_evidence_line(search.invoke({"query": "Where does my sister live?"}))[0] == tid
    assert remember.invoke({"text": "   "}).startswith("Error: remember needs non-empty text")


def test_tools_in_create_agent_use_the_runtime_context_namespace(memory: CogMemory, seeded: str) -> None:
    model = scripted(
        AIMessage(content="", tool_calls=[{"name": "search_memory", "args": {"query": "what is the dog called"},
                                           "id": "call-1"}]),
        AIMessage(content="Your dog is Pickle [t0]."),
        AIMessage(content="", tool_calls=[{"name": "search_memory", "args": {"query": "what is the dog called"},
                                           "id": "call-2"}]),
        AIMessage(content="I don't know."),
    )
    agent = create_agent(model, tools=create_memory_tools(memory), context_schema=MemoryContext)
    out = agent.invoke({"messages": [("user", "What is my dog called?")]}, context=MemoryContext(user_id=seeded))
    tool_msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert parse_evidence_line(tool_msgs[0].text.splitlines()[0])[:2] == ("t0", "Leo")
    assert out["messages"][-1].text == "Your dog is Pickle [t0]."
    # Another user's context searches another namespace: nothing of Leo's leaks.
    stranger = unique_namespace("stranger")
    out = agent.invoke({"messages": [("user", "What is my dog called?")]}, context={"user_id": stranger})
    assert [m.text for m in out["messages"] if isinstance(m, ToolMessage)] == ["No memories found."]


def test_tools_without_namespace_or_context_fail_clearly(memory: CogMemory) -> None:
    search, _ = create_memory_tools(memory)
    with pytest.raises(InvalidInputError, match="user_id"):
        search.invoke({"query": "x"})


def test_a_bad_runtime_context_is_raised_to_the_developer_not_sent_to_the_model(memory: CogMemory, seeded: str) -> None:
    cases = (
        (MemoryContext(user_id=seeded, now="not a date"),
         AIMessage(content="", tool_calls=[{"name": "search_memory", "args": {"query": "dog", "start": "yesterday"},
                                            "id": "c1"}]), "now="),
        (MemoryContext(user_id=seeded, session_id="s\n1"),
         AIMessage(content="", tool_calls=[{"name": "remember", "args": {"text": "I like tea."}, "id": "c2"}]),
         "session_id="),
    )
    for ctx, call, match in cases:
        agent = create_agent(scripted(call, AIMessage(content="done")), tools=create_memory_tools(memory),
                             context_schema=MemoryContext)
        with pytest.raises(InvalidInputError, match=match) as info:
            agent.invoke({"messages": [("user", "hi")]}, context=ctx)
        assert not isinstance(info.value, MemoryToolError) and "context" in str(info.value)
    assert not [t for t in memory.store.get_turns(seeded) if t.text == "I like tea."]


# ---------------------------------------------------------------------------- middleware
def test_middleware_injects_cited_evidence_and_stores_new_turns(memory: CogMemory, seeded: str) -> None:
    model = scripted(AIMessage(content="You are allergic to shellfish [t2]."),
                     AIMessage(content="Your dog is Pickle [t0]."))
    agent = create_agent(model, system_prompt="Be brief.", middleware=[CogMemoryMiddleware(memory, k=3)],
                         context_schema=MemoryContext, checkpointer=InMemorySaver())
    ctx = MemoryContext(user_id=seeded, user_name="Leo", session_id="7")
    thread_id = unique_namespace("thread")
    thread = {"configurable": {"thread_id": thread_id}}
    before = memory.store.count(seeded)
    agent.invoke({"messages": [("user", "What am I allergic to?")]}, config=thread, context=ctx)
    system = system_text(model.prompts[0])
    assert system.startswith("Be brief.")
    cited = [parse_evidence_line(x) for x in system.splitlines() if parse_evidence_line(x)]
    assert len(cited) == 3 and cited[0] == ("t2", "Leo", "2023-05-08", TEXTS[2])
    turns = memory.store.get_turns(seeded)
    assert len(turns) == before + 1  # the user's pure question is not remembered, the answer is
    new = [t for t in turns if t.session_id == "7"]
    assert [(t.speaker, t.text) for t in new] == [("assistant", "You are allergic to shellfish [t2].")]
    reply = agent.get_state(thread).values["messages"][-1]
    assert new[0].id == f"{thread_id}:{hashlib.sha256(reply.id.encode()).hexdigest()[:12]}"
    # Same thread again: the replayed messages are not stored twice, and they are not injected
    # back as evidence (they are already in the conversation).
    agent.invoke({"messages": [("user", "What is my allergy and my dog?")]}, config=thread, context=ctx)
    assert memory.store.count(seeded) == before + 2
    injected = {parse_evidence_line(x)[0] for x in system_text(model.prompts[1]).splitlines() if parse_evidence_line(x)}
    assert injected and not injected & {t.id for t in new}


def test_middleware_keeps_users_apart_and_runs_async(memory: CogMemory, seeded: str) -> None:
    model = scripted(AIMessage(content="Noted."), AIMessage(content="Hm."))
    keep_all = CogMemoryMiddleware(memory, skip_questions=False, min_words=0)  # questions and filler too
    agent = create_agent(model, middleware=[keep_all], context_schema=MemoryContext)
    other = unique_namespace("other")

    async def run() -> None:
        await agent.ainvoke({"messages": [("user", "What am I allergic to?")]}, context=MemoryContext(user_id=other))
        await agent.ainvoke({"messages": [("user", "What am I allergic to?")]}, context=MemoryContext(user_id=seeded))

    asyncio.run(run())
    assert parse_evidence_line(system_text(model.prompts[0]) or "") is None  # nothing stored for `other` yet
    assert "shellfish" not in system_text(model.prompts[0])
    assert "[t2 | Leo | 2023-05-08]" in system_text(model.prompts[1])
    assert memory.store.count(other) == 2


def test_middleware_with_the_offline_stand_in_recalls_across_threads(memory: CogMemory) -> None:
    user = MemoryContext(user_id=unique_namespace("chat"))
    agent = create_agent(OfflineEvidenceChatModel(), middleware=[CogMemoryMiddleware(memory, with_tools=True)],
                         context_schema=MemoryContext, checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", "My bike is a green Bianchi.")]}, context=user,
                 config={"configurable": {"thread_id": "a"}})
    out = agent.invoke({"messages": [("user", "What colour is my bike?")]}, context=user,
                       config={"configurable": {"thread_id": "b"}})
    tool = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert tool and tool[0].name == "search_memory"
    assert out["messages"][-1].text.startswith("From memory: My bike is a green Bianchi. [")


# ---------------------------------------------------------------------------- BaseStore adapter
def test_store_delegates_exact_key_operations(memory: CogMemory) -> None:
    inner = InMemoryStore()
    store = CogMemStore(memory, inner)
    user = ("memories", unique_namespace("s"))
    store.put(user, "a", {"content": "Ana plays the cello", "kind": "fact"})
    store.put(user, "b", {"content": "Ana is allergic to peanuts", "kind": "fact"})
    store.put((*user, "notes"), "c", {"text": "Buy peanuts"}, index=False)
    assert store.get(user, "a").value == inner.get(user, "a").value == {"content": "Ana plays the cello", "kind": "fact"}
    assert store.list_namespaces(prefix=user) == inner.list_namespaces(prefix=user) == [user, (*user, "notes")]
    assert {i.key for i in store.search(user)} == {"a", "b", "c"}  # no query: the inner store's search
    store.delete(user, "a")
    assert store.get(user, "a") is None and inner.get(user, "a") is None


def test_store_search_ranks_with_the_retriever_and_stays_in_step(memory: CogMemory) -> None:
    store = CogMemStore(memory)
    user = ("memories", unique_namespace("s"))
    store.batch([
        PutOp(user, "a", {"content": "Ana plays the cello every Sunday", "kind": "hobby", "n": 1}),
        PutOp(user, "b", {"content": "Ana is allergic to peanuts", "kind": "health", "n": 2}),
        PutOp(user, "c", {"content": "Ana moved to Porto in May", "kind": "place", "n": 3}),
        PutOp((*user, "x"), "d", {"content": "peanuts are cheap at the market"}, index=False),
    ])
    hits = store.search(user[:1], query="peanut allergy", limit=2)
    assert hits[0].key == "b" and hits[0].score is not None and hits[0].value["kind"] == "health"
    assert "d" not in {h.key for h in store.search(user[:1], query="peanuts market", limit=10)}
    assert [h.key for h in store.search(user, query="Ana", filter={"n": {"$gte": 2}}, limit=10)] in (["b", "c"], ["c", "b"])
    page = [h.key for h in store.search(user, query="Ana cello peanuts Porto", limit=10)]
    assert [h.key for h in store.search(user, query="Ana cello peanuts Porto", offset=1, limit=1)] == page[1:2]
    store.put(user, "b", {"content": "Ana no longer eats sugar"})  # update re-indexes
    assert "b" not in {h.key for h in store.search(user, query="peanut allergy", limit=1)}
    assert store.search(user, query="sugar", limit=1)[0].key == "b"
    store.delete(user, "c")  # delete leaves the index
    assert "c" not in {h.key for h in store.search(user, query="Porto", limit=10)}
    ns = ".".join(user)
    assert sorted(t.id for t in memory.store.get_turns(ns)) == ["a", "b"]
    results = asyncio.run(store.abatch([SearchOp(user, query="cello", limit=1), SearchOp(user, limit=5)]))
    assert results[0][0].key == "a" and {i.key for i in results[1]} == {"a", "b", "d"}  # sub-namespaces too


def test_store_serves_store_based_graph_code(memory: CogMemory) -> None:
    store = CogMemStore(memory)
    user = unique_namespace("u")

    def node(state: MessagesState, runtime: Runtime[Any]) -> dict[str, Any]:
        runtime.store.put(("facts", user), "f1", {"content": "The wifi password is on the fridge"})
        runtime.store.put(("facts", user), "f2", {"content": "Grandma's birthday is 4 July"})
        hit = runtime.store.search(("facts", user), query=state["messages"][-1].text, limit=1)[0]
        return {"messages": [AIMessage(content=hit.value["content"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    out = builder.compile(store=store).invoke({"messages": [("user", "when is grandma's birthday")]})
    assert out["messages"][-1].text == "Grandma's birthday is 4 July"


# ---------------------------------------------------------------------------- operator subgraph as a node
def test_operator_subgraph_inside_a_parent_agent_graph(memory: CogMemory, seeded: str) -> None:
    model = scripted(AIMessage(content="Pickle [t0]."))
    app = build_memory_agent_graph(memory, model, k=3, checkpointer=InMemorySaver(), context_schema=MemoryContext)
    config = {"configurable": {"thread_id": unique_namespace("thread")}}
    ctx = MemoryContext(user_id=seeded)
    chunks = list(app.stream({"messages": [("user", "What is the name of the terrier I adopted?")]},
                             config=config, context=ctx, stream_mode="updates", subgraphs=True))
    sub_nodes = {node for ns, update in chunks if ns and ns[0].startswith("recall") for node in update}
    assert {"route", "anchor", "ground", "check"} <= sub_nodes  # the operator loop ran as a subgraph
    state = app.get_state(config).values
    assert state["evidence"] and state["evidence"][0]["turn_id"] == "t0"
    system = system_text(model.prompts[0])
    assert "[t0 | Leo | 2023-05-08] " + TEXTS[0] in system
    assert len([x for x in system.splitlines() if parse_evidence_line(x)]) == 3  # topped up to k
    assert [t.text for t in memory.store.get_turns(seeded)][-2:] == ["What is the name of the terrier I adopted?",
                                                                     "Pickle [t0]."]
    with pytest.raises(InvalidInputError, match="user_id"):
        build_memory_agent_graph(memory, scripted(AIMessage(content="x"))).invoke({"messages": [("user", "hi")]})


def test_the_graph_agent_names_turns_as_the_middleware_does_and_never_stores_them_twice(memory: CogMemory) -> None:
    ns = unique_namespace("graph")
    store_new_turns(memory, ns, [HumanMessage("I keep bees on the roof.", id="old-1")])  # an earlier version's raw id
    model = scripted(AIMessage(content="Rooftop beekeeping suits a city garden."), AIMessage(content="Painted hives look lovely in spring."),
                     AIMessage(content="Your hives are blue."))
    app = build_memory_agent_graph(memory, model, k=3, checkpointer=InMemorySaver(), context_schema=MemoryContext)
    ctx = MemoryContext(user_id=ns)
    thread_id = unique_namespace("thread")
    thread = {"configurable": {"thread_id": thread_id}}

    def tid(message_id: str, scope: str = thread_id) -> str:
        return f"{scope}:{hashlib.sha256(message_id.encode()).hexdigest()[:12]}"

    said = {"messages": [HumanMessage("I keep bees on the roof.", id="old-1"), HumanMessage("My hives are blue.", id="h-1")]}
    app.invoke(said, config=thread, context=ctx)
    app.invoke(said, config=thread, context=ctx)  # the same messages again (replaced in place): only the new reply is new
    replies = [m for m in app.get_state(thread).values["messages"] if isinstance(m, AIMessage)]
    turns = {t.id: t.text for t in memory.store.get_turns(ns)}
    assert turns == {"old-1": "I keep bees on the roof.", tid("h-1"): "My hives are blue.",
                     tid(replies[0].id): "Rooftop beekeeping suits a city garden.", tid(replies[1].id): "Painted hives look lovely in spring."}
    assert all(re.fullmatch(r"[^:]+:[0-9a-f]{12}", i) for i in turns if i != "old-1")
    # The thread's own turns are never shown back to it as memories.
    assert not [x for x in system_text(model.prompts[1]).splitlines() if parse_evidence_line(x)]
    # Another thread recalls them, under the same ids, and its question is stored in its own scope.
    other = unique_namespace("thread")
    out = app.invoke({"messages": [HumanMessage("What colour are my hives?", id="q-1")]},
                     config={"configurable": {"thread_id": other}}, context=ctx)
    assert out["messages"][-1].text == "Your hives are blue."
    cited = {parse_evidence_line(x)[0] for x in system_text(model.prompts[2]).splitlines() if parse_evidence_line(x)}
    assert tid("h-1") in cited
    assert memory.store.get_turns(ns, [tid("q-1", other)])[0].text == "What colour are my hives?"
    assert memory.store.count(ns) == 5  # its answer restates memory and is not stored


def test_the_graph_agent_answers_a_user_message_without_text(memory: CogMemory, seeded: str) -> None:
    image_only = HumanMessage([{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}])
    for message in (HumanMessage("   "), HumanMessage("\x00\x00"), image_only):
        model = scripted(AIMessage(content="What would you like to know?"))
        app = build_memory_agent_graph(memory, model, k=3, store_turns=False)
        out = app.invoke({"messages": [message]}, context={"user_id": seeded})
        assert out["messages"][-1].text == "What would you like to know?"
        assert out["evidence"] == []  # nothing to recall with: no memories given, none made up
        assert not [x for x in system_text(model.prompts[0]).splitlines() if parse_evidence_line(x)]
    model = scripted(AIMessage(content="Hello."))
    out = asyncio.run(build_memory_agent_graph(memory, model, store_turns=False).ainvoke(
        {"messages": [HumanMessage("")]}, context={"user_id": seeded}))
    assert out["messages"][-1].text == "Hello."


def test_the_graph_agent_without_langchain_keeps_raw_message_ids(
    memory: CogMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "langmem_cog.integrations.langgraph.middleware", None)  # as if langchain were missing
    with caplog.at_level(logging.WARNING):
        app = build_memory_agent_graph(memory, scripted(AIMessage(content="Tea, noted.", id="r-1")))
    assert "langchain is not installed" in caplog.text
    ns = unique_namespace("nolc")
    app.invoke({"messages": [HumanMessage("I drink green tea.", id="m-1")]}, context={"user_id": ns})
    assert sorted(t.id for t in memory.store.get_turns(ns)) == ["m-1", "r-1"]


# ---------------------------------------------------------------------------- issue 20: nothing breaks a conversation
class ExplodingEmbeddings(FakeEmbeddings):
    """A fake embedder whose document embedding fails for texts holding a trigger word."""

    def __init__(self, trigger: str, error: BaseException) -> None:
        super().__init__()
        self.trigger, self.error = trigger, error

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if any(self.trigger in t for t in texts):
            raise self.error
        return super().embed_documents(texts)


def tool_messages(out: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def test_bad_tool_arguments_go_back_to_the_model_and_relative_dates_resolve(memory: CogMemory, seeded: str) -> None:
    memory.add_turns(make_turns(seeded, ["Crab boil in the garden on Saturday!"], speaker="Maya", id_prefix="m",
                                start=datetime(2023, 6, 10, tzinfo=UTC)))

    def call(i: int, **args: Any) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": "search_memory", "args": {"query": "crab boil", **args},
                                                  "id": f"call-{i}"}])

    model = scripted(
        call(1, start="whenever suits"), call(2, start="last month"), call(3, k=0),
        AIMessage(content="Nothing from last month."),
        call(4, start="last month", end="last month"), AIMessage(content="No crab boil for you [t2]."),
        call(5, start="in June", end="in June"), AIMessage(content="Maya's party [m0]."),
    )
    agent = create_agent(model, tools=create_memory_tools(memory), context_schema=MemoryContext)
    question = {"messages": [("user", "What did I say about crab boil last month?")]}
    out = agent.invoke(question, context=MemoryContext(user_id=seeded))
    assert out["messages"][-1].text == "Nothing from last month."  # the run survived two bad calls
    bad, good, zero = tool_messages(out)
    assert (bad.status, good.status, zero.status) == ("error", "success", "error")
    assert bad.text.startswith("Error: 'whenever suits' is not a date") and "last month" in bad.text
    assert zero.text.startswith("Error: k=0 is invalid")
    assert isinstance(model.prompts[1][-1], ToolMessage) and model.prompts[1][-1].status == "error"  # the model saw it
    assert good.text == "No memories found."  # "last month" of today: after every stored turn
    # Resolved against the context's now (June 2023), "last month" is May: Maya's June turn is left out.
    out = agent.invoke(question, context=MemoryContext(user_id=seeded, now=datetime(2023, 6, 15, 12, tzinfo=UTC)))
    (may,) = tool_messages(out)
    assert may.artifact[0]["turn_id"] == "t2" and {a["turn_id"] for a in may.artifact} == {"t0", "t1", "t2", "t3"}
    out = agent.invoke({"messages": [("user", "And in June?")]},
                       context={"user_id": seeded, "now": "2023-06-15T12:00:00+00:00"})
    assert [a["turn_id"] for a in tool_messages(out)[0].artifact] == ["m0"]


def test_a_message_that_cannot_be_stored_never_poisons_the_thread(
    memory: CogMemory, caplog: pytest.LogCaptureFixture
) -> None:
    ns = unique_namespace("poison")
    model = scripted(*(AIMessage(content=f"Here is reply number {i}.") for i in range(3)))
    agent = create_agent(model, middleware=[CogMemoryMiddleware(memory)], context_schema=MemoryContext,
                         checkpointer=InMemorySaver())
    ctx = MemoryContext(user_id=ns)
    thread_id = unique_namespace("thread")
    thread = {"configurable": {"thread_id": thread_id}}

    def tid(message_id: str) -> str:
        return f"{thread_id}:{hashlib.sha256(message_id.encode()).hexdigest()[:12]}"

    huge = ("lorem ipsum " * 20_000)[:200_000]
    with caplog.at_level(logging.WARNING):
        out = agent.invoke({"messages": [HumanMessage(huge, id="big-1")]}, config=thread, context=ctx)
    assert out["messages"][-1].text == "Here is reply number 0."
    big = tid("big-1")
    parts = memory.store.get_turns(ns, [f"{big}#1", f"{big}#2", f"{big}#3"])  # cut at spaces: 3 turns
    assert [t.metadata for t in parts] == [{"message_id": big, "part": j, "parts": 3} for j in (1, 2, 3)]
    assert all(len(t.text) <= MAX_TEXT_CHARS for t in parts) and " ".join(t.text for t in parts) == huge.strip()
    assert "stored as 3 turns" in caplog.text
    with caplog.at_level(logging.WARNING):
        out = agent.invoke({"messages": [HumanMessage("My NUL\x00 key is here", id="nul-1")]}, config=thread,
                           context=ctx)
    assert out["messages"][-1].text == "Here is reply number 1."
    assert memory.store.get_turns(ns, [tid("nul-1")])[0].text == "My NUL key is here"
    assert "removed 1 characters" in caplog.text
    # The thread still works, and its replayed messages are not stored twice.
    out = agent.invoke({"messages": [("user", "My cat is called Miso.")]}, config=thread, context=ctx)
    assert out["messages"][-1].text == "Here is reply number 2."
    texts = [t.text for t in memory.store.get_turns(ns)]
    assert len(texts) == 3 + 1 + 1 + 3 and texts.count("My cat is called Miso.") == 1


def test_a_failure_to_remember_never_fails_the_reply(caplog: pytest.LogCaptureFixture) -> None:
    mem = CogMemory(CogMemConfig.preset("ephemeral"),
                    embeddings=ExplodingEmbeddings("EXPLODE", RuntimeError("embedding service down")))
    ns = unique_namespace("down")
    model = scripted(AIMessage(content="Sorry to hear."), AIMessage(content="What a lovely name for a cat!"))
    agent = create_agent(model, middleware=[CogMemoryMiddleware(mem)], context_schema=MemoryContext,
                         checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": unique_namespace("thread")}}
    with caplog.at_level(logging.ERROR):
        out = agent.invoke({"messages": [("user", "EXPLODE: my day was bad")]}, config=thread,
                           context=MemoryContext(user_id=ns))
    assert out["messages"][-1].text == "Sorry to hear."
    assert "could not store" in caplog.text and "embedding service down" in caplog.text
    out = agent.invoke({"messages": [("user", "My cat is called Miso.")]}, config=thread,
                       context=MemoryContext(user_id=ns))
    assert out["messages"][-1].text == "What a lovely name for a cat!"
    # The one turn that cannot be stored keeps out nothing else.
    assert sorted(t.text for t in mem.store.get_turns(ns)) == ["My cat is called Miso.", "Sorry to hear.",
                                                                "What a lovely name for a cat!"]
    # LangGraph's control flow (an interrupt) is never swallowed.
    bubbly = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=ExplodingEmbeddings("PAUSE", GraphInterrupt()))
    with pytest.raises(GraphBubbleUp):
        store_new_turns(bubbly, unique_namespace("bubble"), [HumanMessage("PAUSE here")])


def test_speakers_without_letters_or_digits_keep_the_namespace_writable(tmp_path: Path) -> None:
    cfg = CogMemConfig(data_dir=tmp_path)
    mem = CogMemory(cfg, embeddings=FakeEmbeddings())
    ns = unique_namespace("emoji")
    model = scripted(
        AIMessage(content="", tool_calls=[{"name": "remember", "args": {"text": "I love green tea."}, "id": "r1"}]),
        AIMessage(content="Saved."), AIMessage(content="Salut."), AIMessage(content="Hey."),
    )
    agent = create_agent(model, tools=create_memory_tools(mem), middleware=[CogMemoryMiddleware(mem, min_words=0)],
                         context_schema=MemoryContext)  # min_words=0: the one-word greetings are stored too
    agent.invoke({"messages": [("user", "Remember that I love green tea.")]},
                 context=MemoryContext(user_id=ns, user_name="🙂"))
    agent.invoke({"messages": [HumanMessage("Bonjour", name="!!!")]}, context=MemoryContext(user_id=ns))
    agent.invoke({"messages": [HumanMessage("Hello", name="—")]}, context=MemoryContext(user_id=ns))
    speakers = {t.text: t.speaker for t in mem.store.get_turns(ns)}
    assert speakers["I love green tea."] == "🙂 (U+1F642)"
    assert "Remember that I love green tea." not in speakers  # the remember call stored it: not stored twice
    assert speakers["Bonjour"] == "!!! (U+0021 U+0021 U+0021)" and speakers["Hello"] == "— (U+2014)"
    notes = ("notes", ns)
    store = CogMemStore(mem)
    store.put(notes, "n1", {"content": "Tea at five.", "speaker": "🙂"})  # a store item's speaker too
    store.flush()  # over a persistent memory, the store writes its turns in batches
    assert [t.speaker for t in mem.store.get_turns(".".join(notes))] == ["🙂 (U+1F642)"]
    # A new process opens the namespace, writes to it and builds its graph.
    reopened = CogMemory(cfg, embeddings=FakeEmbeddings())
    assert reopened.add_turns(make_turns(ns, ["Still writable."], id_prefix="after")) == ["after0"]
    G = reopened.graph(ns)
    assert {canonical_person_id(s) for s in speakers.values()} <= set(G.nodes)
    # A speaker the graph cannot key is refused at the door, before anything is stored.
    with pytest.raises(InvalidInputError, match="no letters or digits"):
        make_turn(id="x", namespace=ns, speaker="!!!", text="hi", timestamp=datetime(2024, 1, 1, tzinfo=UTC))

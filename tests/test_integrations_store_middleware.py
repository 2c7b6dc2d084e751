"""Issue 20, items 5 and 7: what ``CogMemStore`` scores, keeps and maps, and what
``CogMemoryMiddleware`` remembers, run for real (compiled ``create_agent`` agents with a scripted
fake chat model and a checkpointer; real memories over the fake embedder)."""

from __future__ import annotations

import hashlib
import logging
import re
import sys
from pathlib import Path

import pytest
from conftest import unique_namespace
from fakes import FakeEmbeddings, cosine
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from test_integrations_langgraph import scripted, system_text

from langmem_cog import CogMemConfig
from langmem_cog.errors import ConfigError, InvalidInputError
from langmem_cog.integrations.evidence import parse_evidence_line
from langmem_cog.integrations.langgraph import CogMemoryMiddleware, CogMemStore, MemoryContext
from langmem_cog.integrations.langgraph.middleware import count_words, is_pure_question, short_scope
from langmem_cog.integrations.langgraph.store import HASHED_PREFIX, INNER_STORE_FILE, default_namespace_mapper
from langmem_cog.integrations.langgraph.tools import store_new_turns
from langmem_cog.memory import CogMemory
from langmem_cog.records import NAMESPACE_PATTERN


@pytest.fixture(scope="module")
def memory() -> CogMemory:
    return CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())


def digest(message_id: str) -> str:
    return hashlib.sha256(message_id.encode()).hexdigest()[:12]


# ---------------------------------------------------------------------------- 5a: bounded scores
CELLO = "Ana plays the cello every Sunday"
OTHERS = [f"unrelated note {i} about gardening compost tomatoes batch{i}" for i in range(20)]


def test_store_scores_are_cosines_independent_of_the_namespace(memory: CogMemory) -> None:
    store = CogMemStore(memory)
    alone, crowded = ("notes", unique_namespace("alone")), ("notes", unique_namespace("crowded"))
    store.put(alone, "cello", {"content": CELLO})
    store.put(crowded, "cello", {"content": CELLO})
    for i, text in enumerate(OTHERS):
        store.put(crowded, f"o{i}", {"content": text})
    query = "Ana plays the cello"
    (one,) = store.search(alone, query=query, limit=5)
    assert one.key == "cello" and one.score > 0.5  # a one-item namespace: not a z-score of 0.0
    many = store.search(crowded, query=query, limit=25)
    assert many[0].key == "cello" and many[0].score == pytest.approx(one.score, abs=1e-6)
    # The score is the cosine of the query and the item's turn ("<speaker>: <text>"), item by item.
    emb = FakeEmbeddings()
    assert one.score == pytest.approx(cosine(emb.embed_query(query), emb.embed_query(f"memory: {CELLO}")), abs=1e-5)
    assert all(-1.0 <= h.score <= 1.0 for h in many) and len(many) == 21
    irrelevant = [h for h in many if h.key != "cello"]
    assert max(h.score for h in irrelevant) < 0.5 < one.score  # one threshold separates them, for any user
    # Across namespaces (one prefix), the scores stay the items' own and the best item comes first.
    merged = store.search(("notes",), query=query, limit=50)
    cellos = [h for h in merged if h.key == "cello"]
    assert len(cellos) >= 2 and merged[0].key == "cello"
    assert {round(h.score, 6) for h in cellos if h.namespace in (alone, crowded)} == {round(one.score, 6)}
    offset = store.search(("notes",), query=query, limit=1, offset=1)
    assert [(h.namespace, h.key) for h in offset] == [(h.namespace, h.key) for h in merged[1:2]]


# ---------------------------------------------------------------------------- 5b: persistence
def test_store_over_a_persistent_memory_keeps_its_items_for_a_new_process(tmp_path: Path) -> None:
    cfg = CogMemConfig(data_dir=tmp_path)
    user = ("memories", unique_namespace("p"))
    first = CogMemStore(CogMemory(cfg, embeddings=FakeEmbeddings()))
    assert first.inner_path == tmp_path / INNER_STORE_FILE and type(first.inner).__name__ == "SqliteStore"
    first.put(user, "m1", {"content": "Ana is allergic to peanuts", "kind": "health"})
    first.put(user, "m2", {"content": "Ana plays the cello"})
    first.delete(user, "m2")
    first.close()
    assert (tmp_path / INNER_STORE_FILE).is_file()
    # A new process: a fresh memory and store over the same directory.
    again = CogMemStore(CogMemory(cfg, embeddings=FakeEmbeddings()))
    assert again.get(user, "m1").value == {"content": "Ana is allergic to peanuts", "kind": "health"}
    assert again.get(user, "m2") is None
    hits = again.search(user[:1], query="Ana allergic peanuts", limit=5)
    assert [h.key for h in hits] == ["m1"] and hits[0].value["kind"] == "health" and hits[0].score > 0.5
    assert again.list_namespaces(prefix=user[:1]) == [user]
    again.close()


def test_store_without_a_persistent_inner_store_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    mem = CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    monkeypatch.setitem(sys.modules, "langgraph.store.sqlite", None)  # the optional package is missing
    with pytest.raises(ConfigError, match="pip install langgraph-checkpoint-sqlite") as info:
        CogMemStore(mem)
    assert "inner=" in str(info.value)
    # An explicit in-memory inner store over a persistent memory is the caller's choice, with a warning.
    with caplog.at_level(logging.WARNING):
        store = CogMemStore(mem, InMemoryStore())
    assert store.inner_path is None and "lost when the process ends" in caplog.text
    # Over an ephemeral memory the default stays an InMemoryStore.
    assert isinstance(CogMemStore(CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())).inner,
                      InMemoryStore)


# ---------------------------------------------------------------------------- 5c: injective mapping
COLLIDING = [
    ("notes", "bob smith"), ("store-f466aefb3aedd9f19cbbf406c016611e",),
    ("a", "b"), ("a.b",), ("a", "", "b"), ("a.", "b"), ("a..b",), ("a", ".b"),
    (), ("",), (".",), ("store-x",), ("store-", "x"), ("store", "x"), ("STORE-x",),
    ("x" * 128,), ("x" * 129,), ("x" * 64, "x" * 63), ("x" * 64, "x" * 64), ("-a",), ("a-",),
    ("memories", "alice"), ("memories", "Alice"), ("memories", "alice", "notes"),
]


def test_namespace_mapper_is_injective_on_known_collisions() -> None:
    ids = [default_namespace_mapper(t) for t in COLLIDING]
    assert len(set(ids)) == len(COLLIDING)
    assert all(NAMESPACE_PATTERN.fullmatch(i) for i in ids)
    # Readable tuples keep their old ids.
    assert default_namespace_mapper(("memories", "alice")) == "memories.alice"
    assert default_namespace_mapper(("notes", "bob smith")) == "store-f466aefb3aedd9f19cbbf406c016611e"


_LABELS = st.text(alphabet="ab.-_:@ sS0f", max_size=6) | st.sampled_from(["store-", "store", "x" * 70])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_LABELS, max_size=4).map(tuple), min_size=1, max_size=8, unique=True))
def test_namespace_mapper_is_injective(tuples: list[tuple[str, ...]]) -> None:
    # Add, for each tuple, the tuple whose readable form is that tuple's id: the dangerous neighbour.
    candidates = set(tuples) | {tuple(default_namespace_mapper(t).split(".")) for t in tuples}
    candidates |= {(default_namespace_mapper(t),) for t in tuples}
    ids = {t: default_namespace_mapper(t) for t in candidates}
    assert len(set(ids.values())) == len(candidates)
    assert all(NAMESPACE_PATTERN.fullmatch(i) for i in ids.values())
    assert all(i.startswith(HASHED_PREFIX) or tuple(i.split(".")) == t for t, i in ids.items())


def test_store_items_of_colliding_namespaces_stay_apart(memory: CogMemory) -> None:
    store = CogMemStore(memory)
    user = unique_namespace("bob")
    spaced, lookalike = ("notes", f"{user} smith"), (default_namespace_mapper(("notes", f"{user} smith")),)
    store.put(spaced, "k", {"content": "Bob Smith likes sailing boats"})
    store.put(lookalike, "k", {"content": "The lookalike likes sailing boats"})
    assert [h.value["content"] for h in store.search(spaced, query="sailing boats")] == ["Bob Smith likes sailing boats"]
    assert [h.value["content"] for h in store.search(lookalike, query="sailing boats")] == [
        "The lookalike likes sailing boats"]
    cogmem = {default_namespace_mapper(spaced), default_namespace_mapper(lookalike)}
    assert len(cogmem) == 2 and [memory.store.count(c) for c in cogmem] == [1, 1]


def test_store_put_is_indexed_whole_or_not_written_at_all(memory: CogMemory) -> None:
    store = CogMemStore(memory)
    ns = ("memories", unique_namespace("alice"))
    cns = default_namespace_mapper(ns)
    store.put(ns, "k1", {"content": "Alice likes green tea"})
    # Text no turn can hold as it is: the NUL is dropped and a huge value is indexed by its head.
    store.put(ns, "k1", {"content": "Alice likes black\x00 coffee"})
    assert store.get(ns, "k1").value == {"content": "Alice likes black\x00 coffee"}  # the value is kept as given
    assert [h.key for h in store.search(ns, query="black coffee")] == ["k1"]
    assert [t.text for t in memory.store.get_turns(cns)] == ["Alice likes black coffee"]
    store.put(ns, "k2", {"content": "Alice rows on Sundays. " + "lorem ipsum " * 13000})
    assert [h.key for h in store.search(ns, query="Who rows on Sundays?", limit=1)] == ["k2"]
    assert store.get(ns, "k2").value["content"].endswith("lorem ipsum ")
    # A put the memory cannot index changes nothing: neither the item nor its index.
    broken = CogMemStore(memory, inner=store.inner, namespace_mapper=lambda n: "not a namespace!")
    with pytest.raises(InvalidInputError):
        broken.put(ns, "k1", {"content": "Alice likes cocoa"})
    assert store.get(ns, "k1").value == {"content": "Alice likes black\x00 coffee"}
    assert [h.key for h in store.search(ns, query="black coffee", limit=1)] == ["k1"]
    # Searches behave as InMemoryStore's: limit 0 finds nothing, a blank query is no query.
    plain = InMemoryStore()
    plain.put(ns, "k1", {"content": "Alice likes tea"})
    for s in (store, plain):
        assert s.search(ns, query="tea", limit=0) == []
        assert {h.key for h in s.search(ns, query="   ")} == ({"k1", "k2"} if s is store else {"k1"})


# ---------------------------------------------------------------------------- 7: what the middleware stores
def test_pure_question_and_filler_rules() -> None:
    assert [is_pure_question(t) for t in (
        "What is my dog called?", "Hi, what's my dog called?", "Can you remind me, where do I work?",
        "Where do I live? And what do I do?", "Is my dog called Rex?", "What’s my dog called, again?",
    )] == [True] * 6
    assert [is_pure_question(t) for t in (
        "My dog is called Rex.", "I adopted a cat too. What should I call her?",
        "I moved to Oslo last month, any tips?", "Since I moved to Oslo, where should I eat?",
        "Is it true? I think so.",
    )] == [False] * 5
    assert [count_words(t) for t in ("ok", "Noted.", "I'm vegan.", "我的狗叫小白")] == [1, 1, 2, 6]
    assert short_scope("thread-7") == "thread-7" and "~" in short_scope("x" * 25)
    assert short_scope("a b") != short_scope("a-b") and short_scope("a~b") != "a~b"


def test_middleware_leaves_filler_and_pure_questions_out_and_cites_readable_ids(memory: CogMemory) -> None:
    ns = unique_namespace("bob")
    model = scripted(
        AIMessage(content="Noted."), AIMessage(content="ok"), AIMessage(content="Your dog is called Rex."),
        AIMessage(content="How about Miso?"), AIMessage(content="He is called Rex."),
    )
    saver = InMemorySaver()
    agent = create_agent(model, middleware=[CogMemoryMiddleware(memory)], context_schema=MemoryContext,
                         checkpointer=saver)
    ctx = MemoryContext(user_id=ns)
    thread_id = unique_namespace("thread")
    thread = {"configurable": {"thread_id": thread_id}}
    for text in ("My dog is called Rex.", "ok", "What is my dog called?",
                 "I adopted a cat too. What should I call her?"):
        agent.invoke({"messages": [("user", text)]}, config=thread, context=ctx)
    stored = sorted(memory.store.get_turns(ns), key=lambda t: t.position)
    assert [(t.speaker, t.text) for t in stored] == [  # the reply that restates memory is not stored
        ("user", "My dog is called Rex."),
        ("user", "I adopted a cat too. What should I call her?"),
        ("assistant", "How about Miso?"),
    ]
    # Readable ids: <thread>:<12 hex digits of the message id>, the message ids of the checkpointed thread.
    messages = agent.get_state(thread).values["messages"]
    by_text = {m.text: m.id for m in messages}
    assert [t.id for t in stored] == [f"{thread_id}:{digest(by_text[t.text])}" for t in stored]
    assert all(re.fullmatch(rf"{re.escape(thread_id)}:[0-9a-f]{{12}}", t.id) for t in stored)
    # In another thread, the question's evidence is the fact, not Bob's earlier question, cited by its short id.
    agent.invoke({"messages": [("user", "What is my dog called?")]},
                 config={"configurable": {"thread_id": unique_namespace("thread")}}, context=ctx)
    cited = [parse_evidence_line(x) for x in system_text(model.prompts[-1]).splitlines() if parse_evidence_line(x)]
    assert cited and not any(c[3].endswith("?") and c[1] == "user" and "dog" in c[3] for c in cited)
    assert ("My dog is called Rex." in {c[3] for c in cited}) and all(c[0].count(":") == 1 for c in cited)
    assert memory.store.count(ns) == 3  # that thread's question is left out too, and its answer restates memory


def test_middleware_options_store_questions_filler_and_chosen_roles(memory: CogMemory) -> None:
    ns = unique_namespace("opts")
    model = scripted(AIMessage(content="Rex, I believe."), AIMessage(content="Saved."))
    mw = CogMemoryMiddleware(memory, skip_questions=False, min_words=0, roles=("user",))
    agent = create_agent(model, middleware=[mw], context_schema=MemoryContext, checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": unique_namespace("thread")}}
    agent.invoke({"messages": [("user", "What is my dog called?")]}, config=thread, context=MemoryContext(user_id=ns))
    agent.invoke({"messages": [("user", "ok")]}, config=thread, context=MemoryContext(user_id=ns))
    assert sorted(t.text for t in memory.store.get_turns(ns)) == ["What is my dog called?", "ok"]  # no assistant turns
    default = CogMemoryMiddleware(memory)  # one word under 12 characters is filler; a short fact is not
    assert [default.is_filler(t) for t in ("ok", "Noted.", "Thanks!", "I'm vegan.", "I'm 34.")] == [True] * 3 + [False] * 2
    with pytest.raises(InvalidInputError, match="unknown roles"):
        CogMemoryMiddleware(memory, roles=("user", "system"))
    with pytest.raises(InvalidInputError, match="min_chars=-1"):
        CogMemoryMiddleware(memory, min_chars=-1)


def test_middleware_turn_ids_are_stable_across_reruns_and_unique_across_threads(memory: CogMemory) -> None:
    ns = unique_namespace("stable")
    saver = InMemorySaver()  # one checkpointer, two agents: the thread outlives the first middleware

    def agent_with(*replies: str):  # noqa: ANN202 - a compiled graph
        return create_agent(scripted(*(AIMessage(content=r) for r in replies)), middleware=[CogMemoryMiddleware(memory)],
                            context_schema=MemoryContext, checkpointer=saver)

    ctx = MemoryContext(user_id=ns)
    t1, t2 = unique_namespace("thread"), unique_namespace("thread")
    fact = HumanMessage("My sister Ana lives in Porto.", id="msg-1")
    agent_with("Good to know about Ana.").invoke({"messages": [fact]}, config={"configurable": {"thread_id": t1}},
                                                 context=ctx)
    first = {t.id for t in memory.store.get_turns(ns)}
    assert len(first) == 2 and f"{t1}:{digest('msg-1')}" in first
    # A rerun of the thread by a new agent (a restart, a retry): the replayed messages are not stored again.
    agent_with("Porto is lovely.").invoke({"messages": [("user", "She moved there in May.")]},
                                          config={"configurable": {"thread_id": t1}}, context=ctx)
    after = [t.id for t in memory.store.get_turns(ns)]
    assert len(after) == 4 and len(set(after)) == 4 and first <= set(after)
    # The same message id in another thread is another turn.
    agent_with("Noted about Porto, thanks.").invoke({"messages": [fact]}, config={"configurable": {"thread_id": t2}},
                                                    context=ctx)
    assert f"{t2}:{digest('msg-1')}" in {t.id for t in memory.store.get_turns(ns)}
    assert memory.store.count(ns) == 6
    # Without a thread, the scope is the conversation id.
    solo = unique_namespace("solo")
    create_agent(scripted(AIMessage(content="That sounds delicious.")), middleware=[CogMemoryMiddleware(memory)],
                 context_schema=MemoryContext).invoke({"messages": [HumanMessage("I baked rye bread today.", id="b-1")]},
                                                      context=MemoryContext(user_id=solo))
    assert f"chat:{digest('b-1')}" in {t.id for t in memory.store.get_turns(solo)}


def test_middleware_recognises_turns_stored_under_raw_message_ids(memory: CogMemory) -> None:
    ns = unique_namespace("legacy")
    old = HumanMessage("My old fact is worth keeping.", id="legacy-1")
    assert store_new_turns(memory, ns, [old]) == ["legacy-1"]  # what the earlier middleware stored
    agent = create_agent(scripted(AIMessage(content="Good to know, thanks for sharing.")), middleware=[CogMemoryMiddleware(memory)],
                         context_schema=MemoryContext, checkpointer=InMemorySaver())
    agent.invoke({"messages": [old]}, config={"configurable": {"thread_id": unique_namespace("thread")}},
                 context=MemoryContext(user_id=ns))
    assert sorted(t.text for t in memory.store.get_turns(ns)) == ["Good to know, thanks for sharing.",
                                                                  "My old fact is worth keeping."]

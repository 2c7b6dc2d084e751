"""An agent app's memory as a user builds it: turns dated by the context's ``now``, what is stored,
and any user id as a namespace (``CogMemoryMiddleware``, the memory tools, ``langmem-cog ingest``)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes import scripted
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from langmem_cog import CogMemConfig, CogMemRetriever  # noqa: E402
from langmem_cog.errors import InvalidInputError  # noqa: E402
from langmem_cog.integrations.langgraph import CogMemoryMiddleware, MemoryContext, create_memory_tools  # noqa: E402
from langmem_cog.integrations.langgraph.tools import user_id_of, user_namespace  # noqa: E402
from langmem_cog.memory import CogMemory  # noqa: E402
from langmem_cog.records import NAMESPACE_PATTERN  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# One chat over five months: (when, what the user says, what the assistant replies).
CHAT = [
    ("2024-01-10T09:00:00+00:00", "Honestly I hate running. It's boring.", "Maybe try cycling instead of running?"),
    ("2024-02-14T18:30:00+00:00", "Yesterday I went to the dentist with my sister Ana.",
     "Good that you keep up with check-ups."),
    ("2024-06-03T07:15:00+00:00", "I love running now! Did 10k this morning.",
     "A 10k is a big step; a rest day tomorrow helps your knees."),
]


def graph_signature(memory: CogMemory, namespace: str) -> list[tuple[Any, ...]]:
    """The namespace's graph in terms of turn texts (turn ids differ between ways of storing)."""
    text = {t.id: t.text for t in memory.store.get_turns(namespace)}
    out = []
    for _, d in memory.graph(namespace).nodes(data=True):
        out.append((d["type"], d.get("text") or d.get("name"), d.get("status"), d.get("start"), d.get("end"),
                    d.get("timestamp"), tuple(sorted(text[p] for p in d.get("provenance", ())))))
    return sorted(out, key=repr)


def test_the_context_now_dates_stored_turns_as_ingest_dates_the_same_chat(tmp_path: Path) -> None:
    # Through the middleware, one run per message, each with its own `now`.
    memory = CogMemory(CogMemConfig(data_dir=tmp_path / "app"))
    agent = create_agent(scripted(*(r for _, _, r in CHAT)), middleware=[CogMemoryMiddleware(memory)],
                         context_schema=MemoryContext, checkpointer=InMemorySaver())
    for when, said, _ in CHAT:
        agent.invoke({"messages": [("user", said)]}, config={"configurable": {"thread_id": "t-1"}},
                     context=MemoryContext(user_id="dana", user_name="Dana", now=when))
    # The same messages with their timestamps, through `langmem-cog ingest`.
    chat = tmp_path / "chat.jsonl"
    lines = [x for when, said, reply in CHAT
             for x in ({"speaker": "Dana", "text": said, "timestamp": when}, {"role": "assistant", "content": reply})]
    chat.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    cli = [sys.executable, "-m", "langmem_cog.cli"]
    proc = subprocess.run([*cli, "ingest", str(chat), "--namespace", "dana", "--data-dir", str(tmp_path / "cli")],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr
    ingested = CogMemory(CogMemConfig(data_dir=tmp_path / "cli"))

    stamps = {t.text: t.timestamp for t in memory.store.get_turns("dana")}
    assert stamps == {t.text: t.timestamp for t in ingested.store.get_turns("dana")}
    start = datetime.fromisoformat(CHAT[0][0])
    assert stamps[CHAT[0][1]] == start and stamps[CHAT[0][2]] == start + timedelta(seconds=1)
    # Resolved dates and claim statuses follow the conversation's time, as ingest's do.
    assert graph_signature(memory, "dana") == graph_signature(ingested, "dana")
    dentist = next(d for _, d in memory.graph("dana").nodes(data=True) if "dentist" in str(d.get("text")))
    assert dentist["start"] == datetime(2024, 2, 13, tzinfo=UTC)
    statuses = {d["text"]: d["status"] for _, d in memory.graph("dana").nodes(data=True) if d["type"] == "Claim"}
    assert statuses["Honestly I hate running."] == "SUPERSEDED" and statuses["I love running now!"] == "CURRENT"


def test_the_remember_tool_dates_its_turn_by_the_context_now() -> None:
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    _, remember = create_memory_tools(memory)
    ns = "u-" + uuid.uuid4().hex[:8]
    call = {"name": "remember", "args": {"text": "My passport expires in May 2030."}, "id": "c1", "type": "tool_call"}
    agent = create_agent(scripted(AIMessage("", tool_calls=[call]), "Done."), tools=[remember],
                         context_schema=MemoryContext)
    agent.invoke({"messages": [("user", "Please note my passport expiry.")]},
                 context=MemoryContext(user_id=ns, now="2024-03-10T10:00:00Z"))
    [turn] = memory.store.get_turns(ns)
    assert turn.timestamp == datetime(2024, 3, 10, 10, tzinfo=UTC)


def test_a_context_now_that_is_not_a_time_is_a_setup_error() -> None:
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    agent = create_agent(scripted("Hi."), middleware=[CogMemoryMiddleware(memory)], context_schema=MemoryContext)
    with pytest.raises(InvalidInputError, match="now='next tuesday' is not a datetime"):
        agent.invoke({"messages": [("user", "I moved to Oslo.")]},
                     context=MemoryContext(user_id="u-now", now="next tuesday"))


def test_echoes_of_memory_and_non_answers_are_not_stored_and_never_outrank_the_user() -> None:
    """Six questions after one fact: only what says something new is stored; the user's fact ranks first."""
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    ns = "alice-" + uuid.uuid4().hex[:8]
    model = scripted(
        "Rex is a lovely name for a terrier.",
        "From memory: My dog is called Rex. [a1:0 | Alice | 2024-01-02]",
        "I don't have anything in memory about that.",
        "Your dog is called Rex, as you told me.",
        "I'm not sure, sorry.",
        "I'd recommend the Oceanarium in Lisbon for a first visit.",
        "You said your dog is called Rex.",
    )
    agent = create_agent(model, middleware=[CogMemoryMiddleware(memory)], context_schema=MemoryContext,
                         checkpointer=InMemorySaver())
    ctx = MemoryContext(user_id=ns, user_name="Alice")
    said = ["My dog is called Rex.", "What is my dog called?", "Where did I grow up?", "What is my dog's name?",
            "What's my sister's job?", "What should I see in Lisbon?", "What is the name of my dog?"]
    for i, text in enumerate(said):
        agent.invoke({"messages": [("user", text)]}, config={"configurable": {"thread_id": f"t{i}"}}, context=ctx)
    stored = {t.text for t in memory.store.get_turns(ns)}
    assert stored == {"My dog is called Rex.", "Rex is a lovely name for a terrier.",
                      "I'd recommend the Oceanarium in Lisbon for a first visit."}
    top = CogMemRetriever(memory=memory, namespace=ns).invoke("What is the name of my dog?")[0]
    assert top.page_content == "Alice: My dog is called Rex."


def test_a_remembered_message_is_stored_once() -> None:
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    ns = "bob-" + uuid.uuid4().hex[:8]
    call = {"name": "remember", "args": {"text": "My passport expires on 3 May 2030."}, "id": "c1",
            "type": "tool_call"}
    model = scripted(AIMessage("", tool_calls=[call]), "Saved for later.")
    agent = create_agent(model, middleware=[CogMemoryMiddleware(memory, with_tools=True)], context_schema=MemoryContext)
    agent.invoke({"messages": [("user", "Remember that my passport expires on 3 May 2030.")]},
                 context=MemoryContext(user_id=ns))
    texts = [t.text for t in memory.store.get_turns(ns)]
    assert sum("passport" in t for t in texts) == 1, texts


@pytest.mark.parametrize("user_id", ["auth0|5f7c8ec7c33c6c004bbafe82", 42, uuid.UUID(int=7), "ana.maria@example.com",
                                     "José Ñúñez", "用户-7", "  padded  ", "id:alice", "x" * 300])
def test_any_user_id_gets_a_stable_valid_namespace_and_an_agent_run(user_id: Any) -> None:
    ns = user_namespace(user_id)
    assert NAMESPACE_PATTERN.fullmatch(ns) and user_namespace(user_id) == ns
    assert user_id_of(ns) in (str(user_id), None)
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    agent = create_agent(scripted("Noted, a lovely city."), middleware=[CogMemoryMiddleware(memory)],
                         context_schema=MemoryContext)
    agent.invoke({"messages": [HumanMessage("I live in Porto.")]}, context=MemoryContext(user_id=user_id))
    assert "I live in Porto." in {t.text for t in memory.store.get_turns(ns)}


def test_a_namespace_id_is_its_own_namespace_and_an_empty_user_id_is_refused() -> None:
    assert [user_namespace(x) for x in ("alice", "user-42", "a@b.c")] == ["alice", "user-42", "a@b.c"]
    with pytest.raises(InvalidInputError, match="user id is empty"):
        user_namespace("")


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1), st.text(min_size=1))
def test_distinct_user_ids_never_share_a_namespace(a: str, b: str) -> None:
    assert NAMESPACE_PATTERN.fullmatch(user_namespace(a))
    assert (user_namespace(a) == user_namespace(b)) == (a == b)
    assert user_id_of(user_namespace(a)) in (a, None)


def test_the_graph_agent_dates_its_turns_by_the_context_now() -> None:
    from langmem_cog.integrations.langgraph import build_memory_agent_graph

    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    app = build_memory_agent_graph(memory, scripted("A fine plan for the spring."), context_schema=MemoryContext)
    ns = "g-" + uuid.uuid4().hex[:8]
    app.invoke({"messages": [HumanMessage("I start a pottery class next week.")]},
               context=MemoryContext(user_id=ns, now="2024-03-10T10:00:00Z"))
    stamps = sorted(t.timestamp for t in memory.store.get_turns(ns))
    assert stamps[0] == datetime(2024, 3, 10, 10, tzinfo=UTC) and len(stamps) == 2

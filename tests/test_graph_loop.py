"""The operator loop as a LangGraph subgraph: alone, inside a parent graph, checkpointed, streamed,
LLM-routed; step budget, claim visibility per intent, intersect for comparisons, time windows;
the ``search --trace`` CLI and the ``graph`` LoCoMo system."""

from __future__ import annotations

import copy
import json
import operator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from conftest import unique_namespace
from fakes import FakeEmbeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from langmem_cog import CogMemConfig, TurnStore, load_locomo
from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.loop import GraphRetrieval, build_operator_graph, graph_search, operator_node
from langmem_cog.graph.operators import in_window
from langmem_cog.graph.router import LLMRouter, Verdict, route
from langmem_cog.memory import CogMemory

SAMPLE = Path(__file__).resolve().parents[1] / "langmem_cog" / "data" / "sample_conversation.json"
NOW = "2023-11-12T18:30:00+00:00"
OPERATORS = {"anchor", "traverse", "intersect", "ground"}


def never(query: str, route: Any, evidence: Any) -> Verdict:
    """A sufficiency check that always asks for more (so the step budget decides)."""
    return Verdict(False, "never enough")


@pytest.fixture(scope="module")
def sample() -> tuple[CogMemory, str]:
    """A CogMemory over the fake embedder holding the bundled sample in a fresh namespace."""
    memory = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())
    ns = unique_namespace("loop")
    turns = [t.model_copy(update={"namespace": ns}) for t in load_locomo(SAMPLE)[0].turns]
    memory.add_turns(turns)
    return memory, ns


@pytest.fixture(scope="module")
def loop(sample: tuple[CogMemory, str]):
    return build_operator_graph(sample[0])


def _types(memory: CogMemory, ns: str, nodes: list) -> set[str]:
    G = memory.graph(ns)
    return {G.nodes[n]["type"] for n, _ in nodes}


def test_runs_alone_and_grounds_raw_turns(sample: tuple[CogMemory, str], loop) -> None:
    memory, ns = sample
    out = loop.invoke({"query": "What is Leo allergic to?", "namespace": ns, "now": NOW})
    assert out["intent"] == "OTHER" and out["done"] is True
    assert [t["operator"] for t in out["trace"]][:2] == ["anchor", "ground"]
    assert out["steps"] == len(out["trace"]) <= 5
    assert [t["step"] for t in out["trace"]] == list(range(1, out["steps"] + 1))
    ev = out["evidence"]
    assert "D1:18" in [e["turn_id"] for e in ev[:3]]  # "I'm allergic to shellfish"
    scores = [(e["score"], e["turn_score"]) for e in ev]
    assert scores == sorted(scores, reverse=True)
    raw = {t.id: t for t in memory.store.get_turns(ns, [e["turn_id"] for e in ev])}
    for e in ev:
        assert {"turn_id", "score", "node", "node_type", "step", "speaker", "timestamp", "text"} <= set(e)
        assert e["text"] == raw[e["turn_id"]].text and e["speaker"] == raw[e["turn_id"]].speaker
    json.dumps(out)  # the state is plain JSON data


def test_rejects_bad_input_and_parameters(sample: tuple[CogMemory, str], loop) -> None:
    memory, ns = sample
    with pytest.raises(InvalidInputError):
        loop.invoke({"query": " ", "namespace": ns})
    with pytest.raises(InvalidInputError):
        loop.invoke({"query": "hello", "namespace": ns, "now": "yesterday-ish"})
    with pytest.raises(InvalidInputError):
        build_operator_graph(memory, max_steps=1)
    # an unknown namespace has an empty graph: the loop ends with no evidence
    out = loop.invoke({"query": "What is Leo allergic to?", "namespace": unique_namespace("none")})
    assert out["evidence"] == [] and out["done"] and "no entry node" in out["reason"]


def test_inside_a_parent_graph_with_shared_keys(sample: tuple[CogMemory, str], loop) -> None:
    memory, ns = sample

    class Parent(TypedDict, total=False):
        query: str
        namespace: str
        evidence: list[dict]
        answer: str

    def answer(state: Parent) -> dict:
        return {"answer": state["evidence"][0]["text"] if state["evidence"] else "I don't know"}

    parent = StateGraph(Parent)
    parent.add_node("recall", loop)
    parent.add_node("answer", answer)
    parent.add_edge(START, "recall")
    parent.add_edge("recall", "answer")
    parent.add_edge("answer", END)
    out = parent.compile().invoke({"query": "What is Leo allergic to?", "namespace": ns})
    assert out["evidence"] and "shellfish" in " ".join(e["text"] for e in out["evidence"][:3]).lower()
    assert out["answer"] == out["evidence"][0]["text"]


def test_inside_a_checkpointed_parent_through_a_key_mapping(sample: tuple[CogMemory, str], loop) -> None:
    memory, ns = sample

    class Chat(TypedDict, total=False):
        question: str
        memories: list[dict]
        log: Annotated[list[str], operator.add]

    parent = StateGraph(Chat)
    parent.add_node("recall", operator_node(loop, namespace=ns, outputs={"evidence": "memories"}))
    parent.add_node("note", lambda s: {"log": [f"{len(s['memories'])} memories"]})
    parent.add_edge(START, "recall")
    parent.add_edge("recall", "note")
    parent.add_edge("note", END)
    app = parent.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": unique_namespace("thread")}}
    first = app.invoke({"question": "What is Leo allergic to?"}, config)
    assert first["memories"] and len(first["log"]) == 1
    second = app.invoke({"question": "When did Maya run her first 10k?"}, config)
    assert len(second["log"]) == 2  # the thread kept its history
    assert second["memories"] != first["memories"]
    assert app.get_state(config).values["memories"] == second["memories"]


def test_own_checkpointer_starts_each_run_afresh(sample: tuple[CogMemory, str]) -> None:
    memory, ns = sample
    app = build_operator_graph(memory, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": unique_namespace("t")}}
    a = app.invoke({"query": "What is Leo allergic to?", "namespace": ns, "now": NOW}, config)
    b = app.invoke({"query": "What does Maya think of her manager Doug?", "namespace": ns, "now": NOW}, config)
    assert b["intent"] == "BELIEF" and b["trace"][0]["step"] == 1
    assert len(b["trace"]) == b["steps"]  # not appended to the first run's trace
    assert app.get_state(config).values["query"] == "What does Maya think of her manager Doug?"
    assert a["evidence"] != b["evidence"]


def test_a_checkpoint_restores_the_datetimes(sample: tuple[CogMemory, str], caplog: pytest.LogCaptureFixture) -> None:
    memory, ns = sample
    app = build_operator_graph(memory, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": unique_namespace("t")}}
    now = datetime(2023, 11, 12, 18, 30, tzinfo=UTC)
    out = app.invoke({"query": "What did Leo do in July 2023?", "namespace": ns, "now": now}, config)
    saved = app.get_state(config).values
    assert saved["now"] == now and list(saved["time_window"]) == list(out["time_window"])
    assert all(isinstance(d, datetime) for d in saved["time_window"])
    assert "unregistered type" not in caplog.text


def test_interrupts_bubble_up_through_the_route_node(sample: tuple[CogMemory, str]) -> None:
    memory, ns = sample

    def asking_router(query: str, now: Any = None):
        intent = interrupt(f"intent of {query!r}?")
        return route(query, now) if intent == "auto" else route(query, now).__class__(intent)

    app = build_operator_graph(memory, router=asking_router, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": unique_namespace("t")}}
    paused = app.invoke({"query": "What is Leo allergic to?", "namespace": ns}, config)
    assert "__interrupt__" in paused and "evidence" not in paused
    done = app.invoke(Command(resume="BELIEF"), config)
    assert done["intent"] == "BELIEF" and done["evidence"]


def test_llm_router_drives_the_loop(sample: tuple[CogMemory, str]) -> None:
    memory, ns = sample
    model = FakeListChatModel(responses=['{"intent": "BELIEF", "time_window_start": null, "time_window_end": null}'])
    app = build_operator_graph(memory, router=LLMRouter(model), sufficiency=never)
    out = app.invoke({"query": "What is Leo allergic to?", "namespace": ns, "now": NOW})
    assert out["intent"] == "BELIEF"  # the rules would say OTHER
    assert "Claim" in _types(memory, ns, out["frontier"])


def test_stream_yields_one_update_per_step(sample: tuple[CogMemory, str]) -> None:
    memory, ns = sample
    app = build_operator_graph(memory, sufficiency=never)
    updates = list(app.stream({"query": "When did Leo adopt his dog?", "namespace": ns, "now": NOW},
                              stream_mode="updates"))
    names = [next(iter(u)) for u in updates]
    assert names[0] == "route" and names[1] == "anchor" and names[-1] == "check"
    ops = [n for n in names if n in OPERATORS]
    final = updates[-2][names[-2]]  # the last operator's update carries the whole trace
    assert ops == [t["operator"] for t in final["trace"]] and len(ops) == final["steps"]
    for name, update in zip(names, updates, strict=True):
        if name in OPERATORS:
            assert update[name]["trace"][-1]["operator"] == name


@pytest.mark.parametrize(("max_steps", "question", "expected"), [
    (2, "What is Leo allergic to?", ["anchor", "ground"]),
    (3, "What is Leo allergic to?", ["anchor", "ground"]),  # traverse + ground would not fit
    (4, "What is Leo allergic to?", ["anchor", "ground", "traverse", "ground"]),
    (3, "What did Leo and Sam both do?", ["anchor", "intersect", "ground"]),
    (2, "What did Leo and Sam both do?", ["anchor", "ground"]),  # intersect + ground would not fit
    (9, "What is Leo allergic to?", ["anchor", "ground", "traverse", "ground", "traverse", "ground"]),
])
def test_max_steps_is_respected(sample: tuple[CogMemory, str], max_steps: int, question: str,
                                expected: list[str]) -> None:
    memory, ns = sample
    out = build_operator_graph(memory, max_steps=max_steps, sufficiency=never).invoke(
        {"query": question, "namespace": ns, "now": NOW})
    assert [t["operator"] for t in out["trace"]] == expected
    assert out["steps"] <= max_steps and out["done"]


def test_claims_only_for_belief(sample: tuple[CogMemory, str]) -> None:
    memory, ns = sample
    app = build_operator_graph(memory, sufficiency=never)
    belief = app.invoke({"query": "What does Maya think of her manager Doug?", "namespace": ns, "now": NOW})
    assert belief["intent"] == "BELIEF"
    assert "Claim" in _types(memory, ns, belief["frontier"])
    assert any(e["node_type"] == "Claim" for e in belief["evidence"])
    other = app.invoke({"query": "What is Maya's manager Doug like at work?", "namespace": ns, "now": NOW})
    assert other["intent"] == "OTHER"
    assert "Claim" not in _types(memory, ns, other["frontier"])
    assert all(e["node_type"] != "Claim" and "Claim" not in e["via_types"] for e in other["evidence"])


def test_compare_uses_intersect(sample: tuple[CogMemory, str], loop) -> None:
    memory, ns = sample
    out = loop.invoke({"query": "What did Leo and Sam both do?", "namespace": ns, "now": NOW})
    assert out["intent"] == "COMPARE" and out["entities"] == ["Leo", "Sam"]
    step = next(t for t in out["trace"] if t["operator"] == "intersect")
    assert step["args"]["entities"] == ["person:leo", "person:sam"] and step["n_results"] >= 1
    assert "D2:7" in [e["turn_id"] for e in out["evidence"][:3]]  # "climbed with Sam at the gym"


def test_temporal_window_filters(sample: tuple[CogMemory, str]) -> None:
    memory, ns = sample
    app = build_operator_graph(memory, sufficiency=never)
    G = memory.graph(ns)
    out = app.invoke({"query": "What did Leo do in July 2023?", "namespace": ns, "now": NOW})
    assert out["intent"] == "TEMPORAL"
    window = route("What did Leo do in July 2023?", None).time_window
    assert out["time_window"] == window == (datetime(2023, 7, 1, tzinfo=UTC), datetime(2023, 8, 1, tzinfo=UTC))
    anchored = next(t for t in out["trace"] if t["operator"] == "anchor")  # the trace stays JSON data
    assert anchored["args"]["time_window"] == ["2023-07-01T00:00:00+00:00", "2023-08-01T00:00:00+00:00"]
    dated = [n for n, _ in out["frontier"] if G.nodes[n]["type"] in ("Event", "Fact", "Claim")]
    assert dated and all(in_window(G, n, window) for n in dated)
    grounded = {e["turn_id"] for e in out["evidence"]}
    assert grounded
    for e in out["evidence"]:  # a dated record inside the window, or a turn said inside it
        if e["node_type"] in ("Event", "Fact", "Claim"):
            assert in_window(G, e["node"], window)
        else:
            assert window[0] <= G.graph["turns"][e["turn_id"]] < window[1]
    assert {"D4:11", "D5:12"} <= grounded  # the Yosemite trip, July 2023
    # without the window the same question reaches turns from other months
    wide = app.invoke({"query": "What did Leo do?", "namespace": ns, "now": NOW})
    assert {e["turn_id"] for e in wide["evidence"]} - grounded


def test_graph_search_and_retrieval(sample: tuple[CogMemory, str]) -> None:
    memory, ns = sample
    hits = graph_search(memory, ns, "What is Leo allergic to?", k=3, now=NOW)
    assert [h["rank"] for h in hits] == [1, 2, 3]
    assert "D1:18" in [h["turn_id"] for h in hits]
    again = graph_search(memory, ns, "What is Leo allergic to?", k=3, now=NOW)
    assert again == hits  # one cached retrieval per memory, deterministic
    with pytest.raises(InvalidInputError):
        GraphRetrieval(memory).search(ns, "x", k=0)


def test_the_loop_result_types_the_final_state(sample: tuple[CogMemory, str]) -> None:
    memory, ns = sample
    retrieval = GraphRetrieval(memory, sufficiency=never)
    q = "What did Leo do in July 2023?"
    state = retrieval.run(ns, q, now=NOW)
    result = retrieval.result(ns, q, now=NOW)
    assert result.intent == state["intent"] == "TEMPORAL" and result.steps == state["steps"]
    assert result.time_window == state["time_window"] and isinstance(result.time_window[0], datetime)
    assert result.turn_ids == [e["turn_id"] for e in state["evidence"]] and result.turn_ids
    first, raw = result.evidence[0], state["evidence"][0]
    assert (first.score, first.node, first.node_type, first.step) == (raw["score"], raw["node"], raw["node_type"], raw["step"])
    assert first.timestamp == datetime.fromisoformat(raw["timestamp"]) and first.via_types == tuple(raw["via_types"])
    assert [t["operator"] for t in result.trace] == [t["operator"] for t in state["trace"]]


# ---------------------------------------------------------------------------- surfaces
@pytest.fixture
def fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every store built from a config gets the fake embedder (no model is loaded)."""
    monkeypatch.setattr("langmem_cog.embeddings.resolve_embedder", lambda *a, **k: FakeEmbeddings())


def test_cli_search_trace(tmp_path: Path, fake_embedder: None, capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_cog.cli import main

    conv = load_locomo(SAMPLE)[0]
    TurnStore(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings()).add_turns(conv.turns)  # raw only
    argv = ["search", "--data-dir", str(tmp_path), "--namespace", conv.sample_id, "-k", "3", "--trace",
            "--now", "2023-11-12", "What is Leo allergic to?"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "intent: OTHER" in out and "step 1  anchor" in out and "step 2  ground" in out
    assert "grounded turns:" in out and "D1:18" in out and "stopped:" in out
    assert main(["search", "--data-dir", str(tmp_path), "--namespace", "nobody", "--trace", "hi"]) == 2
    assert "namespace 'nobody' holds no turns" in capsys.readouterr().err


def test_bench_locomo_graph_system(tmp_path: Path, fake_embedder: None) -> None:
    from langmem_cog.bench.locomo import run_locomo

    rec = json.loads(SAMPLE.read_text())[0]
    other = copy.deepcopy(rec)
    other["sample_id"] = "demo-2"
    data = tmp_path / "two.json"
    data.write_text(json.dumps([rec, other]))
    run = run_locomo(data, system="graph", split="all")
    s = run.summary
    assert s["system"] == "graph" and s["n_rows"] == 28 == len(run.rows)
    assert s["graph"]["questions_run"] == 28 and set(s["graph"]["step_latency_ms"]) >= {"anchor", "ground"}
    assert 0.0 < s["full"]["mrr"] <= 1.0 and set(s["latency_ms"]) == {"p50", "p95"}
    for row in run.rows:
        assert row["rank"] is None or row["ranked_ids"][row["rank"] - 1] in row["gold"]
        assert row["rank"] is not None or row["mrr"] == 0.0
    # the two copies of the conversation get the same answers
    by_q: dict[int, set] = {}
    for row in run.rows:
        by_q.setdefault(row["qa_index"], set()).add(tuple(row["ranked_ids"]))
    assert all(len(v) == 1 for v in by_q.values())
    seeded = run_locomo(data, system="graph", seeds=[7])
    assert seeded.summary["n_rows"] == 14 and seeded.summary["graph"]["questions_run"] == 14


def test_question_names_match_nodes_as_entity_resolution_does() -> None:
    """One fuzzy scorer and threshold (graph.resolve) for ingest and for the names a question mentions."""
    import networkx as nx

    from langmem_cog.graph.loop import _resolve_entities
    from langmem_cog.graph.resolve import FUZZY_THRESHOLD, NAME_SIMILARITY
    from langmem_cog.graph.schema import NodeType

    G = nx.MultiDiGraph()
    G.add_node("person:jonathan", type=NodeType.PERSON, name="Jonathan")
    G.add_node("person:john smith", type=NodeType.PERSON, name="John Smith")
    G.add_node("concept:pottery", type=NodeType.CONCEPT, name="pottery")
    assert NAME_SIMILARITY("jonathon", "jonathan") < FUZZY_THRESHOLD  # 87.5: not the same name
    assert _resolve_entities(G, ["Jonathon"], []) == []
    assert _resolve_entities(G, ["Smith John", "Pottery"], []) == ["person:john smith", "concept:pottery"]
    assert _resolve_entities(G, ["Jonathan"], [("person:john smith", 1.0)]) == ["person:jonathan", "person:john smith"]

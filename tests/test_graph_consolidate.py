"""Consolidation of repeated events into Facts."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import networkx as nx
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from langmem_cog.errors import ExtractionError, InvalidInputError
from langmem_cog.graph.consolidate import (
    LLMFactWriter,
    consolidate,
    consolidated_fact_id,
    describe_habit,
)
from langmem_cog.graph.schema import ExtractedEvent, Extraction
from langmem_cog.graph.store import GraphMemory, graphs_equal

NS = "consolidate-test"
FID = consolidated_fact_id("person:leo", "concept:climbing")


def at(day: int) -> datetime:
    return datetime(2023, 3, 1, 18, tzinfo=UTC) + timedelta(days=day - 1)


def climbs(days: Sequence[int], prefix: str = "t") -> list[Extraction]:
    out = []
    for i, day in enumerate(days):
        tid = f"{prefix}{i}"
        ev = ExtractedEvent(
            text=f"went climbing ({day})",
            participants=("Leo",),
            source_turn_id=tid,
            start=at(day),
            concepts=("climbing",),
            verb="go",
        )
        out.append(Extraction(turn_id=tid, speaker="Leo", timestamp=at(day) + timedelta(hours=2), events=[ev]))
    return out


def graph_of(days: Sequence[int], **kwargs: object) -> tuple[GraphMemory, nx.MultiDiGraph]:
    mem = GraphMemory(**kwargs)  # type: ignore[arg-type]
    mem.apply(NS, climbs(days))
    return mem, mem.graph(NS)


def supported(G: nx.MultiDiGraph, fid: str = FID) -> set[str]:
    return {v for _, v, k in G.out_edges(fid, keys=True) if k == "SUPPORTED_BY"}


def test_three_events_in_a_month_become_a_fact() -> None:
    _, G = graph_of([13, 20, 39])  # 13 Mar, 20 Mar, 8 Apr
    assert consolidate(G) == [FID]
    f = G.nodes[FID]
    assert f["type"] == "Fact" and f["consolidated"] is True and f["support"] == 3
    assert (f["valid_from"], f["valid_to"]) == (at(13), at(39))
    assert f["text"] == "Leo regularly goes climbing (3 times between 13 Mar 2023 and 8 Apr 2023)"
    assert f["provenance"] == {"t0", "t1", "t2"} and f["subject"] == "person:leo"
    assert supported(G) == {"event:t0#0", "event:t1#0", "event:t2#0"}
    assert G.has_edge("person:leo", FID, key="HAS_ATTR") and G.has_edge(FID, "concept:climbing", key="MENTIONS")
    assert G.edges[FID, "event:t1#0", "SUPPORTED_BY"]["provenance"] == {"t1"}
    assert all(f"event:t{i}#0" in G for i in range(3))  # events are kept


def test_events_spread_over_ninety_days_give_no_fact() -> None:
    _, G = graph_of([1, 46, 91])
    assert consolidate(G) == [] and FID not in G


def test_only_events_inside_a_dense_window_support_the_fact() -> None:
    _, G = graph_of([1, 5, 9, 120])
    consolidate(G)
    assert G.nodes[FID]["support"] == 3 and "event:t3#0" not in supported(G)
    assert G.nodes[FID]["valid_to"] == at(9)


def test_consolidation_is_idempotent() -> None:
    _, G = graph_of([1, 2, 3, 4])
    assert consolidate(G) == [FID]
    snapshot = copy.deepcopy(G)
    assert consolidate(G) == []
    assert graphs_equal(G, snapshot)


def test_parameters_and_validation() -> None:
    _, G = graph_of([1, 2])
    assert consolidate(G, min_events=2, window_days=1) == [FID]
    assert consolidate(G, min_events=3) == [] and FID not in G  # no longer qualifies: removed
    with pytest.raises(InvalidInputError):
        consolidate(G, min_events=0)
    with pytest.raises(InvalidInputError):
        consolidate(G, window_days=-1)


def test_writer_is_used_and_only_called_on_change() -> None:
    calls: list[tuple[str, str, int]] = []

    def writer(person: str, concept: str, events: list[dict]) -> str:
        calls.append((person, concept, len(events)))
        assert [e["id"] for e in events] == sorted(e["id"] for e in events)
        return f"{person} is a keen {concept} fan"

    mem, G = graph_of([1, 2, 3], writer=writer)
    mem.consolidate(NS)
    mem.consolidate(NS)
    assert calls == [("Leo", "climbing", 3)] and G.nodes[FID]["text"] == "Leo is a keen climbing fan"
    mem.apply(NS, climbs([4], prefix="u"))  # a new event updates the existing fact
    assert G.nodes[FID]["support"] == 4 and calls[-1] == ("Leo", "climbing", 4)


def test_llm_writer_prompt_reply_and_fallbacks() -> None:
    events = [{"id": "e1", "start": at(1), "text": "went climbing"}]
    w = LLMFactWriter(FakeListChatModel(responses=['"Leo climbs every week."\nextra',
                                                    '```json\n{"text": "Leo climbs weekly."}\n```']))
    human = w.render("Leo", "climbing", events)[-1].content
    assert "Person: Leo" in human and "- (2023-03-01) went climbing" in human
    assert w("Leo", "climbing", events) == "Leo climbs every week."  # a plain-text reply: its first line
    assert w("Leo", "climbing", events) == "Leo climbs weekly."  # the schema's JSON
    bad_json = LLMFactWriter(FakeListChatModel(responses=['{"sentence": "x"}']), fallback=False)
    with pytest.raises(ExtractionError, match="fact writer model failed"):
        bad_json("Leo", "climbing", events)

    class Broken:
        def invoke(self, prompt: str) -> str:
            raise RuntimeError("model down")

    assert LLMFactWriter(Broken())("Leo", "climbing", events) == describe_habit("Leo", "climbing", events)
    with pytest.raises(ExtractionError, match="model down"):
        LLMFactWriter(Broken(), fallback=False)("Leo", "climbing", events)
    with pytest.raises(ExtractionError, match="empty"):
        LLMFactWriter(FakeListChatModel(responses=["   "]), fallback=False)("Leo", "climbing", events)
    with pytest.raises(InvalidInputError):
        LLMFactWriter(object())


def test_deleting_supporting_turns_rederives_or_removes_the_fact() -> None:
    mem, G = graph_of([1, 2, 3, 4])
    mem.consolidate(NS)
    stats = mem.delete_turns(NS, ["t3"])
    assert stats.facts_rederived == [FID]
    f = G.nodes[FID]
    assert f["support"] == 3 and f["provenance"] == {"t0", "t1", "t2"} and f["valid_to"] == at(3)
    assert "3 times" in f["text"]
    mem.delete_turns(NS, ["t0"])  # two events left: below the minimum
    assert FID not in G
    assert "event:t1#0" in G and "event:t2#0" in G


def test_rebuild_consolidates() -> None:
    from langmem_cog.records import make_turn

    extractions = {e.turn_id: e for e in climbs([1, 2, 3])}

    class Table:
        def extract(self, turns):  # noqa: ANN001, ANN202
            return [extractions[t.id] for t in turns]

    turns = [
        make_turn(id=k, namespace=NS, speaker="Leo", text="climbing!", timestamp=e.timestamp)
        for k, e in extractions.items()
    ]
    G = GraphMemory().rebuild(NS, turns, Table())
    assert G.nodes[FID]["support"] == 3


def test_events_of_two_people_give_each_a_fact() -> None:
    mem = GraphMemory()
    for i, day in enumerate([1, 2, 3]):
        tid = f"s{i}"
        ev = ExtractedEvent(
            text="climbed together",
            participants=("Leo", "Sam"),
            source_turn_id=tid,
            start=at(day),
            concepts=("climbing",),
            verb="climb",
        )
        mem.apply(NS, [Extraction(turn_id=tid, speaker="Leo", timestamp=at(day), events=[ev])])
    assert mem.consolidate(NS) == [FID, consolidated_fact_id("person:sam", "concept:climbing")]
    assert mem.graph(NS).nodes[FID]["text"].startswith("Leo regularly climbs climbing")

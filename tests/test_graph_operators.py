"""Operators are pure: anchor scores and limits, ground follows provenance, traverse follows typed edges
in a time window, intersect finds shared neighbours; the graph is never mutated."""

from __future__ import annotations

from datetime import UTC, datetime

import networkx as nx
import numpy as np
import pytest
from fakes import FakeEmbeddings

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.operators import (
    NodeVectors,
    anchor,
    anchor_texts,
    ground,
    in_window,
    intersect,
    node_interval,
    node_text,
    traverse,
)


def _graph() -> nx.MultiDiGraph:
    G = nx.MultiDiGraph()
    G.add_node("person:maya", type="Person", name="Maya", provenance={"t1", "t2", "t3"})
    G.add_node("event:t1#0", type="Event", text="adopted a beagle named Pickle", provenance={"t1"})
    G.add_node("fact:maya|allergic_to|shellfish", type="Fact", text="Maya is allergic to shellfish", provenance={"t2"})
    G.add_node("claim:t3#0", type="Claim", content="beagles are terrible dogs", provenance={"t3"})
    G.add_edge("person:maya", "event:t1#0", key="PARTICIPATED_IN", provenance={"t1"})
    return G


def test_anchor_respects_types_and_limit() -> None:
    G = _graph()
    got = anchor(G, "beagle dog", types={"Event", "Fact"}, a=1.0)
    assert [n for n, _ in got][0] == "event:t1#0"
    assert all(G.nodes[n]["type"] in {"Event", "Fact"} for n, _ in got)
    assert len(anchor(G, "beagle", a=1.0, limit=2)) == 2
    assert anchor(G, "beagle", types={"Concept"}) == []


def test_anchor_blends_fuzzy_and_cosine() -> None:
    G = _graph()
    emb = FakeEmbeddings()
    vectors = NodeVectors(lambda texts: np.asarray(emb.embed_documents(texts)))
    qv = np.asarray(emb.embed_query("allergic to shellfish"), dtype=np.float32)
    top = anchor(G, "allergic to shellfish", vectors=vectors, query_vector=qv, a=0.3)
    assert top[0][0] == "fact:maya|allergic_to|shellfish"
    # scores are a * fuzzy + (1 - a) * cosine, within [0, 1] for normalised vectors
    assert all(-1.0 <= s <= 1.0 for _, s in top)


def test_anchor_on_texts_made_once_ranks_as_on_the_graph() -> None:
    G = _graph()
    emb = FakeEmbeddings()
    vectors = NodeVectors(lambda texts: np.asarray(emb.embed_documents(texts)))
    qv = np.asarray(emb.embed_query("beagle dog"), dtype=np.float32)
    for types in (None, {"Event", "Fact"}, {"Concept"}):
        texts = anchor_texts(G, types)
        assert list(texts.texts) == [node_text(G, n) for n in texts.nodes]
        assert texts.lowered == tuple(t.lower() for t in texts.texts)
        for query in ("beagle dog", "Maya shellfish"):
            assert anchor(G, query, types=types, vectors=vectors, query_vector=qv, texts=texts) == anchor(
                G, query, types=types, vectors=vectors, query_vector=qv)


def test_the_loop_makes_anchor_texts_again_only_when_the_graph_changed() -> None:
    from langmem_cog import CogMemConfig, Turn
    from langmem_cog.graph.loop import _Runtime
    from langmem_cog.memory import CogMemory

    memory = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())
    memory.add_turns([Turn(id="a", namespace="n", speaker="Leo", text="I adopted a beagle named Pickle.",
                           timestamp="2024-01-10T08:00:00Z")])
    rt = _Runtime(memory, hub_turns=5, seeds_per_step=5, per_hop=5, per_entity=5)
    G = memory.graph("n")
    first = rt.anchor_texts("n", G, None)
    assert rt.anchor_texts("n", G, None) is first and rt.anchor_texts("n", G, {"Event"}) is not first
    memory.add_turns([Turn(id="b", namespace="n", speaker="Leo", text="Pickle learned to swim at the lake.",
                           timestamp="2024-02-10T08:00:00Z")])
    G = memory.graph("n")
    again = rt.anchor_texts("n", G, None)
    assert again is not first and again == anchor_texts(G)
    assert len(again.nodes) > len(first.nodes)


def test_anchor_does_not_mutate_and_is_deterministic() -> None:
    G = _graph()
    before = nx.node_link_data(G, edges="edges")
    assert anchor(G, "beagle", a=1.0) == anchor(G, "beagle", a=1.0)
    assert nx.node_link_data(G, edges="edges") == before


@pytest.mark.parametrize("kwargs", [{"a": -0.1}, {"a": 1.5}, {"limit": 0}])
def test_anchor_rejects_bad_parameters(kwargs: dict) -> None:
    with pytest.raises(InvalidInputError):
        anchor(_graph(), "x", **kwargs)


def test_ground_follows_provenance_best_score_first() -> None:
    G = _graph()
    got = ground(G, [("event:t1#0", 0.9), ("person:maya", 0.5), ("missing", 1.0)])
    assert got[0] == ("t1", 0.9, "event:t1#0")
    assert {tid for tid, _, _ in got} == {"t1", "t2", "t3"}
    assert ground(G, [("person:maya", 0.5)], limit=1) == [("t1", 0.5, "person:maya")]


def test_node_text_by_type() -> None:
    G = _graph()
    assert node_text(G, "claim:t3#0") == "beagles are terrible dogs"
    assert node_text(G, "person:maya") == "Maya"


# ---------------------------------------------------------------------------- traverse / intersect


def _d(day: int, month: int = 5) -> datetime:
    return datetime(2023, month, day, tzinfo=UTC)


def _timeline() -> nx.MultiDiGraph:
    """Leo climbs (May 3, May 20), Maya runs (May 10) and climbs (June 2); both like coffee."""
    G = nx.MultiDiGraph()
    G.graph["turns"] = {}
    for p in ("leo", "maya"):
        G.add_node(f"person:{p}", type="Person", name=p.title(), first_seen=_d(1), last_seen=_d(2, 6),
                   provenance={"t1", "t2", "t3", "t4"})
    events = {
        "event:t1#0": ("leo", "went climbing", _d(3), "climbing"),
        "event:t2#0": ("maya", "ran a 10k", _d(10), "running"),
        "event:t3#0": ("leo", "climbed at the gym", _d(20), "climbing"),
        "event:t4#0": ("maya", "tried climbing", _d(2, 6), "climbing"),
    }
    for node, (who, text, start, concept) in events.items():
        tid = node.split(":")[1].split("#")[0]
        G.add_node(node, type="Event", text=text, start=start, end=None, provenance={tid},
                   first_seen=start, last_seen=start)
        G.add_node(f"concept:{concept}", type="Concept", name=concept, provenance=set(),
                   first_seen=_d(3), last_seen=_d(2, 6))
        G.nodes[f"concept:{concept}"]["provenance"].add(tid)
        G.add_edge(f"person:{who}", node, key="PARTICIPATED_IN", provenance={tid})
        G.add_edge(node, f"concept:{concept}", key="MENTIONS", provenance={tid})
    G.add_edge("event:t1#0", "event:t3#0", key="NEXT", provenance={"t1", "t3"})
    G.add_node("concept:coffee", type="Concept", name="coffee", provenance={"t5", "t6"},
               first_seen=_d(5), last_seen=_d(6))
    G.add_edge("person:leo", "concept:coffee", key="LIKES", provenance={"t5"})
    G.add_edge("person:maya", "concept:coffee", key="LIKES", provenance={"t6"})
    G.add_node("claim:t7#0", type="Claim", content="climbing is overrated", timestamp=_d(12), provenance={"t7"})
    G.add_edge("person:maya", "claim:t7#0", key="CLAIMS", provenance={"t7"})
    G.add_edge("claim:t7#0", "concept:climbing", key="ABOUT", provenance={"t7"})
    return G


def _snapshot(G: nx.MultiDiGraph) -> dict:
    return nx.node_link_data(G, edges="edges")


def test_traverse_is_pure_and_scores_decay_per_hop() -> None:
    G = _timeline()
    before = _snapshot(G)
    got = dict(traverse(G, [("person:leo", 0.8)], depth=2))
    assert _snapshot(G) == before
    assert got["event:t1#0"] == pytest.approx(0.4)  # one hop: 0.8 * 0.5
    assert got["concept:climbing"] == pytest.approx(0.2)  # two hops
    assert "person:leo" not in got  # seeds are not returned
    assert traverse(G, ["person:leo"]) == traverse(G, ["person:leo"])  # deterministic


@pytest.mark.parametrize("kwargs", [{"depth": 0}, {"depth": 3}, {"depth": True}, {"per_hop": 0}, {"decay": 0.0},
                                    {"time_window": (_d(5), _d(1))},
                                    {"time_window": (datetime(2023, 5, 1), None)}])
def test_traverse_rejects_bad_parameters(kwargs: dict) -> None:
    with pytest.raises(InvalidInputError):
        traverse(_timeline(), ["person:leo"], **kwargs)


def test_traverse_limits_each_hop() -> None:
    G = nx.MultiDiGraph()
    for i in range(40):
        G.add_edge("hub", f"leaf{i:02d}", key="MENTIONS")
        G.add_edge(f"leaf{i:02d}", f"far{i:02d}", key="MENTIONS")
    one = traverse(G, ["hub"])
    assert len(one) == 15 and all(n.startswith("leaf") for n, _ in one)
    two = traverse(G, ["hub"], depth=2, per_hop=4)
    assert len(two) == 8 and sum(n.startswith("far") for n, _ in two) == 4


def test_traverse_filters_edge_types_both_directions() -> None:
    G = _timeline()
    # incoming PARTICIPATED_IN from an event back to its person
    assert [n for n, _ in traverse(G, ["event:t2#0"], edge_types={"PARTICIPATED_IN"})] == ["person:maya"]
    assert {n for n, _ in traverse(G, ["event:t1#0"], edge_types={"NEXT"})} == {"event:t3#0"}
    likes = {n for n, _ in traverse(G, ["person:leo"], edge_types={"LIKES"})}
    assert likes == {"concept:coffee"}
    assert traverse(G, ["person:leo"], edge_types=set()) == []
    # known nodes are neither returned nor passed through
    assert {n for n, _ in traverse(G, ["person:leo"], exclude={"event:t1#0"}, depth=2)} == {
        "event:t3#0", "concept:coffee", "concept:climbing", "person:maya"}
    assert traverse(G, ["person:leo"], edge_types={"PARTICIPATED_IN"}, exclude={"event:t1#0", "event:t3#0"}) == []


def test_traverse_filters_by_time_window() -> None:
    G = _timeline()
    may_first_half = (_d(1), _d(15))
    got = {n for n, _ in traverse(G, ["person:leo", "person:maya"], edge_types={"PARTICIPATED_IN"},
                                  time_window=may_first_half)}
    assert got == {"event:t1#0", "event:t2#0"}
    # open-ended windows; the end is exclusive
    assert {n for n, _ in traverse(G, ["person:maya"], edge_types={"PARTICIPATED_IN"}, time_window=(_d(1, 6), None))} \
        == {"event:t4#0"}
    assert traverse(G, ["person:leo"], edge_types={"PARTICIPATED_IN"}, time_window=(None, _d(3))) == []


def test_traverse_types_keep_claims_out_and_relevance_ranks() -> None:
    G = _timeline()
    all_types = {n for n, _ in traverse(G, ["concept:climbing"])}
    assert "claim:t7#0" in all_types
    records = {n for n, _ in traverse(G, ["concept:climbing"], types={"Person", "Event", "Concept", "Fact"})}
    assert "claim:t7#0" not in records and records
    ranked = traverse(G, ["concept:climbing"], relevance=lambda n: 1.0 if n == "event:t4#0" else -1.0, per_hop=1)
    assert ranked == [("event:t4#0", 0.5)]


def test_node_interval_and_in_window() -> None:
    G = _timeline()
    assert node_interval(G, "event:t1#0") == (_d(3), _d(3), True)
    assert node_interval(G, "claim:t7#0") == (_d(12), _d(12), True)
    assert node_interval(G, "person:leo") == (_d(1), _d(2, 6), True)
    G.add_node("bare")
    assert node_interval(G, "bare") is None and not in_window(G, "bare", (_d(1), None)) and in_window(G, "bare", None)
    assert in_window(G, "person:leo", (_d(2, 6), _d(3, 6)))  # last_seen is inclusive
    assert not in_window(G, "claim:t7#0", (_d(1), _d(12)))  # the end is exclusive


def test_intersect_finds_shared_concepts_through_events() -> None:
    G = _timeline()
    before = _snapshot(G)
    got = intersect(G, ["person:leo", "person:maya"])
    assert _snapshot(G) == before
    nodes = [n for n, _ in got]
    assert set(nodes) == {"concept:climbing", "concept:coffee"}  # via events, and via LIKES
    assert nodes[0] == "concept:climbing"  # Leo climbed twice: the strongest shared link
    assert all(0.0 < s <= 1.0 for _, s in got)
    # the relations matter: with LIKES only, only coffee is shared
    assert [n for n, _ in intersect(G, ["person:leo", "person:maya"], relations={"LIKES"})] == ["concept:coffee"]


def test_intersect_limits_and_edge_cases() -> None:
    G = _timeline()
    assert len(intersect(G, ["person:leo", "person:maya"], per_entity=1)) == 1
    assert intersect(G, ["person:leo"]) == []
    assert intersect(G, ["person:leo", "person:nobody"]) == []
    assert intersect(G, ["person:leo", "person:maya"], types={"Event"}) == []
    with pytest.raises(InvalidInputError):
        intersect(G, ["person:leo", "person:maya"], per_entity=0)


def test_intersect_per_entity_cap_on_a_busy_entity() -> None:
    G = nx.MultiDiGraph()
    for i in range(30):
        G.add_node(f"concept:c{i:02d}", type="Concept")
        G.add_edge("person:a", f"concept:c{i:02d}", key="USES", provenance={f"a{i}"})
    for i in (3, 17, 29):
        G.add_edge("person:b", f"concept:c{i:02d}", key="USES", provenance={f"b{i}"})
    G.add_nodes_from(["person:a", "person:b"], type="Person")
    assert {n for n, _ in intersect(G, ["person:a", "person:b"])} == {"concept:c03", "concept:c17", "concept:c29"}
    assert len(intersect(G, ["person:a", "person:b"], per_entity=2)) == 2


def test_anchor_keeps_the_full_sort_order_with_ties_at_the_cut() -> None:
    import networkx as nx
    import numpy as np

    from langmem_cog.graph import operators as ops

    G = nx.MultiDiGraph()
    for i in range(40):  # many nodes share a text, so their scores tie at the cut
        G.add_node(f"event:{i:02d}", type="Event", text=["Maya ran a race", "Leo baked bread", "a race"][i % 3])
    got = ops.anchor(G, "maya race", limit=5)
    scores = {n: s for n, s in ops.anchor(G, "maya race", limit=40)}
    full = sorted(scores, key=lambda n: (-scores[n], n))[:5]
    assert [n for n, _ in got] == full
    vecs = ops.NodeVectors(lambda texts: np.eye(len(texts), 4, dtype=np.float32) + 1.0)
    texts = ["a", "b", "c"]
    m = vecs.vectors(texts)
    assert vecs.vectors(list(texts)) is m  # the same texts again: the kept matrix
    assert vecs.vectors(["a", "b"]) is not m and np.allclose(vecs.vectors(["a", "b"]), m[:2])


def test_node_vectors_keep_no_matrix_over_the_byte_budget(monkeypatch) -> None:
    import numpy as np

    from langmem_cog.graph import operators as ops

    monkeypatch.setattr(ops, "_MATRIX_BYTES", 16)
    vecs = ops.NodeVectors(lambda texts: np.ones((len(texts), 4), dtype=np.float32))
    m = vecs.vectors(["a", "b"])  # 32 bytes: built, not kept
    assert vecs.vectors(["a", "b"]) is not m
    small = vecs.vectors(["a"])  # 16 bytes: kept
    assert vecs.vectors(["a"]) is small

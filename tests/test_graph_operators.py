"""Operators are pure: anchor scores and limits, ground follows provenance; the graph is never mutated."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.operators import NodeVectors, anchor, ground, node_text
from fakes import FakeEmbeddings


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

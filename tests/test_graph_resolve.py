"""Entity resolution: name normalisation, canonical ids, the resolver's rules."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.resolve import (
    EntityResolver,
    _numbers,
    canonical_concept_id,
    canonical_person_id,
    node_id_for,
    normalize_name,
)
from langmem_cog.graph.schema import NodeType


@pytest.mark.parametrize(
    ("raw", "norm"),
    [
        ("Caroline", "caroline"),
        ("  CAROLINE  ", "caroline"),
        ("Caroline's", "caroline"),
        ("Caroline\u2019s", "caroline"),
        ("James'", "james"),
        ("The Little Fern", "little fern"),
        ("the   little-fern!", "little fern"),
        ("A dog", "dog"),
        ("Lord of the Rings", "lord of the rings"),
        ("Zoë", "zoe"),
        ("Dr. Who?", "dr who"),
        ("The", "the"),
        ("!!!", ""),
    ],
)
def test_normalize_name(raw: str, norm: str) -> None:
    assert normalize_name(raw) == norm


def test_canonical_ids() -> None:
    assert canonical_person_id("Mel's") == "person:mel"
    assert canonical_concept_id("The Little Fern") == "concept:little fern"
    assert node_id_for("Running", "Concept") == "concept:running"
    with pytest.raises(InvalidInputError):
        canonical_person_id("...")
    with pytest.raises(InvalidInputError):
        node_id_for("x", "Event")
    with pytest.raises(InvalidInputError):
        normalize_name(3)  # type: ignore[arg-type]


def graph(*people: tuple[str, str, set[str]], concepts: tuple[str, ...] = ()) -> nx.MultiDiGraph:
    G = nx.MultiDiGraph()
    for nid, name, aliases in people:
        G.add_node(nid, type="Person", name=name, aliases=aliases)
    for name in concepts:
        G.add_node(canonical_concept_id(name), type="Concept", name=name, aliases=set())
    return G


def test_exact_and_alias() -> None:
    r = EntityResolver(graph(("person:melanie", "Melanie", {"Mel"})))
    assert r.match("melanie's", "Person").method == "exact"
    assert r.resolve("MEL", "Person") == "person:melanie"
    assert r.resolve("", "Person") is None


def test_short_names_never_match_fuzzily() -> None:
    r = EntityResolver(graph(("person:mel", "Mel", set()), ("person:maria", "Maria", set())))
    assert r.resolve("Mia", "Person") is None
    assert r.resolve("Marian", "Person") is None  # ratio 90.9 but "maria" is short


def test_fuzzy_typo_on_long_names_and_number_guard() -> None:
    r = EntityResolver(graph(("person:jonathan", "Jonathan", set()), concepts=("Windows 10", "Pottery Class")))
    m = r.match("Johnathan", "Person")
    assert m is not None and m.node_id == "person:jonathan" and m.method == "fuzzy" and m.score >= 90
    assert r.resolve("class pottery", "Concept") == "concept:pottery class"  # token order ignored
    assert r.resolve("Windows 11", "Concept") is None  # numbers differ
    assert r.resolve("Carolina", "Person") is None


def test_first_name_alias_needs_a_unique_owner() -> None:
    G = graph(("person:caroline smith", "Caroline Smith", set()), ("person:mel jones", "Mel Jones", set()))
    r = EntityResolver(G)
    m = r.match("Caroline", "Person")
    assert m is not None and (m.node_id, m.method) == ("person:caroline smith", "first_name")
    G.add_node("person:caroline brown", type="Person", name="Caroline Brown", aliases=set())
    r.register("person:caroline brown")
    assert r.resolve("Caroline", "Person") is None  # ambiguous
    assert r.resolve("Smith", "Person") is None  # only first names


def test_possessive_phrases_give_no_first_name() -> None:
    G = graph(("person:leo dad", "Leo's dad", set()), ("person:james dog", "James' dog", set()))
    r = EntityResolver(G)
    assert r.resolve("Leo", "Person") is None and r.resolve("James", "Person") is None
    assert r.resolve("leo's dad", "Person") == "person:leo dad"


def test_types_are_resolved_separately() -> None:
    r = EntityResolver(graph(("person:paris", "Paris", set()), concepts=("Paris", "Running Club")))
    assert r.resolve("Paris", "Person") == "person:paris"
    assert r.resolve("Paris", "Concept") == "concept:paris"
    assert r.resolve("Running Club", "Person") is None
    with pytest.raises(InvalidInputError):
        r.resolve("x", "Claim")


def test_register_and_removed_nodes() -> None:
    G = graph(("person:melanie", "Melanie", set()))
    r = EntityResolver(G)
    r.register("person:melanie", "Mellie")
    assert r.resolve("mellie", "Person") == "person:melanie"
    G.remove_node("person:melanie")
    assert r.resolve("Melanie", "Person") is None


def test_ties_break_by_node_id() -> None:
    G = graph(("person:b", "Jonathann", set()), ("person:a", "Jonathanm", set()))
    assert EntityResolver(G).resolve("Jonathan", "Person") == "person:a"


class TableEmbeddings:
    """Vectors from a table (unknown texts get an orthogonal vector); counts calls."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += len(texts)
        return [self.table.get(t, [0.0, 0.0, 1.0]) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_embedding_rule_for_concepts_with_cache() -> None:
    emb = TableEmbeddings(
        {
            "running shoes": [1.0, 0.0, 0.0],
            "sneakers": [0.95, 0.05, 0.0],
            "jonathan": [0.0, 1.0, 0.0],
            "jonny boy": [0.0, 1.0, 0.0],
        }
    )
    G = graph(("person:jonathan", "Jonathan", set()), concepts=("Running Shoes", "Pottery"))
    cache: dict[str, np.ndarray] = {}
    r = EntityResolver(G, emb, vector_cache=cache)
    m = r.match("Sneakers", "Concept")
    assert m is not None and (m.node_id, m.method) == ("concept:running shoes", "embedding") and m.score >= 0.85
    calls = emb.calls
    assert r.resolve("sneakers", "Concept") == "concept:running shoes"
    assert emb.calls == calls  # vectors are cached
    assert "sneakers" in cache
    assert r.resolve("Jonny Boy", "Person") is None  # not for persons by default
    assert EntityResolver(G, emb, embedding_types=("Person",)).resolve("Jonny Boy", "Person") == "person:jonathan"
    assert r.resolve("Tea", "Concept") is None  # short: no embedding lookup either


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    names=st.lists(st.text(alphabet="abcde fgh1", min_size=1, max_size=14), min_size=1, max_size=40),
    queries=st.lists(st.text(alphabet="abcde fgh1", min_size=1, max_size=14), min_size=1, max_size=10),
    threshold=st.sampled_from([70.0, 85.0, 90.0, 100.0]),
)
def test_fuzzy_length_window_finds_what_comparing_every_name_finds(names: list[str], queries: list[str],
                                                                   threshold: float) -> None:
    """Comparing only names of a compatible length gives the match a scan of all names gives."""
    from rapidfuzz import fuzz

    G = graph(concepts=tuple(n for n in names if normalize_name(n)))
    r = EntityResolver(G, fuzzy_threshold=threshold, min_fuzzy_len=3)
    for q in queries:
        norm = normalize_name(q)
        if len(norm) < 3:
            continue
        every = [c for c in r._choices[NodeType.CONCEPT] if fuzz.token_sort_ratio(norm, c) >= threshold]
        window = set(r._candidates(norm, NodeType.CONCEPT))
        assert set(every) <= window
        found = r._fuzzy(norm, NodeType.CONCEPT)
        same_numbers = [c for c in every if _numbers(c) == _numbers(norm)]
        assert (found is None) == (not same_numbers)
        if found is not None:
            assert found.score == max(fuzz.token_sort_ratio(norm, c) for c in same_numbers)


def test_names_indexed_later_are_found_fuzzily_and_by_embedding() -> None:
    emb = TableEmbeddings({"running shoes": [1.0, 0.0, 0.0], "sneakers": [0.95, 0.05, 0.0]})
    G = graph(concepts=("Pottery classes",))
    r = EntityResolver(G, emb)
    assert r.resolve("sneakers", "Concept") is None
    G.add_node("concept:running shoes", type="Concept", name="Running Shoes", aliases=set())
    r.register("concept:running shoes")
    assert r.resolve("sneakers", "Concept") == "concept:running shoes"  # the matrix grew by one row
    G.add_node("concept:watercolour painting", type="Concept", name="Watercolour painting", aliases=set())
    r.register("concept:watercolour painting")
    assert r.match("watercolor painting", "Concept").method == "fuzzy"

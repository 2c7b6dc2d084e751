"""Isolation: no query ever returns another namespace's turns, graph nodes or evidence.

Many namespaces are written with interleaved batches; every namespace uses the same turn
ids (``t0``, ``t1``, ...) and the same vocabulary, plus one tag word of its own, so a
leak would rank high. Randomised queries (hybrid / dense / lexical search, the LangChain
retriever and the graph operator loop) are checked against the namespace's own turns.
The full run (10,000 queries) is behind the ``reliability`` marker (``make reliability``).
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest
from fakes import FakeEmbeddings, make_turns
from reliability_helpers import _TEMPLATES, conversation_texts, tag, turns_for

from langmem_cog import CogMemConfig
from langmem_cog.errors import InvalidInputError, InvalidNamespaceError, UnknownNamespaceError
from langmem_cog.graph.loop import graph_search
from langmem_cog.memory import CogMemory
from langmem_cog.records import make_turn
from langmem_cog.retriever import CogMemRetriever
from langmem_cog.store import TurnStore, collection_name


def _build(
    config: CogMemConfig, n_ns: int, per_ns: int, seed: int, max_batch: int = 5
) -> tuple[CogMemory, dict[str, dict[str, str]]]:
    rng = random.Random(seed)
    mem = CogMemory(config, embeddings=FakeEmbeddings())
    run = uuid.uuid4().hex[:8]  # ephemeral Chroma state is shared by the whole test process
    names = [f"iso-{run}-{i}" for i in range(n_ns)]
    texts = {ns: conversation_texts(i, per_ns, rng) for i, ns in enumerate(names)}
    own: dict[str, dict[str, str]] = {ns: {} for ns in names}
    # Interleaved writes: round-robin batches of 1-5 turns across namespaces.
    cursor = dict.fromkeys(names, 0)
    while any(cursor[ns] < per_ns for ns in names):
        for i, ns in enumerate(names):
            start = cursor[ns]
            if start >= per_ns:
                continue
            size = rng.randint(1, max_batch)
            batch = turns_for(ns, i, texts[ns][start : start + size], start=start)
            mem.add_turns(batch)
            own[ns].update({t.id: t.text for t in batch})
            cursor[ns] = start + len(batch)
    return mem, own


def _random_query(rng: random.Random, n_ns: int) -> str:
    words = rng.choice(_TEMPLATES).replace("{pet}", "Rex").split()
    picked = rng.sample(words, k=min(len(words), rng.randint(1, 6)))
    # Often name another namespace's tag: a leak would put its turns first.
    picked += [tag(rng.randrange(n_ns)) for _ in range(rng.randint(0, 2))]
    return " ".join(picked)


def _check_isolation(mem: CogMemory, own: dict[str, dict[str, str]], n_queries: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    names = sorted(own)
    retrievers = {ns: CogMemRetriever(store=mem.store, namespace=ns, k=5) for ns in names}
    counts = {"search": 0, "retriever": 0, "graph": 0, "results": 0}
    for q in range(n_queries):
        ns = rng.choice(names)
        query = _random_query(rng, len(names))
        kind = rng.random()
        if kind < 0.8:
            mode = rng.choice(["hybrid", "dense", "lexical"])
            hits = mem.store.search(ns, query, k=rng.randint(1, 20), mode=mode)
            got = [(h.turn.namespace, h.turn.id, h.turn.text) for h in hits]
            counts["search"] += 1
        elif kind < 0.9:
            docs = retrievers[ns].invoke(query)
            got = [(ns, d.metadata["turn_id"], d.page_content.split(": ", 1)[-1]) for d in docs]
            assert all(d.metadata.get("namespace", ns) == ns for d in docs)
            counts["retriever"] += 1
        else:
            hits = graph_search(mem, ns, query, k=10)
            got = [(ns, h["turn_id"], h["text"]) for h in hits]
            G = mem.graph(ns)
            for h in hits:
                assert h["node"] in G, f"query {q}: evidence node {h['node']!r} is not in {ns}'s graph"
            counts["graph"] += 1
        for got_ns, turn_id, text in got:
            assert got_ns == ns, f"query {q} on {ns} returned a turn of {got_ns}"
            assert own[ns].get(turn_id) == text, f"query {q} on {ns} returned a foreign turn {turn_id}: {text!r}"
            counts["results"] += 1
    return counts


def _check_graphs(mem: CogMemory, own: dict[str, dict[str, str]]) -> None:
    names = sorted(own)
    for ns in names:
        i = int(ns.rsplit("-", 1)[1])  # the index its tag word was made from
        G = mem.graph(ns)
        assert set(G.graph["turns"]) == set(own[ns])
        others = [tag(j).encode() for j in range(len(names)) if j != i]
        for n, d in G.nodes(data=True):
            assert set(d.get("provenance", ())) <= set(own[ns]), f"{ns}: node {n} has foreign provenance"
            blob = repr((n, d)).encode()
            assert not any(o in blob for o in others), f"{ns}: node {n} holds another namespace's text"
        for u, v, d in G.edges(data=True):
            assert set(d.get("provenance", ())) <= set(own[ns])
            assert u in G and v in G


def test_interleaved_namespaces_never_leak() -> None:
    mem, own = _build(CogMemConfig.preset("ephemeral"), n_ns=5, per_ns=24, seed=1)
    _check_graphs(mem, own)
    counts = _check_isolation(mem, own, n_queries=300, seed=2)
    assert counts["results"] > 0 and counts["graph"] > 0 and counts["retriever"] > 0


@pytest.mark.reliability
def test_ten_thousand_random_queries_never_leak(tmp_path: Path) -> None:
    mem, own = _build(CogMemConfig(data_dir=tmp_path), n_ns=20, per_ns=60, seed=11, max_batch=10)
    _check_graphs(mem, own)
    # Reopened from disk as well: the persisted graphs and BM25 logs stay separate.
    reopened = CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    _check_graphs(reopened, own)
    counts = _check_isolation(reopened, own, n_queries=10_000, seed=12)
    print(f"\nisolation: 20 namespaces x 60 turns, {counts}")
    assert sum(counts[k] for k in ("search", "retriever", "graph")) == 10_000


# ---------------------------------------------------------------------- filters cannot be widened
HOSTILE_NAMESPACES = [
    "",
    " ",
    "a b",
    "*",
    "%",
    "_",
    "../etc",
    "a/b",
    "a\\b",
    "' OR '1'='1",
    'a" OR 1=1 --',
    '{"$ne": ""}',
    "$or",
    "a\x00b",
    "a\nb",
    "x" * 129,
    None,
    42,
    ["a"],
    {"$ne": "a"},
]


@pytest.mark.parametrize("bad", HOSTILE_NAMESPACES, ids=range(len(HOSTILE_NAMESPACES)))
def test_hostile_namespace_ids_are_rejected_everywhere(fake_store: TurnStore, ns: str, bad: object) -> None:
    fake_store.add_turns(make_turns(ns, ["I adopted a puppy called Rex"]))
    before = fake_store.get_turns(ns)
    for call in (
        lambda: fake_store.search(bad, "puppy"),  # type: ignore[arg-type]
        lambda: fake_store.count(bad),  # type: ignore[arg-type]
        lambda: fake_store.get_turns(bad),  # type: ignore[arg-type]
        lambda: fake_store.delete_turns(bad, ["t0"]),  # type: ignore[arg-type]
        lambda: fake_store.forget_namespace(bad),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidNamespaceError):
            call()
    with pytest.raises(InvalidInputError):
        make_turn(id="t9", namespace=bad, speaker="Ann", text="x", timestamp=before[0].timestamp)
    assert fake_store.get_turns(ns) == before


def test_namespaces_map_to_hashed_collections_and_prefix_tricks_do_not_match(fake_store: TurnStore, ns_factory) -> None:
    a, b = ns_factory("pre"), None
    b = a + "x"  # a prefix of another namespace must not see it
    fake_store.add_turns(make_turns(a, ["secret of a"]))
    fake_store.add_turns(make_turns(b, ["secret of b"]))
    assert collection_name(a) != collection_name(b)
    assert collection_name(a).startswith("lmc_") and a not in collection_name(a)
    assert [h.turn.text for h in fake_store.search(a, "secret", k=10)] == ["secret of a"]
    assert [h.turn.text for h in fake_store.search(b, "secret", k=10)] == ["secret of b"]
    with pytest.raises(UnknownNamespaceError):
        fake_store.search(a[:-1], "secret")


def test_metadata_cannot_rename_the_namespace_of_a_turn(fake_store: TurnStore, ns_factory) -> None:
    a, b = ns_factory("meta"), ns_factory("victim")
    fake_store.add_turns(make_turns(b, ["victim text"]))
    tricky = {"namespace": b, "$or": "x", "where": "1=1", "x_namespace": b}
    fake_store.add_turns(make_turns(a, ["attacker text"], metadata=tricky))
    (hit,) = fake_store.search(a, "text", k=10)
    assert hit.turn.namespace == a and hit.turn.metadata == tricky
    assert [h.turn.text for h in fake_store.search(b, "text", k=10)] == ["victim text"]

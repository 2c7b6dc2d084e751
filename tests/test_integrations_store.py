"""``CogMemStore`` next to LangGraph's ``InMemoryStore``: the order of searches without a query,
the text an item is indexed by, and single puts into a persistent store (indexed in batches that a
crash cannot lose). Real memories over the fake embedder."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import unique_namespace
from fakes import FakeEmbeddings
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from test_reliability_crash import worker_env

import langmem_cog.integrations.langgraph.store as store_module
from langmem_cog import CogMemConfig
from langmem_cog.integrations.langgraph import CogMemStore
from langmem_cog.integrations.langgraph.store import INNER_STORE_FILE, default_namespace_mapper
from langmem_cog.memory import CogMemory

ROOT = Path(__file__).resolve().parents[1]


def ephemeral_memory() -> CogMemory:
    return CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())


@pytest.fixture(scope="module")
def persistent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CogMemStore]:
    store = CogMemStore(CogMemory(CogMemConfig(data_dir=tmp_path_factory.mktemp("store")), embeddings=FakeEmbeddings()))
    yield store
    store.close()


@pytest.fixture(params=["ephemeral", "persistent"])
def store(request: pytest.FixtureRequest, persistent: CogMemStore) -> CogMemStore:
    return CogMemStore(ephemeral_memory()) if request.param == "ephemeral" else persistent


def listings(store: BaseStore, prefix: tuple[str, ...]) -> list[list[tuple[tuple[str, ...], str]]]:
    """The (namespace, key) of searches without a query: plain, filtered, paged, in a sub-namespace."""
    searches = [
        SearchOp(prefix, limit=100), SearchOp(prefix, filter={"kind": "fact"}, limit=100),
        SearchOp(prefix, limit=3, offset=2), SearchOp(prefix, filter={"kind": "fact"}, limit=2, offset=1),
        SearchOp((*prefix, "b"), limit=100), SearchOp(prefix, limit=0), SearchOp(prefix, query="  ", limit=100),
    ]
    return [[(h.namespace, h.key) for h in hits] for hits in store.batch(searches)]


# ---------------------------------------------------------------------------- a: one order
def test_search_without_a_query_lists_items_in_the_order_of_inmemorystore(store: CogMemStore) -> None:
    prefix = (unique_namespace("order"),)
    a, b = (*prefix, "a"), (*prefix, "b")
    plain = InMemoryStore()
    for s in (store, plain):
        s.put(b, "k1", {"content": "Ana plays the cello", "kind": "fact"})
        s.put(a, "k2", {"content": "Ana likes tea", "kind": "fact"})
        s.put(b, "k3", {"content": "Ana rows on Sundays", "kind": "habit"})
        s.put(b, "k4", {"content": "Ana moved to Porto", "kind": "fact"})
        s.put(b, "k1", {"content": "Ana plays the viola", "kind": "fact"})  # an update keeps its place
        s.delete(b, "k3")
        s.put(b, "k3", {"content": "Ana rows on Mondays", "kind": "habit"})  # deleted and put again: last
        s.put(a, "k0", {"content": "unindexed", "kind": "fact"}, index=False)
        s.batch([PutOp(a, "k5", {"content": "Ana reads", "kind": "fact"}), PutOp(b, "k9", {"content": "x"}),
                 PutOp(b, "k9", None)])
    expected = listings(plain, prefix)
    assert expected[0] == [(b, "k1"), (b, "k4"), (b, "k3"), (a, "k2"), (a, "k0"), (a, "k5")]
    assert listings(store, prefix) == expected
    # Another process over the same data directory lists in the same order.
    if store.inner_path is not None:
        again = CogMemStore(CogMemory(CogMemConfig(data_dir=store.inner_path.parent), embeddings=FakeEmbeddings()))
        assert listings(again, prefix) == expected
        again.close()
    # A search in the same batch sees the puts before it.
    c = (*prefix, "c")
    found = store.batch([PutOp(c, "n1", {"content": "new"}), SearchOp(c, limit=5)])[1]
    assert [h.key for h in found] == ["n1"]


_OPS = st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), st.sampled_from(["k1", "k2", "k3", "k4"]),
                          st.sampled_from(["fact", "habit", None])), min_size=1, max_size=14)


@settings(max_examples=30, deadline=None)
@given(_OPS)
def test_any_puts_and_deletes_list_as_in_inmemorystore(persistent: CogMemStore, ops: list) -> None:
    prefix = (unique_namespace("prop"),)
    plain = InMemoryStore()
    for s in (persistent, plain):
        for label, key, kind in ops:  # kind None: a delete
            s.batch([PutOp((*prefix, label), key, None if kind is None else {"content": key, "kind": kind})])
    assert listings(persistent, prefix) == listings(plain, prefix)


# ---------------------------------------------------------------------------- b, c: what is indexed
def turn_texts(store: CogMemStore, namespace: tuple[str, ...]) -> dict[str, str]:
    store.flush()
    cns = default_namespace_mapper(namespace)
    if not store.memory.store.has_namespace(cns):
        return {}
    return {t.id: t.text for t in store.memory.store.get_turns(cns)}


def test_an_item_without_content_is_indexed_by_its_values(store: CogMemStore) -> None:
    ns = ("food", unique_namespace("u"))
    store.put(ns, "p", {"food": "pizza", "mood": "happy"})
    store.put(ns, "s", {"food": "soup", "mood": "sad"})
    store.put(ns, "c", {"content": {"name": "Ana", "likes": ["cello", 3]}})
    assert [h.key for h in store.search(ns, query="pizza", limit=1)] == ["p"]
    texts = turn_texts(store, ns)
    assert texts == {"p": "pizza\nhappy", "s": "soup\nsad", "c": "Ana\ncello\n3"}
    assert not any(mark in text for text in texts.values() for mark in ("food", "mood", "name", "{", '"', "["))
    assert store.get(ns, "p").value == {"food": "pizza", "mood": "happy"}
    assert store.get(ns, "c").value == {"content": {"name": "Ana", "likes": ["cello", 3]}}
    # The store's fields, and a put's own index=[...], pick the values indexed.
    by_mood = CogMemStore(store.memory, store.inner, fields=["mood"])
    other = ("food", unique_namespace("v"))
    by_mood.put(other, "p", {"food": "pizza", "mood": "happy"})
    by_mood.put(other, "q", {"food": "pasta", "mood": "calm", "note": {"text": "al dente"}}, index=["food", "note"])
    assert turn_texts(by_mood, other) == {"p": "happy", "q": "pasta\nal dente"}
    assert [h.key for h in by_mood.search(other, query="al dente pasta", limit=1)] == ["q"]


def test_an_item_with_nothing_to_index_is_kept_without_a_turn(store: CogMemStore) -> None:
    ns = ("empty", unique_namespace("u"))
    values = {"e": {"content": ""}, "f": {"content": "", "kind": "fact"}, "n": {"flag": True, "none": None},
              "w": {"content": "   "}}
    store.put(ns, "x", {"content": "Ana plays the cello"})
    assert [h.key for h in store.search(ns, query="cello")] == ["x"]
    store.put(ns, "x", {"content": ""})  # an update to nothing leaves the index
    for key, value in values.items():
        store.put(ns, key, value)
    assert turn_texts(store, ns) == {}
    assert store.search(ns, query="content") == []
    assert {key: store.get(ns, key).value for key in values} == values
    assert [h.key for h in store.search(ns)] == ["x", *values]


# ---------------------------------------------------------------------------- d: single puts
def test_single_puts_into_a_persistent_store_are_indexed_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emb = FakeEmbeddings()
    mem = CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=emb)
    store = CogMemStore(mem)
    writes: list[int] = []  # each memory write: a Chroma write, a BM25 append and a graph journal entry
    add_turns = mem.add_turns
    monkeypatch.setattr(mem, "add_turns", lambda turns: writes.append(len(turns)) or add_turns(turns))
    user = ("memories", unique_namespace("u"))
    for i in range(50):
        store.put(user, f"k{i}", {"content": f"note {i} about topic {i % 7}"})
    assert writes == [] and emb.calls == 0  # a put writes the value and its record only
    assert [h.key for h in store.search(user, query="note 7 about topic 0", limit=1)] == ["k7"]
    assert writes == [50]  # the first search indexes them in one write
    store.put(user, "k7", {"content": "note seven rewritten"})
    store.delete(user, "k8")
    assert [h.key for h in store.search(user, query="note seven rewritten", limit=1)] == ["k7"]
    assert writes == [50, 1] and mem.store.count(default_namespace_mapper(user)) == 49
    # Pending puts are indexed every FLUSH_EVERY puts, without a search.
    monkeypatch.setattr(store_module, "FLUSH_EVERY", 10)
    for i in range(25):
        store.put(user, f"m{i}", {"content": f"more {i}"})
    assert writes == [50, 1, 10, 10]
    store.close()
    assert writes == [50, 1, 10, 10, 5]
    with sqlite3.connect(tmp_path / INNER_STORE_FILE) as conn:  # a commit is one synced WAL append
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_puts_acknowledged_before_a_kill_are_kept_and_indexed_by_the_next_store(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import os, signal
        from fakes import FakeEmbeddings
        from langmem_cog.integrations.langgraph import CogMemStore
        from langmem_cog import CogMemConfig
        from langmem_cog.memory import CogMemory
        store = CogMemStore(CogMemory(CogMemConfig(data_dir={str(tmp_path)!r}), embeddings=FakeEmbeddings()))
        for i in range(20):
            store.put(("memories", "u"), f"k{{i}}", {{"content": f"note {{i}} about the cello"}})
        store.delete(("memories", "u"), "k3")
        print("ACK", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=worker_env(),
                         cwd=ROOT, timeout=300)
    assert out.returncode == -signal.SIGKILL and out.stdout == "ACK\n", out.stderr[-3000:]
    mem = CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    store = CogMemStore(mem)  # opening the store indexes what the killed process recorded
    keys = [f"k{i}" for i in range(20) if i != 3]
    assert sorted(t.id for t in mem.store.get_turns("memories.u")) == sorted(keys)
    assert [h.key for h in store.search(("memories", "u"), limit=50)] == keys
    assert store.get(("memories", "u"), "k11").value == {"content": "note 11 about the cello"}
    assert store.search(("memories",), query="note 11", limit=1)[0].key == "k11"
    store.close()

"""Graph snapshots through the GraphStore interface: files (the default format) and a LangGraph BaseStore."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_cog.errors import InvalidInputError, StoreError
from langmem_cog.graph.backends import BaseStoreGraphStore, FileGraphStore, GraphStore, snapshot_key
from langmem_cog.graph.rules import RuleExtractor
from langmem_cog.graph.store import SCHEMA_VERSION, GraphMemory, graphs_equal
from langmem_cog.records import make_turn


def _turns(ns: str) -> list:
    texts = ["I adopted a puppy called Rex last week.", "I love hiking in the mountains with my sister Anna.",
             "Anna and I went hiking again yesterday."]
    return [make_turn(id=f"t{i}", namespace=ns, speaker="Caroline", text=t,
                      timestamp=datetime(2023, 5, 1 + i, tzinfo=UTC), position=i) for i, t in enumerate(texts)]


def _filled(mem: GraphMemory, ns: str) -> None:
    mem.apply(ns, RuleExtractor().extract(_turns(ns)))
    mem.save(ns)


@pytest.mark.parametrize("kind", ["file", "basestore"])
def test_snapshot_round_trip_through_backend(kind: str, tmp_path, ns: str) -> None:
    backend: GraphStore = FileGraphStore(tmp_path) if kind == "file" else BaseStoreGraphStore(InMemoryStore())
    writer = GraphMemory(backend=backend)
    _filled(writer, ns)
    assert backend.version(ns) is not None
    reader = GraphMemory(backend=backend)
    assert reader.graph(ns).number_of_nodes() > 0
    assert graphs_equal(reader.graph(ns), writer.graph(ns))
    # Reading twice gives equal graphs: decoding never mutates the stored snapshot.
    assert graphs_equal(GraphMemory(backend=backend).graph(ns), writer.graph(ns))


def test_workers_sharing_a_basestore_see_each_others_saves(ns: str) -> None:
    shared = InMemoryStore()
    a, b = GraphMemory(backend=BaseStoreGraphStore(shared)), GraphMemory(backend=BaseStoreGraphStore(shared))
    assert b.graph(ns).number_of_nodes() == 0
    _filled(a, ns)
    # b had an empty graph cached; the revision changed, so it reloads.
    assert graphs_equal(b.graph(ns), a.graph(ns))
    assert a.forget(ns) is True
    assert b.graph(ns).number_of_nodes() == 0
    assert shared.get(("langmem_cog", "graphs"), snapshot_key(ns)) is None


def test_file_backend_writes_the_default_file_format(tmp_path, ns: str) -> None:
    default = GraphMemory(tmp_path)
    _filled(default, ns)
    via_backend = GraphMemory(backend=FileGraphStore(tmp_path))
    assert graphs_equal(via_backend.graph(ns), default.graph(ns))
    assert FileGraphStore(tmp_path).path(ns) == default.path(ns)
    # And the other way round: a file written through the backend opens with GraphMemory(data_dir).
    other = ns + "-b"
    _filled(GraphMemory(backend=FileGraphStore(tmp_path)), other)
    assert GraphMemory(tmp_path).graph(other).number_of_nodes() > 0
    assert FileGraphStore(tmp_path).delete(other) is True
    assert not FileGraphStore(tmp_path).path(other).exists()


def test_bad_snapshots_and_arguments_are_clear_errors(tmp_path, ns: str) -> None:
    store = InMemoryStore()
    backend = BaseStoreGraphStore(store)
    backend.write(ns, {"schema_version": 999, "namespace": ns, "graph": {}})
    with pytest.raises(StoreError, match="schema version 999"):
        GraphMemory(backend=backend).graph(ns)
    backend.write(ns, {"schema_version": SCHEMA_VERSION, "namespace": "someone-else", "graph": {}})
    with pytest.raises(StoreError, match="someone-else"):
        GraphMemory(backend=backend).graph(ns)
    path = FileGraphStore(tmp_path).path(ns)
    path.parent.mkdir(parents=True)
    path.write_text("{torn", encoding="utf-8")
    with pytest.raises(StoreError, match="corrupt"):
        FileGraphStore(tmp_path).read(ns)
    with pytest.raises(InvalidInputError, match="not both"):
        GraphMemory(tmp_path, backend=backend)
    with pytest.raises(InvalidInputError, match="BaseStore"):
        BaseStoreGraphStore({})  # type: ignore[arg-type]
    assert json.loads(json.dumps(backend.read(ns)))["namespace"] == "someone-else"

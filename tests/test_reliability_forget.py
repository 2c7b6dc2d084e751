"""Forgetting: ``forget(namespace)`` and ``forget(namespace, turn_ids)`` leave no trace.

A unique canary string is written in one turn; after the call, no file under the data
directory (Chroma's SQLite database and its write-ahead table, the HNSW segment files,
the BM25 logs, the graph files, temporary files) contains its bytes, the graph holds no
node derived from the turn, and the rest of the memory still works, also after reopening.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from fakes import FakeEmbeddings, make_turns
from reliability_helpers import files_with

from langmem_cog import CogMemConfig
from langmem_cog.memory import CogMemory

TEXTS = [
    "I adopted a puppy called Rex last spring",
    "My sister Maria paints sunsets every weekend",
    "I ran the Berlin marathon in four hours",
    "We are planning a trip to Japan with Maria",
]


def _memory(tmp_path: Path) -> CogMemory:
    return CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())


def _canary() -> str:
    return "zq" + uuid.uuid4().hex[:12] + "canary"


def _graph_mentions(mem: CogMemory, ns: str, needle: str) -> list[str]:
    G = mem.graph(ns)
    return [n for n, d in G.nodes(data=True) if needle in repr((n, d)).lower()]


def test_forget_turn_ids_removes_text_from_every_file_and_index(tmp_path: Path) -> None:
    canary = _canary()
    mem = _memory(tmp_path)
    ns = "forget-ids"
    # Enough turns after it that the HNSW segment persists to disk (batch 100) in between.
    turns = make_turns(ns, [*TEXTS, f"My new neighbour {canary.title()} keeps bees at {canary}", *TEXTS * 40])
    turns = [t.model_copy(update={"text": f"{t.text} {i}"}) for i, t in enumerate(turns)]
    mem.add_turns(turns)
    secret = turns[len(TEXTS)]
    assert files_with(tmp_path, canary.encode())
    assert _graph_mentions(mem, ns, canary)  # the graph derived nodes from it
    assert mem.forget(ns, [secret.id]) is True
    assert files_with(tmp_path, canary.encode()) == []
    assert files_with(tmp_path, canary.title().encode()) == []
    assert _graph_mentions(mem, ns, canary) == []
    assert secret.id not in mem.graph(ns).graph["turns"]
    assert all(h.turn.id != secret.id for h in mem.store.search(ns, canary, k=50))
    again = CogMemory(CogMemConfig(data_dir=tmp_path, exact_search_max=0), embeddings=FakeEmbeddings())
    assert again.store.count(ns) == len(turns) - 1
    assert all(h.turn.id != secret.id for h in again.store.search(ns, f"neighbour keeps bees {canary}", k=20))
    assert _graph_mentions(again, ns, canary) == []
    assert files_with(tmp_path, canary.encode()) == []


def test_forget_namespace_removes_everything_and_spares_the_others(tmp_path: Path) -> None:
    canary = _canary()
    mem = _memory(tmp_path)
    mem.add_turns(make_turns("keep-me", TEXTS))
    mem.add_turns(make_turns("drop-me", [*TEXTS, f"the password is {canary}"]))
    graph_files = list((tmp_path / "graph").glob("*.json"))
    assert len(graph_files) == 2 and files_with(tmp_path, canary.encode())
    # A save interrupted by a crash leaves a temporary copy: forget removes it too.
    stale = mem.graphs.path("drop-me").parent / f".{mem.graphs.path('drop-me').stem}.abc.tmp"
    stale.write_text(f"partial graph {canary}")
    assert mem.forget("drop-me") is True
    assert files_with(tmp_path, canary.encode()) == []
    assert not mem.store.has_namespace("drop-me") and mem.graph("drop-me").number_of_nodes() == 0
    assert len(list((tmp_path / "graph").glob("*.json"))) == 1
    assert [h.turn.text for h in mem.store.search("keep-me", "puppy", k=1)] == [TEXTS[0]]
    assert mem.forget("drop-me") is False  # idempotent


def test_forget_namespace_removes_the_hnsw_folder_chroma_leaves_behind(tmp_path: Path) -> None:
    """Chroma 1.x's delete_collection keeps the HNSW folder (its vectors); forget deletes it, and only it."""
    canary = _canary()
    mem = _memory(tmp_path)
    mem.add_turns(make_turns("keep-me", [f"{t} {i}" for i in range(40) for t in TEXTS]))  # 160 turns: HNSW persists
    mem.add_turns(make_turns("drop-me", [*(f"{t} {i}" for i in range(40) for t in TEXTS), f"the password is {canary}"]))
    chroma = tmp_path / "chroma"
    before = {p.name for p in chroma.iterdir() if p.is_dir()}
    assert len(before) == 2  # one vector-segment folder per namespace
    assert mem.forget("drop-me") is True
    after = {p.name for p in chroma.iterdir() if p.is_dir()}
    assert len(after) == 1 and after < before
    assert files_with(tmp_path, canary.encode()) == []
    assert [h.turn.text for h in mem.store.search("keep-me", "puppy Rex 3", k=1)] == [f"{TEXTS[0]} 3"]
    reopened = _memory(tmp_path)
    assert reopened.store.count("keep-me") == 160 and not reopened.store.has_namespace("drop-me")


def test_forget_a_namespace_whose_graph_save_was_lost_leaves_no_graph(tmp_path: Path) -> None:
    """A crash between the raw forget and the graph delete: the graph is dropped on next use."""
    canary = _canary()
    mem = _memory(tmp_path)
    mem.add_turns(make_turns("half", [*TEXTS, f"secret {canary}"]))
    mem.store.forget_namespace("half")  # the raw part only
    assert files_with(tmp_path, canary.encode())  # the graph file still has it
    reopened = _memory(tmp_path)
    assert reopened.graph("half").number_of_nodes() == 0
    assert files_with(tmp_path, canary.encode()) == []

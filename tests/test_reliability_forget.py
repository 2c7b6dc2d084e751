"""Forgetting: ``forget(namespace)`` and ``forget(namespace, turn_ids)`` leave no trace.

A unique canary string is written in one turn; after the call, no file under the data
directory (Chroma's SQLite database and its write-ahead table, the HNSW segment files,
the BM25 logs, the graph files, temporary files) contains its bytes, the graph holds no
node derived from the turn, and the rest of the memory still works, also after reopening.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest
from fakes import FakeEmbeddings, make_turns
from reliability_helpers import files_with

from langmem_cog import CogMemConfig
from langmem_cog.errors import UnknownNamespaceError
from langmem_cog.memory import CogMemory
from langmem_cog.store import TurnStore

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


@pytest.mark.parametrize("read", ["search", "search-hnsw", "pool_scores", "count", "get_turns"])
def test_a_forget_by_another_process_while_a_reader_reads_gives_unknown_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, read: str
) -> None:
    """Issue 21, defect 5: the reader had checked it was up to date, then the forget landed before it
    read Chroma (deterministic here; 1-6 times a run with real processes): raw ``NotFoundError`` before."""
    overrides = {"exact_search_max": 0} if read == "search-hnsw" else {}
    writer = TurnStore(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    reader = TurnStore(CogMemConfig(data_dir=tmp_path, **overrides), embeddings=FakeEmbeddings())
    writer.add_turns(make_turns("going", TEXTS))
    writer.add_turns(make_turns("staying", TEXTS))
    assert reader.has_namespace("going")  # in step with the data dir, the collection open
    if read == "search-hnsw":
        assert reader.count("going") == len(TEXTS)  # the turns loaded too: the HNSW query is what fails
    up_to_date = reader._fresh

    def forget_after_the_check() -> None:
        up_to_date()
        monkeypatch.setattr(reader, "_fresh", up_to_date)
        writer.forget_namespace("going")

    monkeypatch.setattr(reader, "_fresh", forget_after_the_check)
    with caplog.at_level(logging.INFO, logger="langmem_cog.store"):
        if read == "count":
            assert reader.count("going") == 0  # as for any namespace that does not exist
        elif read == "get_turns":
            assert reader.get_turns("going") == []
        else:
            with pytest.raises(UnknownNamespaceError, match="forgotten") as info:
                if read == "pool_scores":
                    reader.pool_scores("going", "puppy Rex")
                else:
                    reader.search("going", "puppy Rex")
            assert type(info.value) is UnknownNamespaceError
    assert "forgotten by another process or store while being read" in caplog.text
    # The reader keeps working: the forgotten namespace is unknown, the others are intact, and it can write.
    with pytest.raises(UnknownNamespaceError):
        reader.search("going", "puppy Rex")
    assert reader.count("staying") == len(TEXTS)
    assert [h.turn.id for h in reader.search("staying", "puppy Rex", k=1)] == ["t0"]
    reader.add_turns(make_turns("going", ["a fresh start"]))
    assert reader.count("going") == 1 and writer.count("going") == 1

"""CogMemory keeps the raw store and the PEC2F graph in step: add, delete, forget, rebuild."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fakes import FakeEmbeddings

from langmem_cog import CogMemConfig, load_locomo
from langmem_cog.errors import UnknownNamespaceError
from langmem_cog.graph.schema import NodeType
from langmem_cog.graph.store import graphs_equal
from langmem_cog.memory import CogMemory

SAMPLE = Path(__file__).resolve().parents[1] / "langmem_cog" / "data" / "sample_conversation.json"


def _provenance(G) -> set[str]:
    out: set[str] = set()
    for _, d in G.nodes(data=True):
        out |= set(d.get("provenance", ()))
    return out


@pytest.fixture
def memory() -> CogMemory:
    return CogMemory(CogMemConfig.preset("ephemeral"), embeddings=FakeEmbeddings())


@pytest.fixture
def sample_turns(ns: str):
    return load_locomo(SAMPLE)[0].turns, ns


def _renamespace(turns, ns):
    return [t.model_copy(update={"namespace": ns}) for t in turns]


def test_add_builds_graph_with_provenance_of_every_turn(memory: CogMemory, ns: str) -> None:
    turns = _renamespace(load_locomo(SAMPLE)[0].turns, ns)
    memory.add_turns(turns)
    G = memory.graph(ns)
    types = {d["type"] for _, d in G.nodes(data=True)}
    assert {NodeType.PERSON, NodeType.EVENT, NodeType.CONCEPT, NodeType.CLAIM} <= types
    assert _provenance(G) == {t.id for t in turns}
    assert memory.sync_graph(ns) is False  # in step


def test_rebuild_from_raw_store_equals_incremental_graph(memory: CogMemory, ns: str) -> None:
    turns = _renamespace(load_locomo(SAMPLE)[0].turns, ns)
    memory.add_turns(turns)
    memory.consolidate(ns)
    incremental = memory.graph(ns).copy()
    rebuilt = memory.rebuild_graph(ns)
    assert graphs_equal(incremental, rebuilt)


def test_delete_turns_cascades_to_graph(memory: CogMemory, ns: str) -> None:
    turns = _renamespace(load_locomo(SAMPLE)[0].turns, ns)
    memory.add_turns(turns)
    gone = [t.id for t in turns if t.session_id == "1"]
    assert memory.delete_turns(ns, gone) == len(gone)
    G = memory.graph(ns)
    assert not (_provenance(G) & set(gone))
    for _, _, d in G.edges(data=True):
        assert d["provenance"] and not (set(d["provenance"]) & set(gone))
    assert memory.store.count(ns) == len(turns) - len(gone)


def test_forget_removes_raw_and_graph(memory: CogMemory, ns: str) -> None:
    memory.add_turns(_renamespace(load_locomo(SAMPLE)[0].turns[:10], ns))
    assert memory.forget(ns)
    assert memory.graph(ns).number_of_nodes() == 0
    with pytest.raises(UnknownNamespaceError):
        memory.store.search(ns, "anything")


def test_sync_graph_repairs_a_graph_behind_the_raw_store(memory: CogMemory, ns: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    turns = _renamespace(load_locomo(SAMPLE)[0].turns[:20], ns)
    memory.store.add_turns(turns[:10])  # raw write only, as with ingest --no-graph: no graph yet, not a fault
    with caplog.at_level(logging.INFO, logger="langmem_cog.memory"):
        assert memory.sync_graph(ns) is True
    assert [r.levelno for r in caplog.records] == [logging.INFO] and "building the graph" in caplog.text
    memory.store.add_turns(turns[10:])  # as after a crash before the graph update: a warning
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="langmem_cog.memory"):
        assert memory.sync_graph(ns) is True
    assert [r.levelno for r in caplog.records] == [logging.WARNING] and "out of step" in caplog.text
    assert _provenance(memory.graph(ns)) == {t.id for t in turns}


def test_persistent_graph_survives_reopen(tmp_path: Path, ns: str) -> None:
    cfg = CogMemConfig(data_dir=tmp_path)
    mem = CogMemory(cfg, embeddings=FakeEmbeddings())
    mem.add_turns(_renamespace(load_locomo(SAMPLE)[0].turns[:30], ns))
    before = mem.graph(ns).copy()
    reopened = CogMemory(cfg, embeddings=FakeEmbeddings())
    assert graphs_equal(before, reopened.graph(ns))


def test_a_store_holding_a_speaker_without_letters_heals_on_open(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20, defect 3: turns of such speakers, written by an older version, used to make every later
    add_turns and graph() of the namespace fail in every new process."""
    from datetime import UTC, datetime

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langmem_cog import CogMemConfig, make_turn
    from langmem_cog.graph.resolve import symbol_person_id
    from langmem_cog.records import Turn
    from langmem_cog.store import TurnStore

    cfg = CogMemConfig(data_dir=tmp_path, retriever={"mode": "hybrid"})
    emb = DeterministicFakeEmbedding(size=16)
    ts = datetime(2024, 1, 1, tzinfo=UTC)
    old = [Turn.model_construct(id=f"t{i}", namespace="ns", conversation_id="c", session_id="s", speaker=spk,
                                text=text, timestamp=ts, position=i, metadata={})
           for i, (spk, text) in enumerate([("!!!", "I think tea is great."), ("🙂", "Hello there!")])]
    with monkeypatch.context() as m:  # an older version, whose add_turns did not check every field again
        m.setattr("langmem_cog.store.turn_list", list)
        TurnStore(cfg, embeddings=emb).add_turns(old)  # as an older version stored them, graph never built
    memory = CogMemory(cfg, embeddings=emb)
    G = memory.graph("ns")
    assert {symbol_person_id("!!!"), symbol_person_id("🙂")} <= set(G.nodes)
    assert memory.add_turns([make_turn(id="t2", namespace="ns", speaker="Ann", text="Tea at five.", timestamp=ts,
                                       position=2)]) == ["t2"]
    assert CogMemory(cfg, embeddings=emb).graph("ns").number_of_nodes() >= 3


def test_a_turn_deleted_while_its_add_extracts_stays_deleted(tmp_path: Path, ns: str) -> None:
    import threading

    from langmem_cog.graph.rules import RuleExtractor

    extracting, deleted = threading.Event(), threading.Event()

    class WaitingExtractor(RuleExtractor):
        """Extracts only after the test deleted the turn (a slow model, made deterministic)."""

        def extract(self, turns):  # type: ignore[no-untyped-def]
            if any(t.id == "k1" for t in turns):
                extracting.set()
                assert deleted.wait(30)
            return super().extract(turns)

    mem = CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings(), extractor=WaitingExtractor())
    first, second = _renamespace(load_locomo(SAMPLE)[0].turns[:2], ns)
    mem.add_turns([first])
    second = second.model_copy(update={"id": "k1"})
    adder = threading.Thread(target=mem.add_turns, args=([second],))
    adder.start()
    assert extracting.wait(30)
    assert mem.delete_turns(ns, ["k1"]) == 1
    deleted.set()
    adder.join(30)
    assert _provenance(mem.graph(ns)) == {first.id}  # nothing of the deleted turn came back
    reopened = CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    assert _provenance(reopened.graph(ns)) == {first.id} and reopened.sync_graph(ns) is False
    # Every file under graph/, the pending-add markers' folder included.
    assert not [p for p in (tmp_path / "graph").rglob("*") if p.is_file() and second.text in p.read_text(errors="ignore")]


def test_a_down_extractor_never_blocks_deletes_or_reads_and_the_repair_extracts_only_what_is_missing(
    tmp_path: Path, ns: str
) -> None:
    from langmem_cog.errors import ExtractionError
    from langmem_cog.graph.rules import RuleExtractor

    class Flaky(RuleExtractor):
        """An LLM provider that goes down and comes back; records how many turns each call sends."""

        down = False
        sent: list[int] = []

        def extract(self, turns):  # type: ignore[no-untyped-def]
            if self.down:
                raise ConnectionError("provider down (429)")
            self.sent.append(len(turns))
            return super().extract(turns)

    flaky = Flaky()
    cfg = CogMemConfig(data_dir=tmp_path)
    turns = _renamespace(load_locomo(SAMPLE)[0].turns[:6], ns)
    CogMemory(cfg, embeddings=FakeEmbeddings(), extractor=flaky).add_turns(turns[:5])
    flaky.down = True
    with pytest.raises(ExtractionError):
        CogMemory(cfg, embeddings=FakeEmbeddings(), extractor=flaky).add_turns(turns[5:])  # stored, graph not
    # A new process while the provider is still down: a delete and a read work from the raw turns.
    mem = CogMemory(cfg, embeddings=FakeEmbeddings(), extractor=flaky)
    assert mem.delete_turns(ns, [turns[0].id]) == 1
    assert _provenance(mem.graph(ns)) == {t.id for t in turns[1:5]}  # the graph keeps what it had
    assert [t.id for t in mem.store.get_turns(ns)] == [t.id for t in turns[1:]]
    # The provider is back: the next use repairs the graph by sending only the missing turn.
    flaky.down, flaky.sent = False, []
    assert _provenance(mem.graph(ns)) == {t.id for t in turns[1:]}
    assert flaky.sent == [1]

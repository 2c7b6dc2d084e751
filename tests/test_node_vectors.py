"""The vectors of a graph's node texts kept on disk beside the graph file (``langmem_cog/graph/vectors.py``).

A persistent memory writes them when its graph changes and reads them on a namespace's first use in a
process, so a restart embeds no node text the files hold; damaged or foreign files are ignored and replaced;
deleting turns leaves the rows of live texts only; forgetting removes them; rankings never change.
"""

from __future__ import annotations

import logging
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeEmbeddings

from langmem_cog import CogMemConfig, CogMemRetriever, load_locomo
from langmem_cog.graph.operators import NodeVectors, node_text
from langmem_cog.graph.vectors import KEY_BYTES, MAX_CHUNKS, NodeVectorFiles, chunk_paths, text_key
from langmem_cog.memory import CogMemory

SAMPLE = Path(__file__).resolve().parents[1] / "langmem_cog" / "data" / "sample_conversation.json"
QUESTIONS = ["What did Caroline research?", "When did Melanie paint a sunrise?",
             "What does Melanie think about running?", "Where did Caroline go last week?"]


class RecordingEmbeddings(FakeEmbeddings):
    """The fake embedder, remembering every text it embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.texts.append(text)
        return super().embed_query(text)


def _turns(ns: str, n: int | None = None) -> list:
    turns = load_locomo(SAMPLE)[0].turns
    return [t.model_copy(update={"namespace": ns}) for t in turns[:n]]


def _memory(data_dir: Path, embeddings: FakeEmbeddings | None = None) -> CogMemory:
    return CogMemory(CogMemConfig(data_dir=data_dir), embeddings=embeddings or RecordingEmbeddings())


def _texts(mem: CogMemory, ns: str) -> set[str]:
    G = mem.graphs.graph(ns)
    return {node_text(G, n) for n in G.nodes}


def _stored(mem: CogMemory, ns: str) -> dict[bytes, np.ndarray]:
    """Every usable row of the namespace's files, read afresh."""
    path = mem.graphs.path(ns)
    assert path is not None
    return NodeVectorFiles(lambda _: path, embedder=lambda: mem.node_vectors.files.embedder).read(ns)


def _rankings(mem: CogMemory, ns: str) -> list[list[object]]:
    """Per question, the default retriever's ranked turn ids, and the operator loop's grounded turns with the
    scores of the nodes that reached them (the cosines of the node vectors with the query, mixed in)."""
    out: list[list[object]] = []
    retriever = CogMemRetriever(memory=mem, namespace=ns, k=10)
    for q in QUESTIONS:
        out.append([d.metadata["turn_id"] for d in retriever.invoke(q)])
        state = mem.retrieval.run(ns, q)
        out.append([(str(e["turn_id"]), float(e["score"])) for e in state["evidence"]])
    return out


@pytest.fixture
def built(tmp_path: Path, ns: str) -> tuple[Path, str, list[list[tuple[str, float]]]]:
    """A data directory with a namespace ingested in two adds, and the rankings of the memory that ingested it."""
    mem = _memory(tmp_path)
    turns = _turns(ns)
    mem.add_turns(turns[:40])
    mem.add_turns(turns[40:])
    return tmp_path, ns, _rankings(mem, ns)


def test_the_files_are_written_at_ingest_and_read_back_on_reopen(built) -> None:
    data_dir, ns, before = built
    reopened = _memory(data_dir)
    path = reopened.graphs.path(ns)
    chunks = chunk_paths(path)
    folder = path.with_name(f"{path.stem}.nodevec")  # named after the graph file, beside it
    assert [p.parent for p in chunks] == [folder] * len(chunks) and 1 <= len(chunks) <= 2  # one per add
    texts = _texts(reopened, ns)
    assert set(_stored(reopened, ns)) == {text_key(t) for t in texts}  # every node text, nothing else
    after = _rankings(reopened, ns)
    embedded = set(reopened.embeddings.texts)
    assert not embedded & texts - set(QUESTIONS)  # no node text was embedded again: only the questions
    assert reopened.node_vectors.embedded == 0 and reopened.node_vectors.read >= len(texts)
    assert after == before


def test_the_stored_vectors_are_the_numbers_the_cache_held(built) -> None:
    data_dir, ns, _ = built
    mem = _memory(data_dir)
    G = mem.graph(ns)  # the namespace's first use: its stored vectors are read
    texts = sorted({node_text(G, n) for n in G.nodes})
    fresh = NodeVectors(mem.store.embed_texts)  # no files: embeds every text
    assert np.array_equal(mem.node_vectors.vectors(texts), fresh.vectors(texts))  # float32, bit for bit
    assert mem.node_vectors.embedded == 0


def test_rankings_are_the_same_without_the_files(built) -> None:
    data_dir, ns, before = built
    for p in chunk_paths(_memory(data_dir).graphs.path(ns)):
        p.unlink()
    mem = _memory(data_dir)
    assert _rankings(mem, ns) == before
    assert mem.node_vectors.embedded == len(_texts(mem, ns))  # embedded again, and stored again:
    again = _memory(data_dir)
    assert _rankings(again, ns) == before and again.node_vectors.embedded == 0


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _flip_a_vector_byte(p: Path) -> None:
    data = bytearray(p.read_bytes())
    at = data.find(b"vectors.npy") + 400  # inside the vectors array (the zip's CRC no longer matches)
    data[at] ^= 0x40
    p.write_bytes(bytes(data))


def _rewrite(p: Path, **arrays: np.ndarray) -> None:
    with np.load(p, allow_pickle=False) as z:
        content = {k: z[k] for k in z.files}
    content.update(arrays)
    with p.open("wb") as fh:
        np.savez(fh, **content)


def _other_dimension(p: Path) -> None:
    with np.load(p, allow_pickle=False) as z:
        n = len(z["keys"])
    _rewrite(p, vectors=np.full((n, 7), 0.5, dtype=np.float32))


def _not_finite(p: Path) -> None:
    with np.load(p, allow_pickle=False) as z:
        vectors = z["vectors"].copy()
    vectors[0, 0] = np.nan
    _rewrite(p, vectors=vectors)


def _bad_keys(p: Path) -> None:
    with np.load(p, allow_pickle=False) as z:
        n = len(z["keys"])
    _rewrite(p, keys=np.zeros((n, KEY_BYTES - 1), dtype=np.uint8))


@pytest.mark.parametrize("damage", [_truncate, _flip_a_vector_byte, _other_dimension, _not_finite, _bad_keys,
                                    lambda p: p.write_bytes(b"not a zip file at all")],
                         ids=["truncated", "bit-flip", "other-dimension", "not-finite", "bad-keys", "garbage"])
def test_a_damaged_file_is_ignored_with_a_warning_and_replaced(built, damage, caplog) -> None:
    data_dir, ns, before = built
    path = _memory(data_dir).graphs.path(ns)
    for p in chunk_paths(path):
        damage(p)
    mem = _memory(data_dir)
    with caplog.at_level(logging.WARNING, logger="langmem_cog.graph.vectors"):
        assert _rankings(mem, ns) == before  # never a wrong vector
    assert any("unusable" in r.getMessage() and path.stem in r.getMessage() for r in caplog.records)
    texts = _texts(mem, ns)
    assert mem.node_vectors.embedded == len(texts)  # the texts were embedded again ...
    assert len(chunk_paths(path)) == 1 and set(_stored(mem, ns)) == {text_key(t) for t in texts}  # ... and stored
    caplog.clear()
    again = _memory(data_dir)
    with caplog.at_level(logging.WARNING, logger="langmem_cog.graph.vectors"):
        assert _rankings(again, ns) == before
    assert again.node_vectors.embedded == 0 and not caplog.records


def test_files_of_another_embedder_are_ignored_quietly_and_replaced(built, caplog) -> None:
    data_dir, ns, before = built
    path = _memory(data_dir).graphs.path(ns)
    for p in chunk_paths(path):
        _rewrite(p, embedder=np.array("0" * 64))  # what another model (or precision) would have recorded
    mem = _memory(data_dir)
    with caplog.at_level(logging.WARNING, logger="langmem_cog.graph.vectors"):
        assert _rankings(mem, ns) == before
    assert not caplog.records  # not damage
    assert mem.node_vectors.embedded == len(_texts(mem, ns)) and len(chunk_paths(path)) == 1
    assert _memory(data_dir).node_vectors.files.embedder == mem.node_vectors.files.embedder
    assert len(_stored(mem, ns)) == len(_texts(mem, ns))


def test_deleting_turns_leaves_the_rows_of_live_texts_only(built) -> None:
    data_dir, ns, _ = built
    mem = _memory(data_dir)
    turns = _turns(ns)
    before = _texts(mem, ns)
    gone = [t.id for t in turns[:25]]
    assert mem.delete_turns(ns, gone) == len(gone)
    live = _texts(mem, ns)
    dead = before - live
    assert dead  # some node texts were said only in the deleted turns
    stored = _stored(mem, ns)
    assert set(stored) == {text_key(t) for t in live}  # the deleted texts' vectors left the disk
    assert len(chunk_paths(mem.graphs.path(ns))) == 1
    reference = _rankings(mem, ns)
    reopened = _memory(data_dir)
    assert _rankings(reopened, ns) == reference and reopened.node_vectors.embedded == 0
    for p in chunk_paths(mem.graphs.path(ns)):
        p.unlink()
    assert _rankings(_memory(data_dir), ns) == reference  # the same with the vectors embedded afresh


def test_a_delete_whose_purge_failed_is_finished_by_the_retry(built, monkeypatch) -> None:
    from langmem_cog.errors import StoreError

    data_dir, ns, _ = built
    mem = _memory(data_dir)
    gone = [t.id for t in _turns(ns)[:25]]
    real = NodeVectorFiles.purge

    def failing(self, namespace, live):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(NodeVectorFiles, "purge", failing)
    with pytest.raises(StoreError, match="node vectors"):
        mem.delete_turns(ns, gone)
    monkeypatch.setattr(NodeVectorFiles, "purge", real)
    assert list((data_dir / "intents").glob("*.json"))  # still recorded
    reopened = _memory(data_dir)  # the open replays the delete, purge included
    assert not list((data_dir / "intents").glob("*.json"))
    assert set(_stored(reopened, ns)) == {text_key(t) for t in _texts(reopened, ns)}


def test_forget_removes_the_files(built) -> None:
    data_dir, ns, _ = built
    mem = _memory(data_dir)
    path = mem.graphs.path(ns)
    assert chunk_paths(path)
    assert mem.forget(ns) is True
    assert chunk_paths(path) == [] and not list(path.parent.glob(f"*{path.stem}*"))
    mem.add_turns(_turns(ns, 10))  # the namespace again: nothing of the old vectors is read
    assert set(_stored(mem, ns)) == {text_key(t) for t in _texts(mem, ns)}


def test_an_ephemeral_memory_keeps_no_files(tmp_path: Path, ns: str, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    mem = CogMemory(CogMemConfig.preset("ephemeral"), embeddings=RecordingEmbeddings())
    assert mem.node_vectors.files is None
    mem.add_turns(_turns(ns, 20))
    assert mem.graphs.path(ns) is None and not list(tmp_path.rglob("*.npz"))


def test_another_process_s_chunks_are_read_and_a_copy_in_another_place_is_reused(built, tmp_path: Path) -> None:
    data_dir, ns, before = built
    moved = tmp_path / "moved"
    shutil.copytree(data_dir, moved, ignore=shutil.ignore_patterns("*.lock"))
    mem = _memory(moved)
    assert _rankings(mem, ns) == before and mem.node_vectors.embedded == 0


# ---------------------------------------------------------------------- the chunk files themselves
def _files(tmp_path: Path) -> tuple[NodeVectorFiles, Path]:
    graph = tmp_path / "graph" / "ab12.json"
    return NodeVectorFiles(lambda _: graph, embedder=lambda: "e1"), graph


def _rows(keys: list[str], dim: int = 4) -> dict[bytes, np.ndarray]:
    return {text_key(k): np.full(dim, i + 1, dtype=np.float32) for i, k in enumerate(keys)}


def test_a_write_adds_a_chunk_of_the_missing_rows_only(tmp_path: Path) -> None:
    files, graph = _files(tmp_path)
    assert files.write("a", _rows(["x", "y"]), _rows(["x", "y"])) == 2
    assert files.write("a", _rows(["x", "y"]), _rows(["x", "y"])) == 0  # nothing new: nothing written
    rows = _rows(["x", "y", "z"])
    assert files.write("a", rows, rows) == 1
    assert len(chunk_paths(graph)) == 2
    assert set(_files(tmp_path)[0].read("a")) == set(rows)
    assert not list(graph.parent.rglob("*.tmp"))


def test_chunks_are_merged_by_size_and_by_dead_rows(tmp_path: Path) -> None:
    files, graph = _files(tmp_path)
    names = [f"t{i}" for i in range(200)]
    live = _rows(names)
    files.write("a", {k: live[k] for k in list(live)[:150]}, live)  # a large first chunk
    for i in range(150, 150 + MAX_CHUNKS):
        files.write("a", {k: live[k] for k in list(live)[: i + 1]}, live)
    chunks = chunk_paths(graph)
    assert len(chunks) <= MAX_CHUNKS and max(chunks, key=lambda p: p.stat().st_size) == chunk_paths(graph)[0]
    assert set(_files(tmp_path)[0].read("a")) == set(list(live)[: 150 + MAX_CHUNKS])
    # Most texts gone (not a delete: renamed nodes, say): the next write keeps the live rows only.
    few = {k: live[k] for k in list(live)[:10]}
    files.write("a", {**few, text_key("new"): np.ones(4, np.float32)}, [*few, text_key("new")])
    assert len(chunk_paths(graph)) == 1 and set(_files(tmp_path)[0].read("a")) == {*few, text_key("new")}


def test_purge_reads_the_files_themselves_and_writes_only_when_a_row_died(tmp_path: Path) -> None:
    files, graph = _files(tmp_path)
    rows = _rows(["x", "y", "z"])
    files.write("a", rows, rows)
    before = chunk_paths(graph)[0].stat().st_mtime_ns
    other, _ = _files(tmp_path)  # another process: it never read them
    assert other.purge("a", set(rows)) == set()
    assert chunk_paths(graph)[0].stat().st_mtime_ns == before  # nothing died: nothing written
    assert other.purge("a", {text_key("x")}) == {text_key("y"), text_key("z")}
    assert set(_files(tmp_path)[0].read("a")) == {text_key("x")}
    assert set(files.read("a")) == {text_key("x")}  # the first one notices the rewrite


def test_a_zip_file_that_is_not_ours_is_ignored(tmp_path: Path, caplog) -> None:
    files, graph = _files(tmp_path)
    graph.with_name("ab12.nodevec").mkdir(parents=True)
    with zipfile.ZipFile(graph.with_name("ab12.nodevec") / "00000001.npz", "w") as z:
        z.writestr("hello.txt", "hi")
    with caplog.at_level(logging.WARNING, logger="langmem_cog.graph.vectors"):
        assert files.read("a") == {}
    assert "unusable" in caplog.text
    rows = _rows(["x"])
    files.write("a", rows, rows)  # replaces it
    assert [p.name for p in chunk_paths(graph)] == ["00000002.npz"]


# ---------------------------------------------------------------------- vectors held in memory
def test_a_namespace_the_store_closes_lets_its_node_vectors_go_and_reads_them_again(tmp_path: Path) -> None:
    """``open_namespaces`` bounds the node vectors held in memory too: a closed namespace's are dropped, and
    read back from its files (nothing embedded) on its next use, with the same rankings."""
    mem = CogMemory(CogMemConfig(data_dir=tmp_path, open_namespaces=1), embeddings=RecordingEmbeddings())
    turns = _turns("nv-a")
    mem.add_turns(turns[:40])
    before = _rankings(mem, "nv-a")
    assert mem.node_vectors.held() == len(_texts(mem, "nv-a"))
    mem.add_turns([t.model_copy(update={"namespace": "nv-b"}) for t in turns[40:]])  # closes nv-a
    assert mem.node_vectors.held() == len(_texts(mem, "nv-b"))
    embedded = mem.node_vectors.embedded
    assert _rankings(mem, "nv-a") == before  # closes nv-b, reopens nv-a
    assert mem.node_vectors.embedded == embedded  # read back from the files
    assert mem.node_vectors.held() == len(_texts(mem, "nv-a"))


@pytest.mark.parametrize("persistent", [True, False], ids=["files", "ephemeral"])
def test_deleted_and_forgotten_texts_leave_the_process_too(tmp_path: Path, ns: str, persistent: bool,
                                                           monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = CogMemConfig(data_dir=tmp_path / "data") if persistent else CogMemConfig.preset("ephemeral")
    mem = CogMemory(config, embeddings=RecordingEmbeddings())
    turns = _turns(ns)
    mem.add_turns(turns)
    _rankings(mem, ns)
    before = _texts(mem, ns)
    assert mem.delete_turns(ns, [t.id for t in turns[:25]]) == 25
    dead = before - _texts(mem, ns)
    assert dead and not dead & set(mem.node_vectors._cache)  # no vector of a deleted text is kept
    _rankings(mem, ns)
    assert mem.forget(ns) is True
    assert mem.node_vectors.held() == 0

"""The turns file: a namespace's turns and vectors read back on reopen instead of Chroma's read of them.

The file is derived from Chroma: a reopened store uses it only when it holds exactly the collection's ids,
reads the namespace from Chroma (and writes the file again) otherwise, and a delete or forget leaves none
of the removed text in it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chromadb.api.models.Collection import Collection
from fakes import make_turns

from langmem_cog.records import make_turn
from langmem_cog.storage.turnfile import TurnFileError, append_turns, drop_turns, read_turns, write_turns
from langmem_cog.store import TurnStore

TEXTS = [f"turn {i}: the marathon in Berlin, the puppy Rex and the blue kitchen" for i in range(12)]


def turn(i: int, text: str = "", **meta: Any):
    return make_turn(id=f"t{i}", namespace="ns", speaker="Ann", text=text or f"turn number {i}",
                     timestamp="2024-01-01T10:00:00+00:00", position=i, metadata=meta)


# ----------------------------------------------------------------------------------- the file's own functions
def test_records_read_back_in_order_with_their_vectors(tmp_path: Path) -> None:
    path = tmp_path / "turns" / "x.bin"
    a, b = [turn(0, score=0.25, n=3, ok=True), turn(1)], [turn(2, "Ünïcödé ✓ text")]
    va, vb = np.arange(8, dtype=np.float32).reshape(2, 4), np.full((1, 4), 0.5, dtype=np.float32)
    append_turns(path, a, va)
    append_turns(path, b, vb)
    turns, emb = read_turns(path, "ns")
    assert turns == a + b
    assert emb.dtype == np.float32 and np.array_equal(emb, np.vstack([va, vb]))


def test_write_replaces_and_drop_removes_turns_and_their_text(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    turns = [turn(i, f"secret number {i}") for i in range(4)]
    vectors = np.eye(4, dtype=np.float32)
    write_turns(path, turns, vectors)
    drop_turns(path, "ns", ["t1", "t3", "unknown"])
    held, emb = read_turns(path, "ns")
    assert [t.id for t in held] == ["t0", "t2"] and np.array_equal(emb, vectors[[0, 2]])
    assert b"secret number 1" not in path.read_bytes() and b"secret number 3" not in path.read_bytes()
    assert list(tmp_path.iterdir()) == [path]  # no temporary copy left
    write_turns(path, [], np.zeros((0, 4), dtype=np.float32))
    assert not path.exists()
    drop_turns(path, "ns", ["t0"])  # no file: nothing to do


@pytest.mark.parametrize("damage", ["torn header", "torn body", "checksum", "magic", "empty"])
def test_a_torn_or_damaged_file_is_refused(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "x.bin"
    append_turns(path, [turn(0)], np.ones((1, 4), dtype=np.float32))
    append_turns(path, [turn(1)], np.ones((1, 4), dtype=np.float32))
    data = bytearray(path.read_bytes())
    if damage == "torn header":
        data += data[:7]
    elif damage == "torn body":
        del data[-3:]
    elif damage == "checksum":
        data[-1] ^= 0xFF
    elif damage == "magic":
        data[0:4] = b"XXXX"
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    with pytest.raises(TurnFileError):
        read_turns(path, "ns")


def test_a_damaged_file_is_removed_by_a_delete(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"not a turns file, but maybe old text")
    drop_turns(path, "ns", ["t0"])
    assert not path.exists()


# ------------------------------------------------------------------------------------------- through the store
@pytest.fixture
def chroma_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """The ``include`` lists of every Chroma ``Collection.get`` made while the test runs."""
    calls: list[list[str]] = []
    original = Collection.get

    def spy(self: Collection, *args: Any, **kwargs: Any) -> Any:
        calls.append(list(kwargs.get("include") or []))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Collection, "get", spy)
    yield calls


def load(store: TurnStore, ns: str) -> Any:
    """The store's in-memory copy of a namespace (loaded as a first search would)."""
    with store._spaces.lock(ns):
        return store._loader.load(ns)


def file_of(store: TurnStore, ns: str) -> Path:
    path = store._spaces.turns_path(ns)
    assert path is not None
    return path


def test_a_reopened_store_reads_the_turns_file_not_chromas_vectors(
        persistent_store_factory: Callable[..., TurnStore], ns: str, chroma_reads: list[list[str]]) -> None:
    writer = persistent_store_factory()
    writer.add_turns(make_turns(ns, TEXTS[:7]))
    writer.add_turns(make_turns(ns, TEXTS[7:], id_prefix="u"))
    path = file_of(writer, ns)
    assert path.exists()
    chroma_reads.clear()
    from_file = load(persistent_store_factory(), ns)
    assert all("embeddings" not in inc for inc in chroma_reads)  # only the listing of ids
    path.unlink()
    chroma_reads.clear()
    from_chroma = load(persistent_store_factory(), ns)
    assert any("embeddings" in inc for inc in chroma_reads)
    assert path.exists()  # written again from what Chroma holds
    assert from_file.ids == from_chroma.ids and from_file.turns == from_chroma.turns
    assert np.array_equal(from_file.emb, from_chroma.emb)  # Chroma's copy of the vectors, bit for bit
    assert persistent_store_factory().search(ns, "puppy Rex", k=5) == writer.search(ns, "puppy Rex", k=5)


def test_a_file_out_of_step_with_chroma_is_not_used_and_is_written_again(
        persistent_store_factory: Callable[..., TurnStore], ns: str, chroma_reads: list[list[str]],
        caplog: pytest.LogCaptureFixture) -> None:
    writer = persistent_store_factory()
    writer.add_turns(make_turns(ns, TEXTS[:6]))
    path = file_of(writer, ns)
    first = path.read_bytes()
    writer.add_turns(make_turns(ns, TEXTS[6:], id_prefix="u"))
    path.write_bytes(first)  # as after a crash between Chroma's write and the append
    chroma_reads.clear()
    with caplog.at_level(logging.INFO, logger="langmem_cog.store"):
        cache = load(persistent_store_factory(), ns)
    assert len(cache.ids) == len(TEXTS) and any("embeddings" in inc for inc in chroma_reads)
    assert "out of step" in caplog.text
    assert len(read_turns(path, ns)[0]) == len(TEXTS)


def test_a_damaged_file_is_read_from_chroma_with_a_warning(
        persistent_store_factory: Callable[..., TurnStore], ns: str, caplog: pytest.LogCaptureFixture) -> None:
    writer = persistent_store_factory()
    writer.add_turns(make_turns(ns, TEXTS))
    path = file_of(writer, ns)
    path.write_bytes(b"\x00" * 100)
    with caplog.at_level(logging.WARNING, logger="langmem_cog.store"):
        cache = load(persistent_store_factory(), ns)
    assert len(cache.ids) == len(TEXTS) and "cannot be used" in caplog.text
    assert len(read_turns(path, ns)[0]) == len(TEXTS)


def test_deleted_turns_leave_the_file_and_an_id_stored_again_reads_its_new_text(
        persistent_store_factory: Callable[..., TurnStore], ns: str) -> None:
    store = persistent_store_factory()
    store.add_turns(make_turns(ns, ["my PIN is 4711", "the puppy is called Rex", "the kitchen is blue"]))
    path = file_of(store, ns)
    assert b"4711" in path.read_bytes()
    assert store.delete_turns(ns, ["t0"]) == 1
    assert b"4711" not in path.read_bytes()
    assert [t.id for t in read_turns(path, ns)[0]] == ["t1", "t2"]
    store.add_turns(make_turns(ns, ["my bike is green"]))  # t0 again, other text
    reopened = load(persistent_store_factory(), ns)
    assert reopened.turns[reopened.pos["t0"]].text == "my bike is green"


def test_forget_removes_the_file(persistent_store_factory: Callable[..., TurnStore], ns: str) -> None:
    store = persistent_store_factory()
    store.add_turns(make_turns(ns, TEXTS))
    path = file_of(store, ns)
    assert path.exists()
    store.forget_namespace(ns)
    assert not path.exists() and not list(path.parent.glob("*.tmp"))


def test_a_namespace_without_a_file_gets_it_whole_from_its_next_load(
        persistent_store_factory: Callable[..., TurnStore], ns: str) -> None:
    """A data directory written before turns files existed: the next load (an add's too) writes the file from
    Chroma, and the add appends to it."""
    store = persistent_store_factory()
    store.add_turns(make_turns(ns, TEXTS[:5]))
    path = file_of(store, ns)
    path.unlink()
    persistent_store_factory().add_turns(make_turns(ns, TEXTS[5:], id_prefix="u"))
    assert len(read_turns(path, ns)[0]) == len(TEXTS)
    assert sorted(load(persistent_store_factory(), ns).ids) == sorted(t.id for t in read_turns(path, ns)[0])


def test_an_ephemeral_store_keeps_no_file(fake_store: TurnStore, ns: str) -> None:
    fake_store.add_turns(make_turns(ns, TEXTS))
    assert fake_store._spaces.turns_path(ns) is None

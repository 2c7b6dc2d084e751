"""Damaged derived files: every one is repaired from the raw store, or named with a fix that works.

Raw turns in Chroma are the source of truth; the BM25 log and the graph files are derived
from them. Each test damages a file of a persistent data directory, reopens it with a
fresh :class:`CogMemory`, and checks that the namespace works again with every turn still
there, and that a warning said what was repaired (issue 21, defects 3 and 4). Chroma's own database,
the source of truth, cannot be repaired: a damaged or read-only one is a :class:`StoreError` that names
the file and what to do, and nothing is written (defect 6).
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes import FakeEmbeddings, make_turns

from langmem_cog import CogMemConfig
from langmem_cog.errors import StoreError
from langmem_cog.graph.rules import RuleExtractor
from langmem_cog.graph.store import GraphMemory, graphs_equal
from langmem_cog.memory import CogMemory
from langmem_cog.store import TurnStore

NS = "damaged"
TEXTS = [
    "I adopted a puppy called Rex last spring",
    "My sister Maria paints sunsets every weekend",
    "I ran the Berlin marathon in four hours",
    "We are planning a trip to Japan with Maria",
    "I am allergic to peanuts and shellfish",
]
#: A word of each turn that no other turn has (its BM25 hit proves the turn is indexed).
UNIQUE = {"t0": "puppy", "t1": "sunsets", "t2": "marathon", "t3": "Japan", "t4": "peanuts"}


def _memory(tmp_path: Path) -> CogMemory:
    return CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())


def _log(tmp_path: Path) -> Path:
    (log,) = sorted((tmp_path / "lexical").glob("*.jsonl"))
    return log


# ---------------------------------------------------------------------- the BM25 log (defect 3)
def _damage_log(log: Path, good: bytes, damage: str) -> None:
    """Rewrite the log from its ``good`` bytes with its second line (turn t1) damaged."""
    lines = good.splitlines(keepends=True)
    if damage == "not-utf8":  # one byte flipped inside a line
        lines[1] = lines[1][:20] + b"\xff" + lines[1][21:]
    else:
        lines[1] = damage.encode() + b"\n"
    log.write_bytes(b"".join(lines))


def _run(mem: CogMemory, operation: str, step: int) -> None:
    if operation == "count":
        assert mem.store.count(NS) == len(TEXTS) + step
    elif operation == "search":
        hit = mem.store.search(NS, UNIQUE["t1"], k=1, mode="lexical")[0]
        assert hit.turn.id == "t1" and hit.lexical_score > 0
    elif operation == "add_turns":
        (turn,) = make_turns(NS, [f"A brand new turn number {step}"], id_prefix=f"new{step}-")
        assert mem.add_turns([turn]) == [turn.id]
    else:
        assert mem.graph(NS).number_of_nodes() > 0


@pytest.mark.parametrize("damage", ["not-utf8", "[1,2,3]", '{"op":"add"}', '{"op":"del","ids":5}'])
def test_a_damaged_bm25_log_is_rebuilt_from_chroma(tmp_path: Path, damage: str, caplog) -> None:
    mem = _memory(tmp_path)
    mem.add_turns(make_turns(NS, TEXTS))
    log = _log(tmp_path)
    good = log.read_bytes()
    del mem
    added = 0
    for operation in ("count", "search", "add_turns", "graph"):  # each one the first use after the damage
        _damage_log(log, good, damage)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="langmem_cog"):
            mem = _memory(tmp_path)
            _run(mem, operation, added)
        added += operation == "add_turns"
        assert any(r.levelno == logging.WARNING and "line 2" in r.getMessage() for r in caplog.records), operation
        assert any("turns missing from BM25" in r.getMessage() for r in caplog.records), operation  # from Chroma
        # Every turn is there and found by BM25; the log on disk is whole again.
        assert mem.store.count(NS) == len(TEXTS) + added
        for turn_id, word in UNIQUE.items():
            hit = mem.store.search(NS, word, k=1, mode="lexical")[0]
            assert hit.turn.id == turn_id and hit.lexical_score > 0, (operation, word)
        ops = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        assert sorted(op["id"] for op in ops) == sorted(t.id for t in mem.store.get_turns(NS))
        del mem


def test_a_bm25_log_that_cannot_be_rewritten_is_a_store_error(tmp_path: Path) -> None:
    mem = _memory(tmp_path)
    mem.add_turns(make_turns(NS, TEXTS))
    log = _log(tmp_path)
    del mem
    log.unlink()
    log.mkdir()  # unreadable as a file, and no file can be renamed over it
    with pytest.raises(StoreError, match="BM25 log"):
        _memory(tmp_path).store.count(NS)
    assert list(log.parent.iterdir()) == [log]  # no temporary copy left behind


# ---------------------------------------------------------------------- the graph files (defect 4)
def _damage_graph(mem: CogMemory, damage: str) -> None:
    snapshot = mem.graphs.path(NS)
    assert snapshot is not None
    journal = snapshot.with_name(snapshot.stem + ".journal")
    assert snapshot.exists() and journal.exists()
    if damage == "snapshot-garbage":
        snapshot.write_bytes(b"\xff\x00 not a graph {")
    elif damage == "snapshot-not-a-graph":
        snapshot.write_text("[1, 2]")
    elif damage == "snapshot-bad-seq":
        raw = json.loads(snapshot.read_text(encoding="utf-8"))
        raw["journal_seq"] = "x"
        snapshot.write_text(json.dumps(raw))
    elif damage == "journal-malformed-entry":
        journal.write_text('{"seq": 99, "op": "apply", "extractions": [{"turn_id": "x"}]}\n')
    elif damage == "journal-unknown-op":
        journal.write_text('{"seq": 99, "op": "drop_everything"}\n')
    else:  # journal-not-utf8
        journal.write_bytes(b'{"seq": 99, "op": "\xff"}\n')


GRAPH_DAMAGE = [
    "snapshot-garbage",
    "snapshot-not-a-graph",
    "snapshot-bad-seq",
    "journal-malformed-entry",
    "journal-unknown-op",
    "journal-not-utf8",
]


def _graph_with_journal(tmp_path: Path) -> CogMemory:
    """A persistent memory whose graph is a snapshot (first turns) plus a journal (the others)."""
    mem = _memory(tmp_path)
    turns = make_turns(NS, TEXTS)
    mem.add_turns(turns[:2])
    mem.add_turns(turns[2:])
    return mem


@pytest.mark.parametrize("damage", GRAPH_DAMAGE)
def test_rebuild_graph_repairs_any_damaged_graph_file(tmp_path: Path, damage: str, caplog) -> None:
    mem = _graph_with_journal(tmp_path)
    _damage_graph(mem, damage)
    snapshot = mem.graphs.path(NS)
    del mem
    expected = GraphMemory().rebuild(NS, make_turns(NS, TEXTS), RuleExtractor())

    again = _memory(tmp_path)
    with pytest.raises(StoreError) as info:
        again.graph(NS)
    assert "CogMemory.rebuild_graph(namespace)" in str(info.value)  # the error names the call that works
    with caplog.at_level(logging.WARNING, logger="langmem_cog.graph"):
        rebuilt = again.rebuild_graph(NS)
    assert "unreadable graph" in caplog.text
    assert graphs_equal(rebuilt, expected)
    assert graphs_equal(again.graph(NS), expected)
    assert again.store.count(NS) == len(TEXTS)
    # Repaired on disk too: a fresh open reads it, and the memory keeps working.
    reopened = _memory(tmp_path)
    assert graphs_equal(reopened.graph(NS), expected)
    assert not snapshot.with_name(snapshot.stem + ".journal").exists()
    reopened.add_turns(make_turns(NS, ["My brother Tom moved to Oslo"], id_prefix="late"))
    assert reopened.store.count(NS) == len(TEXTS) + 1
    assert "late0" in _memory(tmp_path).graph(NS).graph["turns"]


@pytest.mark.parametrize("damage", ["snapshot-garbage", "journal-malformed-entry"])
def test_rebuild_graph_works_without_touching_the_damaged_graph_first(tmp_path: Path, damage: str) -> None:
    mem = _graph_with_journal(tmp_path)
    _damage_graph(mem, damage)
    del mem
    expected = GraphMemory().rebuild(NS, make_turns(NS, TEXTS), RuleExtractor())
    assert graphs_equal(_memory(tmp_path).rebuild_graph(NS), expected)
    assert graphs_equal(_memory(tmp_path).graph(NS), expected)


@pytest.mark.parametrize("damage", ["snapshot-garbage", "journal-unknown-op"])
def test_the_graph_memory_recipe_in_the_error_works(tmp_path: Path, damage: str) -> None:
    mem = _graph_with_journal(tmp_path)
    _damage_graph(mem, damage)
    turns = mem.store.get_turns(NS)
    del mem
    graphs = GraphMemory(tmp_path)
    with pytest.raises(StoreError, match=r"GraphMemory\.rebuild\(namespace, turn_store\.get_turns\(namespace\)"):
        graphs.graph(NS)
    # The recipe, as printed: GraphMemory.rebuild(...) then GraphMemory.save(namespace).
    rebuilt = graphs.rebuild(NS, turns, RuleExtractor())
    graphs.save(NS)
    assert graphs_equal(GraphMemory(tmp_path).graph(NS), rebuilt)
    assert rebuilt.number_of_nodes() > 0


# ---------------------------------------------------------------------- Chroma's database (defect 6)
def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("damage", ["header-garbage", "random-bytes"])
def test_a_damaged_chroma_database_is_a_store_error_naming_the_file(tmp_path: Path, damage: str) -> None:
    good = tmp_path / "good"
    _memory(good).add_turns(make_turns(NS, TEXTS))
    data = tmp_path / "damaged"  # a copy: this process's Chroma system of ``good`` stays as it is
    shutil.copytree(good, data)
    db = data / "chroma" / "chroma.sqlite3"
    healthy = db.read_bytes()
    if damage == "header-garbage":
        db.write_bytes(bytes(range(100)) + healthy[100:])  # the first 100 bytes (SQLite's header) overwritten
    else:
        db.write_bytes(random.Random(7).randbytes(64 * 1024))
    before = _files(data)
    for opener in (_memory, lambda d: TurnStore(CogMemConfig(data_dir=d), embeddings=FakeEmbeddings())):
        with pytest.raises(StoreError) as info:  # was chromadb's InternalError: "file is not a database"
            opener(data)
        message = str(info.value)
        assert str(db) in message and "damaged" in message
        assert "backup" in message and "re-ingest" in message  # what to do
    assert _files(data) == before  # nothing written
    db.write_bytes(healthy)  # restored from the "backup": the same process opens it now
    assert _memory(data).store.count(NS) == len(TEXTS)


def _make_read_only(paths: list[Path]) -> Callable[[], None]:
    """Make ``paths`` read-only for this process (file modes; ``chattr +i`` as root, whom modes do not
    bind); returns the undo."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in paths}
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)

        def restore() -> None:
            for p, mode in modes.items():
                p.chmod(mode)

        return restore
    chattr = shutil.which("chattr")
    done: list[Path] = []

    def undo() -> None:
        for p in done:
            subprocess.run([chattr, "-i", str(p)], check=False, capture_output=True)

    for p in paths:
        if chattr is None or subprocess.run([chattr, "+i", str(p)], capture_output=True).returncode != 0:
            undo()
            pytest.skip("root ignores file modes and chattr +i is not available here")
        done.append(p)
    return undo


@pytest.mark.parametrize("what", ["chroma-database", "data-dir"])
def test_a_read_only_chroma_database_or_data_dir_is_a_store_error_and_nothing_is_written(
    tmp_path: Path, what: str
) -> None:
    source = tmp_path / "source"
    _memory(source).add_turns(make_turns(NS, TEXTS))
    data = tmp_path / "data"  # a copy: a path this process's Chroma has not opened yet (it keeps connections)
    shutil.copytree(source, data)
    db = data / "chroma" / "chroma.sqlite3"
    paths = [db] if what == "chroma-database" else sorted(data.rglob("*"), reverse=True) + [data]
    before = _files(data)
    undo = _make_read_only(paths)
    try:
        for opener in (_memory, lambda d: TurnStore(CogMemConfig(data_dir=d), embeddings=FakeEmbeddings())):
            try:  # reads may work where they can; a write never does, and every failure is named
                opened = opener(data)
                store = opened.store if isinstance(opened, CogMemory) else opened
                assert store.count(NS) == len(TEXTS)
                opened.add_turns(make_turns(NS, ["A turn for a read-only data dir"], id_prefix="ro"))
                pytest.fail(f"{opener} wrote to a read-only {what}")
            except StoreError as exc:  # was chromadb's InternalError / a raw PermissionError
                message = str(exc)
            want = "cannot open the Chroma database" if what == "chroma-database" else "cannot open the lock file"
            assert want in message and str(data) in message, message
            assert "writable" in message and "Nothing was written" in message, message
        assert _files(data) == before  # not one byte changed
    finally:
        undo()
    mem = _memory(data)  # made writable again: the same process opens and writes it
    assert mem.add_turns(make_turns(NS, ["A turn once writable"], id_prefix="rw")) == ["rw0"]
    assert mem.store.count(NS) == len(TEXTS) + 1


def test_a_chroma_read_that_fails_in_a_read_only_data_dir_names_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma may fail a read of a read-only embedded database first ("Error purging logs", when it has
    log entries to purge): a write still says that the data directory must be writable."""
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    mem = _memory(tmp_path)
    mem.add_turns(make_turns(NS, TEXTS))

    def purging(self, *args, **kwargs):
        raise InternalError("Error executing plan: Error sending backfill request to compactor: Error purging logs")

    undo = _make_read_only(sorted(tmp_path.rglob("*"), reverse=True) + [tmp_path])
    try:
        monkeypatch.setattr(Collection, "get", purging)
        # The first file the write needs says so: a pending-add marker (graph/pending), else the lock file.
        with pytest.raises(StoreError, match="(cannot open the lock file|cannot write a pending-add marker).*"
                                             "writable") as info:
            mem.add_turns(make_turns(NS, ["A turn for a read-only data dir"], id_prefix="ro"))
        assert str(tmp_path) in str(info.value)
    finally:
        undo()
    with pytest.raises(StoreError, match="cannot read the collection.*purging logs"):  # writable: Chroma's own error
        mem.add_turns(make_turns(NS, ["A turn for a read-only data dir"], id_prefix="ro"))


def test_a_data_dir_made_read_only_while_open_still_reads_and_refuses_writes_by_name(tmp_path: Path) -> None:
    mem = _memory(tmp_path)
    mem.add_turns(make_turns(NS, TEXTS))
    before = _files(tmp_path)
    undo = _make_read_only(sorted(tmp_path.rglob("*"), reverse=True) + [tmp_path])
    try:
        # The first file the write needs says so: a pending-add marker (graph/pending), else the lock file.
        with pytest.raises(StoreError, match="(cannot open the lock file|cannot write a pending-add marker).*"
                                             "writable") as info:
            mem.add_turns(make_turns(NS, ["A turn for a read-only data dir"], id_prefix="ro"))
        assert str(tmp_path) in str(info.value)
        assert mem.store.count(NS) == len(TEXTS)  # reads keep working
        assert mem.store.search(NS, UNIQUE["t2"], k=1)[0].turn.id == "t2"
        assert _files(tmp_path) == before
    finally:
        undo()
    # (A write right after this may still fail: Chroma can keep a database connection it opened read-only
    # meanwhile. It is then a StoreError, and an identical retry completes it, as for any failed write.)
    assert mem.store.count(NS) == len(TEXTS)

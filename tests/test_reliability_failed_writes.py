"""Failed writes: ``add_turns`` is all or nothing from the caller's view (issue 21, defect 1).

A failed call either stored nothing, or retrying the same call completes it with one copy of
each turn; every failure is a :class:`LangMemCogError` that says what to fix. Faults are injected
where the real ones strike: the BM25 log (read-only, a full disk at fsync, a write cut short by
a full disk), Chroma's write (a full disk before it, ``InternalError: Error in compaction`` after
it, an undo that fails too) and the graph journal. Before the fix these gave a raw
``PermissionError`` / ``InternalError``, stored the turns anyway, and the retry raised
:class:`DuplicateTurnError`.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from chromadb.api.models.Collection import Collection
from chromadb.errors import InternalError
from fakes import FakeEmbeddings, make_turns

from langmem_cog import CogMemConfig
from langmem_cog import lexical as lexical_module
from langmem_cog.errors import DuplicateTurnError, ExtractionError, LangMemCogError, StoreError
from langmem_cog.graph.rules import RuleExtractor
from langmem_cog.graph.store import graphs_equal
from langmem_cog.memory import CogMemory
from langmem_cog.records import Turn

NS = "failed-writes"
TEXTS = ["I adopted a puppy called Rex", "My sister paints sunsets", "I ran the Berlin marathon"]
#: The turn each failing call adds, and a word only it has.
(NEW,) = make_turns(NS, ["We are planning a trip to Japan"], id_prefix="new")
WORD = "Japan"


def _memory(tmp_path: Path, **kwargs) -> CogMemory:
    return CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings(), **kwargs)


def _filled(tmp_path: Path) -> CogMemory:
    mem = _memory(tmp_path)
    mem.add_turns(make_turns(NS, TEXTS))
    return mem


def _log_ids(tmp_path: Path) -> list[str]:
    (log,) = sorted((tmp_path / "lexical").glob("*.jsonl"))
    return [json.loads(line)["id"] for line in log.read_text(encoding="utf-8").splitlines()]  # every line whole


def _assert_agree(mem: CogMemory, ids: set[str]) -> None:
    """count, get_turns, BM25 search and the graph all hold exactly ``ids``."""
    assert mem.store.count(NS) == len(ids)
    assert {t.id for t in mem.store.get_turns(NS)} == ids
    if NEW.id in ids:
        hit = mem.store.search(NS, WORD, k=1, mode="lexical")[0]
        assert hit.turn.id == NEW.id and hit.lexical_score > 0
    assert set(mem.graph(NS).graph["turns"]) == ids


def _fail_for(suffix: str, fault: OSError):
    """An ``os.fsync`` that raises ``fault`` for files named ``*suffix`` (a full disk at the sync)."""
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(suffix):
            raise fault
        real(fd)

    return fsync


# ---------------------------------------------------------------------- the BM25 log
def _break_bm25_log(tmp_path: Path, fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if fault == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root ignores file modes: the patched variants inject the same fault")
        for p in (tmp_path / "lexical", *(tmp_path / "lexical").iterdir()):
            p.chmod(0o555 if p.is_dir() else 0o444)
    elif fault == "fsync-enospc":
        monkeypatch.setattr(os, "fsync", _fail_for(".jsonl", OSError(errno.ENOSPC, "No space left on device")))
    else:  # "partial-write": the disk fills up half-way through the line

        def half(fd: int, payload: bytes) -> None:
            os.write(fd, payload[: len(payload) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(lexical_module, "_write_all", half)


def _mend_bm25_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    for p in (tmp_path / "lexical", *(tmp_path / "lexical").iterdir()):
        p.chmod(0o755 if p.is_dir() else 0o644)


@pytest.mark.parametrize("fault", ["read-only", "fsync-enospc", "partial-write"])
def test_a_failed_bm25_write_is_a_store_error_and_an_identical_retry_completes_it(
    tmp_path: Path, fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _filled(tmp_path)
    (log,) = sorted((tmp_path / "lexical").glob("*.jsonl"))
    good = log.read_bytes()
    _break_bm25_log(tmp_path, fault, monkeypatch)
    with pytest.raises(LangMemCogError) as info:
        mem.add_turns([NEW])
    assert isinstance(info.value, StoreError) and not isinstance(info.value, DuplicateTurnError)
    assert "BM25" in str(info.value) and "retry the same add_turns call" in str(info.value)
    assert log.read_bytes() == good  # a failed append leaves the log as it was (no torn line)
    # Stored in Chroma (the source of truth), and the namespace still reads while the fault lasts.
    assert mem.store.count(NS) == 4
    assert mem.store.search(NS, WORD, k=1, mode="lexical")[0].turn.id == NEW.id
    _mend_bm25_log(tmp_path, monkeypatch)
    assert mem.add_turns([NEW]) == [NEW.id]
    _assert_agree(mem, {"t0", "t1", "t2", NEW.id})
    reopened = _memory(tmp_path)
    assert reopened.add_turns([NEW]) == [NEW.id]  # after a reopen too: still one copy
    _assert_agree(reopened, {"t0", "t1", "t2", NEW.id})
    assert sorted(_log_ids(tmp_path)) == sorted(["t0", "t1", "t2", NEW.id])  # each once


# ---------------------------------------------------------------------- Chroma's write
def _break_chroma_add(monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    real = Collection.add

    def add(self, *args, **kwargs):
        if fault == "enospc-before-write":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, *args, **kwargs)  # the rows reach Chroma, then its compaction fails (the reported case)
        raise InternalError("Error in compaction")

    monkeypatch.setattr(Collection, "add", add)
    if fault == "undo-fails":

        def delete(self, *args, **kwargs):
            raise InternalError("Error in compaction")

        monkeypatch.setattr(Collection, "delete", delete)


@pytest.mark.parametrize("fault", ["enospc-before-write", "internal-error-after-write"])
def test_a_failed_chroma_write_stores_nothing(tmp_path: Path, fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = _filled(tmp_path)
    told = mem.store.count(NS)
    _break_chroma_add(monkeypatch, fault)
    more = [NEW, *make_turns(NS, ["Another turn about pottery"], id_prefix="more")]
    with pytest.raises(StoreError, match="nothing of this call was stored") as info:
        mem.add_turns(more)
    assert "free space" in str(info.value)
    with pytest.raises(StoreError, match="nothing of this call was stored"):
        mem.add_turns(make_turns("brand-new-ns", ["A first turn"]))
    assert not mem.store.has_namespace("brand-new-ns")  # its collection, created for the write, is gone
    assert mem.store.count(NS) == told
    monkeypatch.undo()
    _assert_agree(_memory(tmp_path), {"t0", "t1", "t2"})  # after a reopen: what the caller was told
    assert sorted(_log_ids(tmp_path)) == ["t0", "t1", "t2"]
    assert mem.add_turns(more) == [NEW.id, "more0"]
    _assert_agree(_memory(tmp_path), {"t0", "t1", "t2", NEW.id, "more0"})


def test_a_call_over_two_namespaces_says_which_one_was_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = _filled(tmp_path)
    real, calls = Collection.add, []

    def add(self, *args, **kwargs):  # the second namespace's write fails
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, *args, **kwargs)

    monkeypatch.setattr(Collection, "add", add)
    other = make_turns("other-ns", ["A turn of another user"], id_prefix="o")
    with pytest.raises(StoreError, match=r"nothing of this call was stored in namespace 'other-ns', but its turns "
                                         rf"in '{NS}' were .*identical retry completes the call"):
        mem.add_turns([NEW, *other])
    assert mem.store.count(NS) == 4 and not mem.store.has_namespace("other-ns")  # as the message says
    monkeypatch.undo()
    assert mem.add_turns([NEW, *other]) == [NEW.id, "o0"]
    _assert_agree(_memory(tmp_path), {"t0", "t1", "t2", NEW.id})
    assert [t.id for t in _memory(tmp_path).store.get_turns("other-ns")] == ["o0"]


def test_a_chroma_write_that_cannot_be_undone_is_completed_by_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _filled(tmp_path)
    _break_chroma_add(monkeypatch, "undo-fails")
    with pytest.raises(StoreError, match="may be stored.*identical retry completes the call"):
        mem.add_turns([NEW])
    monkeypatch.undo()
    assert mem.store.count(NS) == 4  # reloaded from Chroma: the store shows what Chroma holds
    assert mem.add_turns([NEW]) == [NEW.id]
    _assert_agree(mem, {"t0", "t1", "t2", NEW.id})
    _assert_agree(_memory(tmp_path), {"t0", "t1", "t2", NEW.id})
    assert sorted(_log_ids(tmp_path)) == sorted(["t0", "t1", "t2", NEW.id])


# ---------------------------------------------------------------------- the graph
def test_a_failed_graph_journal_write_is_completed_by_an_identical_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _filled(tmp_path)  # the first add wrote the snapshot: the next one appends to the journal
    monkeypatch.setattr(os, "fsync", _fail_for(".journal", OSError(errno.EROFS, "Read-only file system")))
    with pytest.raises(StoreError, match="graph was not updated.*retry the same add_turns call"):
        mem.add_turns([NEW])
    assert mem.store.count(NS) == 4  # the raw turn is stored
    monkeypatch.undo()
    assert mem.add_turns([NEW]) == [NEW.id]
    G = mem.graph(NS)
    assert NEW.id in G.graph["turns"]
    assert any(NEW.id in d.get("provenance", ()) for _, d in G.nodes(data=True))
    _assert_agree(mem, {"t0", "t1", "t2", NEW.id})
    reopened = _memory(tmp_path)
    assert not reopened.sync_graph(NS)  # the files hold the turn: no repair needed
    assert graphs_equal(reopened.graph(NS), G)


class _FailsOnce(RuleExtractor):
    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def extract(self, turns: list[Turn]):
        if not self.failed:
            self.failed = True
            raise RuntimeError("model server unreachable")
        return super().extract(turns)


def test_a_failed_extraction_is_an_extraction_error_and_a_retry_completes_it(tmp_path: Path) -> None:
    mem = _memory(tmp_path, extractor=_FailsOnce())
    with pytest.raises(ExtractionError, match="model server unreachable.*retry the same add_turns call"):
        mem.add_turns(make_turns(NS, TEXTS))
    assert mem.add_turns(make_turns(NS, TEXTS)) == ["t0", "t1", "t2"]
    _assert_agree(mem, {"t0", "t1", "t2"})


# ---------------------------------------------------------------------- retries of completed calls
def test_an_identical_retry_of_a_completed_call_changes_nothing(tmp_path: Path) -> None:
    mem = _filled(tmp_path)
    before = (mem.store.dir_lock.read()[0], sorted(p.name for p in tmp_path.rglob("*")), _log_ids(tmp_path))
    G = mem.graph(NS).copy()
    assert mem.add_turns(make_turns(NS, TEXTS)) == ["t0", "t1", "t2"]
    assert mem.store.add_turns(make_turns(NS, TEXTS)) == ["t0", "t1", "t2"]
    assert (mem.store.dir_lock.read()[0], sorted(p.name for p in tmp_path.rglob("*")), _log_ids(tmp_path)) == before
    assert graphs_equal(mem.graph(NS), G)
    # Some stored, some new: the new ones are added, one copy of each.
    assert mem.add_turns([*make_turns(NS, TEXTS[:1]), NEW]) == ["t0", NEW.id]
    _assert_agree(_memory(tmp_path), {"t0", "t1", "t2", NEW.id})


@pytest.mark.parametrize(
    "change",
    [{"text": "I adopted a kitten called Rex"}, {"speaker": "Bob"}, {"position": 7}, {"metadata": {"mood": 1}}],
)
def test_a_retry_with_other_content_under_a_stored_id_is_a_duplicate(tmp_path: Path, change: dict) -> None:
    mem = _memory(tmp_path)
    mem.add_turns(make_turns(NS, TEXTS, metadata={"mood": True}))
    (t0,) = make_turns(NS, TEXTS[:1], metadata={"mood": True})
    with pytest.raises(DuplicateTurnError, match=r"other content: \['t0'\]"):
        mem.add_turns([NEW, t0.model_copy(update=change)])
    assert {t.id for t in mem.store.get_turns(NS)} == {"t0", "t1", "t2"}
    assert mem.store.get_turns(NS, ["t0"])[0].text == TEXTS[0]
    _assert_agree(_memory(tmp_path), {"t0", "t1", "t2"})

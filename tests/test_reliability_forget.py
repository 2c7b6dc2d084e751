"""Forgetting: ``forget(namespace)`` and ``forget(namespace, turn_ids)`` leave no trace.

A unique canary string is written in one turn; after the call, no file under the data
directory (Chroma's SQLite database and its write-ahead table, the HNSW segment files,
the BM25 logs, the graph files, temporary files) contains its bytes, the graph holds no
node derived from the turn, and the rest of the memory still works, also after reopening.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from fakes import FakeEmbeddings, make_turns
from reliability_helpers import files_with
from reliability_worker import SECRET
from test_reliability_crash import HERE, WORKER, worker_env

from langmem_cog import CogMemConfig
from langmem_cog.config import SearchSettings
from langmem_cog.errors import StoreError, UnknownNamespaceError
from langmem_cog.graph.store import GraphMemory
from langmem_cog.lexical import LexicalIndex
from langmem_cog.memory import CogMemory
from langmem_cog.storage.files import EmbeddedFiles
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
    again = CogMemory(CogMemConfig(data_dir=tmp_path, search=SearchSettings(exact_search_max=0)), embeddings=FakeEmbeddings())
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
    overrides = {"search": SearchSettings(exact_search_max=0)} if read == "search-hnsw" else {}
    writer = TurnStore(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    reader = TurnStore(CogMemConfig(data_dir=tmp_path, **overrides), embeddings=FakeEmbeddings())
    writer.add_turns(make_turns("going", TEXTS))
    writer.add_turns(make_turns("staying", TEXTS))
    assert reader.has_namespace("going")  # in step with the data dir, the collection open
    if read == "search-hnsw":
        assert reader.count("going") == len(TEXTS)  # the turns loaded too: the HNSW query is what fails
    up_to_date = reader._access.fresh

    def forget_after_the_check() -> None:
        up_to_date()
        monkeypatch.setattr(reader._access, "fresh", up_to_date)
        writer.forget_namespace("going")

    monkeypatch.setattr(reader._access, "fresh", forget_after_the_check)
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


# ---------------------------------------------------------------- interrupted deletes and forgets (issue 21, defect 2)
def _filled(tmp_path: Path, canary: str, n: int = 40) -> tuple[CogMemory, str]:
    """A memory with ``n`` turns plus the secret turn in ``doomed`` and 12 turns in ``bystander``."""
    from reliability_worker import make, secret_turn

    mem = _memory(tmp_path)
    mem.add_turns([make("doomed", j) for j in range(n)] + [secret_turn("doomed", n, canary)])
    mem.add_turns([make("bystander", j) for j in range(12)])
    assert files_with(tmp_path, canary.encode())
    return mem, "doomed"


def _bystander_intact(mem: CogMemory) -> None:
    from reliability_worker import make

    assert [(t.id, t.text) for t in mem.store.get_turns("bystander")] == [
        (t.id, t.text) for t in (make("bystander", j) for j in range(12))
    ]
    assert mem.store.search("bystander", "puppy guitar Maria", k=3)
    assert mem.graph("bystander").number_of_nodes() > 0


def _fail_once(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
    """Make ``owner.name`` raise once, as a crash between two steps would stop the call there."""
    real = getattr(owner, name)

    def boom(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(owner, name, real)
        raise RuntimeError(f"injected crash in {name}")

    monkeypatch.setattr(owner, name, boom)


# Where the crash lands: after Chroma's delete (before the purge of its log), in the BM25 compaction,
# before the VACUUM, in the graph's step; for a forget after delete_collection (the segment folders
# and the VACUUM left), before the VACUUM, in the graph's step.
_DELETE_POINTS = [(EmbeddedFiles, "purge_log"), (LexicalIndex, "compact"), (EmbeddedFiles, "vacuum"),
                  (GraphMemory, "save")]
_FORGET_POINTS = [(EmbeddedFiles, "remove_segment_dirs"), (EmbeddedFiles, "vacuum"), (GraphMemory, "forget")]


@pytest.mark.parametrize(("op", "owner", "name"), [("delete", o, n) for o, n in _DELETE_POINTS]
                         + [("forget", o, n) for o, n in _FORGET_POINTS])
@pytest.mark.parametrize("finish_by", ["open", "retry"])
def test_an_interrupted_delete_or_forget_is_finished_by_the_next_open_or_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str, owner: type, name: str, finish_by: str
) -> None:
    """Deterministic crash between two steps: the intent stays on disk, and the next open (a new
    memory, as after a restart) or a retry of the call replays it to completion."""
    canary = _canary()
    mem, ns = _filled(tmp_path, canary)
    _fail_once(monkeypatch, owner, name)
    with pytest.raises(StoreError, match="did not complete .*injected crash.*finished by a retry"):
        mem.delete_turns(ns, [SECRET]) if op == "delete" else mem.forget(ns)
    assert len(list((tmp_path / "intents").glob("*.json"))) == 1  # recorded, not finished
    assert files_with(tmp_path, canary.encode())  # the text is still on disk somewhere
    if finish_by == "open":
        mem = _memory(tmp_path)
    else:
        assert (mem.delete_turns(ns, [SECRET]) if op == "delete" else mem.forget(ns)) in (0, False)
    assert list((tmp_path / "intents").glob("*")) == []
    assert files_with(tmp_path, canary.encode()) == [] and files_with(tmp_path, canary.title().encode()) == []
    if op == "delete":
        assert [t.id for t in mem.store.get_turns(ns)] == [f"t{j}" for j in range(40)]
        assert SECRET not in mem.graph(ns).graph["turns"] and _graph_mentions(mem, ns, canary) == []
    else:
        assert not mem.store.has_namespace(ns) and mem.graph(ns).number_of_nodes() == 0
        assert len([p for p in (tmp_path / "chroma").iterdir() if p.is_dir()]) == 1  # the bystander's only
    _bystander_intact(mem)
    again = _memory(tmp_path)  # a second open finds nothing to do and the same memory
    assert again.store.count(ns) == (40 if op == "delete" else 0)
    _bystander_intact(again)
    assert files_with(tmp_path, canary.encode()) == []


@pytest.mark.parametrize("recorded_by", ["this process", "a dead process"])
def test_a_pending_delete_is_finished_before_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded_by: str
) -> None:
    """A long-lived second memory on the data dir: its next write finishes the deletion first (reopening its
    Chroma system first when another process recorded it: that process never announced its writes)."""
    canary = _canary()
    mem, ns = _filled(tmp_path, canary)
    other = _memory(tmp_path)
    _fail_once(monkeypatch, EmbeddedFiles, "purge_log")
    with pytest.raises(StoreError):
        mem.delete_turns(ns, [SECRET])
    if recorded_by == "a dead process":
        (intent,) = (tmp_path / "intents").glob("*.json")
        intent.write_text(json.dumps({**json.loads(intent.read_text()), "pid": 2**22 + 17}))
    # (An existing namespace: a collection created now could take heap garbage holding the text; see
    # docs/RELIABILITY.md, "Forgetting", chroma-core/chroma#7688.)
    other.add_turns(make_turns("bystander", ["a later write"], id_prefix="late"))
    assert files_with(tmp_path, canary.encode()) == []
    assert list((tmp_path / "intents").glob("*")) == []
    assert SECRET not in {t.id for t in other.store.get_turns(ns)}
    for m in (mem, other):  # both keep working on the (possibly reopened) Chroma system
        assert m.store.count(ns) == 40 and m.store.count("bystander") == 13
        assert [h.turn.id for h in m.store.search("bystander", "a later write", k=1)] == ["late0"]
    mem.add_turns(make_turns(ns, ["and one more"], id_prefix="more"))
    assert other.store.count(ns) == 41
    assert files_with(tmp_path, canary.encode()) == []


def test_a_retry_of_a_delete_whose_turns_are_gone_still_purges_their_text(tmp_path: Path) -> None:
    """Chroma's delete went through but the purge of its log did not (the state the old code left after a
    kill, with no intent): the retry finds 0 turns, returns 0, and still removes the text."""
    canary = _canary()
    mem, ns = _filled(tmp_path, canary)
    mem.store._spaces.collection(ns, create=False).delete(ids=[SECRET])  # Chroma's part only
    assert tmp_path / "chroma" / "chroma.sqlite3" in files_with(tmp_path, canary.encode())
    reopened = _memory(tmp_path)
    assert reopened.delete_turns(ns, [SECRET]) == 0
    assert files_with(tmp_path, canary.encode()) == []
    assert reopened.store.count(ns) == 40


def test_a_turnstore_alone_leaves_the_graph_step_to_the_next_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare TurnStore replays the store's steps of a CogMemory's interrupted delete and keeps the intent
    (marked ``store_done``) until a CogMemory opens and runs the graph's step."""
    canary = _canary()
    mem, ns = _filled(tmp_path, canary)
    _fail_once(monkeypatch, GraphMemory, "save")
    with pytest.raises(StoreError):
        mem.delete_turns(ns, [SECRET])
    store = TurnStore(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    (intent,) = (tmp_path / "intents").glob("*.json")
    assert json.loads(intent.read_text())["store_done"] is True
    assert [p.parent.name for p in files_with(tmp_path, canary.encode())] == ["graph"]  # only the graph's copy left
    store.add_turns(make_turns("bystander-2", ["another write"]))  # does not redo the store's steps
    assert intent.exists()
    _memory(tmp_path)
    assert files_with(tmp_path, canary.encode()) == [] and not intent.exists()


def test_a_delete_zeroes_the_unused_hnsw_slots_that_chroma_fills_with_heap_garbage(tmp_path: Path) -> None:
    """Chroma writes a new HNSW segment's files at full capacity from malloc'd memory (chroma-core/chroma#7688),
    so text that was on the writing process's heap (a deleted turn's among it) can land in the slots no element
    uses. Every delete and forget zeroes those slots of every segment, and only those."""
    import struct

    canary = _canary()
    mem, ns = _filled(tmp_path, canary)
    header = struct.Struct("<iQQQQQQiIQQQdQ")
    segments = [p for p in (tmp_path / "chroma").iterdir() if p.is_dir()]
    for seg in segments:  # plant the garbage Chroma may write, past the live elements
        count, per_element = header.unpack((seg / "header.bin").read_bytes())[3:5]
        for name, start in (("data_level0.bin", count * per_element), ("length.bin", count * 4)):
            data = bytearray((seg / name).read_bytes())
            assert len(data) >= start + 64
            data[start + 8 : start + 8 + len(canary)] = canary.encode()
            (seg / name).write_bytes(bytes(data))
    assert mem.delete_turns("bystander", ["no-such-turn"]) == 0  # any delete scrubs
    assert not [p for p in files_with(tmp_path, canary.encode()) if p.parent in segments]
    assert mem.delete_turns(ns, [SECRET]) == 1
    assert files_with(tmp_path, canary.encode()) == []
    again = CogMemory(CogMemConfig(data_dir=tmp_path, search=SearchSettings(exact_search_max=0)), embeddings=FakeEmbeddings())
    assert again.store.count(ns) == 40
    _bystander_intact(again)


def test_a_write_zeroes_the_unused_hnsw_slots_of_the_segments_it_changed(tmp_path: Path) -> None:
    """The same garbage can land in a segment that Chroma creates or grows during a later *write* of the same
    process, after a delete freed the deleted turn's text on its heap (``make reliability`` caught one such
    file: a new segment written by the check's final ``add_turns``). A write zeroes the unused slots of the
    segments whose files changed since the store last zeroed them."""
    import struct

    canary = _canary()
    mem, ns = _filled(tmp_path, canary)
    assert mem.delete_turns(ns, [SECRET]) == 1 and files_with(tmp_path, canary.encode()) == []
    header = struct.Struct("<iQQQQQQiIQQQdQ")
    (seg, *_) = [p for p in (tmp_path / "chroma").iterdir() if p.is_dir()]
    count, per_element = header.unpack((seg / "header.bin").read_bytes())[3:5]
    data = bytearray((seg / "data_level0.bin").read_bytes())
    data[count * per_element + 8 : count * per_element + 8 + len(canary)] = canary.encode()
    (seg / "data_level0.bin").write_bytes(bytes(data))  # as if Chroma had rewritten it from its heap
    assert files_with(tmp_path, canary.encode())
    mem.add_turns(make_turns("bystander-3", ["a later write"]))
    assert files_with(tmp_path, canary.encode()) == []
    assert mem.store.count(ns) == 40 and mem.store.count("bystander-3") == 1


# ---------------------------------------------------------------- SIGKILL during delete_turns / forget
KILL_TOTAL = 120  # turns besides the secret one: Chroma's HNSW segment persists in between


def _kill_round(data_dir: Path, op: str, canary: str, rng: random.Random, max_wait: float | None) -> dict:
    """Run the worker (store the turns, then ``op``); kill it ``uniform(0, max_wait)`` s into the call
    (``None``: let it finish). Returns what was left: a pending intent, the canary on disk, the time taken."""
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), str(data_dir), "doomed", str(KILL_TOTAL), "0", "--then", op, "--canary", canary],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    while line and not line.startswith("READY"):
        line = proc.stdout.readline()
    assert line.startswith("READY"), proc.stderr.read()
    delay = None if max_wait is None else rng.uniform(0.0, max_wait)
    if delay is not None:
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.002)
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
    else:
        killed = False
    out, err = proc.communicate(timeout=600)
    if not killed:
        assert proc.returncode == 0 and "DONE" in out, err[-3000:]
    took = [float(x.split()[1]) for x in out.splitlines() if x.startswith("TOOK ")]
    return {
        "dir": str(data_dir), "op": op, "canary": canary, "killed": killed, "took": took[0] if took else None,
        "mid_call": killed and not took, "delay_ms": None if delay is None else round(1000 * delay),
        "pending": len(list((data_dir / "intents").glob("*.json"))) if (data_dir / "intents").is_dir() else 0,
        "on_disk": bool(files_with(data_dir, canary.encode())),
    }


_CHECK = """
import json, sys
sys.path[:0] = [{root!r}, {here!r}]
from fakes import FakeEmbeddings
from reliability_helpers import files_with
from reliability_worker import KEEP_TURNS, SECRET, make
from langmem_cog import CogMemConfig
from langmem_cog.errors import LangMemCogError
from langmem_cog.memory import CogMemory
from pathlib import Path

def hits(d, canary):
    return sorted({{str(p.relative_to(d)) for c in (canary, canary.title()) for p in files_with(d, c.encode())}})

out = []
for spec in json.loads(sys.argv[1]):
    d, op, canary, r = Path(spec["dir"]), spec["op"], spec["canary"], {{}}
    try:
        cfg = CogMemConfig(data_dir=d)
        mem = CogMemory(cfg, embeddings=FakeEmbeddings())  # the open finishes what the kill cut short
        pending = getattr(mem.store, "pending_intents", list)  # (list: a store without intents)
        r["pending_after_open"] = len(pending())
        ids = {{t.id for t in mem.store.get_turns("doomed")}}
        r["gone_after_open"] = SECRET not in ids if op == "delete" else not ids
        r["hits_after_open"] = hits(d, canary)
        r["retry"] = mem.delete_turns("doomed", [SECRET]) if op == "delete" else mem.forget("doomed")
        r["hits_after_retry"] = hits(d, canary)
        r["pending_after_retry"] = len(pending())
        want = {{f"t{{j}}" for j in range({total})}} if op == "delete" else set()
        keep = [make("doomed-keep", j) for j in range(KEEP_TURNS)]
        again = CogMemory(cfg, embeddings=FakeEmbeddings())
        lost = 0
        for m in (mem, again):
            lost += len(want - {{t.id for t in m.store.get_turns("doomed")}})
            got = {{t.id: t.text for t in m.store.get_turns("doomed-keep")}}
            lost += sum(got.get(t.id) != t.text for t in keep)
            assert m.store.search("doomed-keep", "puppy guitar Maria", k=3), "search failed"
            assert m.graph("doomed-keep").number_of_nodes() > 0, "bystander graph lost"
            assert SECRET not in m.graph("doomed").graph.get("turns", {{}}), "graph kept the secret turn"
            assert len({{t.id for t in m.store.get_turns("doomed")}}) == len(want), "unexpected turns"
        r["lost"] = lost
        mem.add_turns([make("doomed-keep", KEEP_TURNS)])  # still writable
        r["hits_final"] = hits(d, canary)
    except Exception as exc:
        r["exc"] = f"{{type(exc).__name__}}: {{exc}}"[:500]
        r["raw"] = not isinstance(exc, LangMemCogError)
    out.append(r)
print("RESULT " + json.dumps(out))
"""


def _check_rounds(rounds: list[dict]) -> list[dict]:
    """Open each round's data dir in a fresh process (10 dirs a process), retry the call, grep every file."""
    results = []
    for start in range(0, len(rounds), 10):
        part = rounds[start : start + 10]
        code = _CHECK.format(root=str(HERE.parent), here=str(HERE), total=KILL_TOTAL)
        proc = subprocess.run([sys.executable, "-c", code, json.dumps(part)], capture_output=True, text=True,
                              env=worker_env(), timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (line,) = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        results += [{**spec, **res} for spec, res in zip(part, json.loads(line[7:]), strict=True)]
    return results


def run_forget_kills(root: Path, kills: int, seed: int) -> dict[str, dict[str, int]]:
    """``kills`` SIGKILLs at random moments of ``delete_turns`` and as many of ``forget``, each in a fresh
    data dir, after one uninterrupted run of each that times the call (kills land in 0-100% of it)."""
    rng = random.Random(seed)
    stats: dict[str, dict[str, int]] = {}
    for op in ("delete", "forget"):
        first = _kill_round(root / f"{op}-calibrate", op, _canary(), rng, None)
        max_wait = max(0.02, float(first["took"]))
        rounds = [first] + [_kill_round(root / f"{op}-{i}", op, _canary(), rng, max_wait) for i in range(kills)]
        results = _check_rounds(rounds)
        s = {
            "runs": len(results), "killed": sum(r["killed"] for r in results),
            "killed_mid_call": sum(r["mid_call"] for r in results),
            "intent_pending_at_kill": sum(r["pending"] > 0 for r in results),
            "canary_on_disk_at_kill": sum(r["on_disk"] for r in results),
            "gone_after_open": sum(bool(r.get("gone_after_open")) for r in results),
            "canary_hits_after_open_when_gone": sum(len(r.get("hits_after_open", [])) for r in results
                                                    if r.get("gone_after_open")),
            "canary_hits_after_retry": sum(len(r.get("hits_after_retry", [])) for r in results),
            "canary_hits_final": sum(len(r.get("hits_final", [])) for r in results),
            "intents_left": sum(r.get("pending_after_open", 0) + r.get("pending_after_retry", 0) for r in results),
            "acked_turns_lost": sum(r.get("lost", 0) for r in results),
            "exceptions": sum("exc" in r for r in results),
            "raw_exceptions": sum(bool(r.get("raw")) for r in results),
            "max_wait_ms": round(1000 * max_wait),
        }
        stats[op] = s
        bad = [r for r in results if "exc" in r or r.get("hits_after_retry") or r.get("hits_final")
               or (r.get("gone_after_open") and r.get("hits_after_open")) or r.get("lost")
               or r.get("pending_after_open") or r.get("pending_after_retry")]
        assert not bad, f"{op}: {stats[op]}\n" + "\n".join(json.dumps(r) for r in bad[:5])
    return stats


def test_sigkill_during_delete_or_forget_leaves_no_text_behind(tmp_path: Path) -> None:
    stats = run_forget_kills(tmp_path, kills=3, seed=21)
    print(f"\nforget kills: {json.dumps(stats)}")
    assert all(s["killed"] >= 1 for s in stats.values()), stats


@pytest.mark.reliability
def test_fifty_sigkills_during_delete_and_forget_leave_no_text_behind(tmp_path: Path) -> None:
    kills = int(os.environ.get("LMC_FORGET_KILLS", "50"))  # 50 of each by default (issue 21, defect 2)
    stats = run_forget_kills(tmp_path, kills=kills, seed=2102)
    print(f"\nforget kills: {json.dumps(stats)}")
    assert all(s["killed"] >= kills * 0.5 for s in stats.values()), stats

"""Concurrency: threads (and two processes) ingesting and searching one data directory end in
the same state as a sequential run, with no corrupted index or graph file.

Threads share one :class:`CogMemory`; processes each open their own on the same
directory (writes serialise on ``data_dir/.lmc.lock``, and a process reloads its caches
and its embedded Chroma system when the other wrote). The final state is compared with a
sequential run of the same batches and checked in a fresh process: turns, BM25 index,
graph (equal to a rebuild from the raw store), Chroma's HNSW index (every turn is its own
nearest neighbour).
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fakes import FakeEmbeddings
from reliability_worker import WORDS, make
from test_reliability_crash import HERE, WORKER, worker_env

from langmem_cog import CogMemConfig
from langmem_cog.graph.store import graphs_equal
from langmem_cog.memory import CogMemory


def _batches(namespaces: list[str], threads: int, per_thread: int, seed: int) -> list[list[list]]:
    """Per thread, a list of batches (1-3 turns) over shared namespaces, ids unique per thread."""
    rng = random.Random(seed)
    out = []
    for w in range(threads):
        turns = [make(rng.choice(namespaces), j, prefix=f"w{w}-") for j in range(per_thread)]
        batches, i = [], 0
        while i < len(turns):
            size = rng.randint(1, 3)
            batch = turns[i : i + size]
            # one namespace per batch keeps the graph update of a batch in one namespace
            batches.extend([[t] for t in batch] if len({t.namespace for t in batch}) > 1 else [batch])
            i += size
        out.append(batches)
    return out


def _state(mem: CogMemory, namespaces: list[str]) -> dict[str, dict[str, tuple]]:
    return {
        ns: {t.id: (t.text, t.speaker, t.timestamp, t.position) for t in mem.store.get_turns(ns)}
        for ns in namespaces
        if mem.store.has_namespace(ns)
    }


def _check_fresh_process(data_dir: Path, namespaces: list[str]) -> dict[str, int]:
    """Open the data directory in a new process and check every index against the raw turns."""
    code = f"""
import sys
sys.path[:0] = [{str(HERE.parent)!r}, {str(HERE)!r}]
import numpy as np
from fakes import FakeEmbeddings
from langmem_cog import CogMemConfig
from langmem_cog.memory import CogMemory
from langmem_cog.graph.store import graphs_equal
mem = CogMemory(CogMemConfig(data_dir={str(data_dir)!r}), embeddings=FakeEmbeddings())
for ns in {namespaces!r}:
    turns = mem.store.get_turns(ns)
    ids = {{t.id for t in turns}}
    G = mem.graphs.graph(ns)  # as saved, no repair
    assert set(G.graph["turns"]) == ids, (ns, "graph file out of step")
    assert set(mem.store._spaces.lexical_index(ns).ids) == ids, (ns, "bm25 log out of step")
    col = mem.store._spaces.collection(ns, create=False)
    assert col.count() == len(ids)
    vecs = mem.store.embed_texts([t.memory_text for t in turns])
    res = col.query(query_embeddings=vecs, n_results=min(3, len(ids)), include=["distances"])
    # Every turn's own vector is in the index: it comes back at distance ~0 (two texts can share
    # a FakeEmbeddings vector through hash collisions, so a tie may list the other one first).
    for t, got, dist in zip(turns, res["ids"], res["distances"]):
        assert t.id in [g for g, d in zip(got, dist) if d < 1e-5], (ns, t.id, got, dist, "HNSW index out of step")
    rebuilt = mem.graphs.rebuild(ns, turns, mem.extractor)
    again = CogMemory(CogMemConfig(data_dir={str(data_dir)!r}), embeddings=FakeEmbeddings())
    again.consolidate(ns)  # Facts are made by consolidate / rebuild, not by each add
    assert graphs_equal(again.graphs.graph(ns), rebuilt), (ns, "graph differs from a rebuild from the raw store")
    print("COUNT", ns, len(ids))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=worker_env(), timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    counts = {}
    for line in out.stdout.splitlines():
        if line.startswith("COUNT"):
            _, ns, n = line.split()
            counts[ns] = int(n)
    return counts


def run_threads(tmp_path: Path, threads: int, per_thread: int, searchers: int, seed: int) -> dict[str, int]:
    namespaces = [f"conc-{i}" for i in range(3)]
    plan = _batches(namespaces, threads, per_thread, seed)
    mem = CogMemory(CogMemConfig(data_dir=tmp_path / "concurrent"), embeddings=FakeEmbeddings())
    errors: list[BaseException] = []
    stop = threading.Event()
    searches = [0]

    def writer(batches: list[list]) -> None:
        try:
            for batch in batches:
                mem.add_turns(batch)
        except BaseException as exc:  # reported below
            errors.append(exc)

    def searcher(k: int) -> None:
        rng = random.Random(k)
        try:
            while not stop.is_set():
                ns = rng.choice(namespaces)
                if mem.store.has_namespace(ns):
                    hits = mem.store.search(ns, rng.choice(WORDS), k=5)
                    assert all(h.turn.namespace == ns for h in hits)
                    searches[0] += 1
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=writer, args=(b,)) for b in plan]
    readers = [threading.Thread(target=searcher, args=(k,)) for k in range(searchers)]
    for t in workers + readers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors[:3]

    sequential = CogMemory(CogMemConfig(data_dir=tmp_path / "sequential"), embeddings=FakeEmbeddings())
    for batches in plan:
        for batch in batches:
            sequential.add_turns(batch)
    assert _state(mem, namespaces) == _state(sequential, namespaces)
    for ns in namespaces:
        assert set(mem.graph(ns).graph["turns"]) == set(_state(mem, namespaces)[ns])
    counts = _check_fresh_process(tmp_path / "concurrent", namespaces)
    assert sum(counts.values()) == threads * per_thread
    return {"turns": threads * per_thread, "searches": searches[0]}


def test_threads_ingesting_and_searching_match_a_sequential_run(tmp_path: Path) -> None:
    run_threads(tmp_path, threads=4, per_thread=12, searchers=2, seed=3)


@pytest.mark.reliability
def test_many_threads_match_a_sequential_run(tmp_path: Path) -> None:
    stats = run_threads(tmp_path, threads=8, per_thread=60, searchers=4, seed=4)
    print(f"\nthreads: {stats}")


def run_two_processes(tmp_path: Path, total: int) -> dict[str, int]:
    """Two writer processes, one shared namespace (different id prefixes) plus one each."""
    procs = []
    jobs = [("shared", "a"), ("shared", "b"), ("only-a", "a"), ("only-b", "b")]
    for ns, prefix in jobs:
        procs.append(
            subprocess.Popen(
                [sys.executable, str(WORKER), str(tmp_path), ns, str(total), str(len(procs)), "--search", "--prefix", prefix],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env(),
            )
        )
    for p in procs:
        out, err = p.communicate(timeout=1800)
        assert p.returncode == 0 and out.rstrip().endswith("DONE"), err[-3000:]
    counts = _check_fresh_process(tmp_path, ["shared", "only-a", "only-b"])
    assert counts == {"shared": 2 * total, "only-a": total, "only-b": total}
    # Same state as a sequential run of the same four jobs.
    seq_dir = tmp_path / "sequential"
    seq = CogMemory(CogMemConfig(data_dir=seq_dir), embeddings=FakeEmbeddings())
    for ns, prefix in jobs:
        seq.add_turns([make(ns, j, prefix) for j in range(total)])
    conc = CogMemory(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    names = ["shared", "only-a", "only-b"]
    assert _state(conc, names) == _state(seq, names)
    for ns in names:
        assert set(conc.graph(ns).graph["turns"]) == set(_state(seq, names)[ns])
        conc.consolidate(ns)  # Facts are made by consolidate / rebuild, not by each add
        assert graphs_equal(conc.graph(ns), seq.rebuild_graph(ns)), (ns, "graph differs from a rebuild")
    return counts


def test_four_processes_on_one_data_dir_match_a_sequential_run(tmp_path: Path) -> None:
    run_two_processes(tmp_path, total=10)


@pytest.mark.reliability
def test_processes_on_one_data_dir_long_run(tmp_path: Path) -> None:
    counts = run_two_processes(tmp_path, total=150)
    print(f"\nprocesses: {counts}")

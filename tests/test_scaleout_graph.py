"""Several workers, one shared graph store (issue #22, defects 3 and 4): no acknowledged graph update is lost.

The graph of a namespace lives in a LangGraph ``BaseStore`` as an append-only journal of per-writer
entries plus a snapshot that is only a cache (see ``BaseStoreGraphStore``). Two parts:

- In one process, on an ``InMemoryStore``: the interleavings that used to lose records, forced step by step
  (two commits racing, a compaction by a stale worker overwriting a newer snapshot, an entry arriving out of
  order, a rebuild racing with another worker's add, a delete scrubbing the text from the journal).
- Across processes: workers are separate processes (this file run with ``--worker``), each a ``CogMemory``
  with its own data directory on one real ``chroma run`` (127.0.0.1) and one graph store shared by all of
  them, driven over stdin/stdout like ``test_scaleout.py``. The store is a ``SqliteStore`` file (WAL mode)
  and, under ``make reliability`` (marked ``reliability``), a ``PostgresStore`` on the server of the URL in
  ``LMC_PG_URL`` (a fresh schema per run, dropped at the end; skipped when the variable is unset):
  (a) two workers make 20 single-turn adds each at the same moment, 5 runs: the shared graph holds the
  records of all 40 acknowledged turns; (b) a stale worker's add and ``sync_graph`` (and ``rebuild_graph``)
  keep the other worker's nodes; (c) the shared graph after the concurrent run equals a graph built
  sequentially from the same turns.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
# RuleExtractor-friendly sentences: events with concepts, preferences (facts) and people, shared by both workers.
TEXTS = [
    "I went hiking in the mountains with my dog Rex today.",
    "I love painting landscapes on Sunday mornings.",
    "My sister Anna and I baked a chocolate cake for the party.",
    "I started learning the guitar last week.",
    "I ran a marathon in Boston with my friend Tom.",
    "I adopted a puppy from the shelter yesterday.",
    "I hate waiting in traffic on the way to work.",
    "We visited Japan for the cherry blossom festival.",
]


def open_sqlite_store(path: Path) -> Any:
    """A ``SqliteStore`` on ``path`` that several processes can use at once (WAL, a long busy timeout)."""
    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=60)
    conn.execute("PRAGMA journal_mode=WAL")
    store = SqliteStore(conn)
    store.setup()
    return store


@contextmanager
def open_graph_store(spec: str) -> Iterator[Any]:
    """The shared graph store of ``spec``: ``sqlite:PATH`` or ``postgres:DSN`` (tables already set up)."""
    kind, _, where = spec.partition(":")
    if kind == "postgres":
        from langgraph.store.postgres import PostgresStore

        with PostgresStore.from_conn_string(where) as store:
            yield store
    else:
        store = open_sqlite_store(Path(where))
        try:
            yield store
        finally:
            store.conn.close()


def make(ns: str, tid: str, minute: int, speaker: str) -> Any:
    from langmem_cog.records import make_turn

    return make_turn(id=tid, namespace=ns, conversation_id="c1", session_id=str(minute // 20), speaker=speaker,
                     text=f"{TEXTS[minute % len(TEXTS)]} (note {minute})", timestamp=T0 + timedelta(minutes=minute),
                     position=minute)


def provenance(G: Any) -> set[str]:
    out: set[str] = set()
    for _, d in G.nodes(data=True):
        out |= set(d.get("provenance", ()))
    return out


# --------------------------------------------------------------------------- the worker process
def _worker(argv: list[str], stack: ExitStack) -> None:
    """``--worker --port P --data-dir D --graph-store SPEC``: serve commands from stdin until ``quit``."""
    from fakes import FakeEmbeddings

    from langmem_cog import CogMemConfig
    from langmem_cog.graph.backends import BaseStoreGraphStore
    from langmem_cog.graph.store import GraphMemory
    from langmem_cog.memory import CogMemory

    opt = dict(zip(argv[0::2], argv[1::2], strict=False))
    cfg = CogMemConfig.preset("server", chroma_host="127.0.0.1", chroma_port=int(opt["--port"]),
                              data_dir=Path(opt["--data-dir"]), retriever={"mode": "hybrid"})
    # Small journal thresholds: snapshots are rewritten every few commits, so compactions race too.
    store = stack.enter_context(open_graph_store(opt["--graph-store"]))
    graphs = GraphMemory(backend=BaseStoreGraphStore(store), journal_min_bytes=0, journal_ratio=0.2)
    mem = CogMemory(cfg, embeddings=FakeEmbeddings(), graph=graphs)

    def view(ns: str) -> dict[str, Any]:
        G = mem.graph(ns)
        return {"turns": sorted(G.graph.get("turns", {})), "prov": sorted(provenance(G)), "nodes": sorted(G.nodes)}

    def run(cmd: dict[str, Any]) -> Any:
        op, ns = cmd["op"], cmd.get("ns", "")
        if op == "adds":  # one add_turns call per turn, starting at the same wall-clock moment as the other worker
            time.sleep(max(0.0, cmd.get("start_at", 0) - time.time()))
            done = []
            for tid, minute, speaker in cmd["turns"]:
                mem.add_turns([make(ns, tid, minute, speaker)])
                done.append(tid)
            return done
        if op == "view":
            return view(ns)
        if op == "sync":
            return mem.sync_graph(ns)
        if op == "rebuild":
            mem.rebuild_graph(ns)
            return view(ns)
        if op == "count":
            return mem.store.count(ns)
        raise ValueError(f"unknown op {op!r}")

    from scaleout_helpers import serve

    serve(run)


if __name__ == "__main__" and "--worker" in sys.argv:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent))
    with ExitStack() as stack:
        _worker(sys.argv[sys.argv.index("--worker") + 1 :], stack)
    sys.exit(0)


# --------------------------------------------------------------------------- the tests
import pytest  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from scaleout_helpers import WorkerProcess, chroma_server_for, running  # noqa: E402

from langmem_cog.errors import StoreError  # noqa: E402
from langmem_cog.graph.backends import BaseStoreGraphStore, snapshot_key  # noqa: E402
from langmem_cog.graph.rules import RuleExtractor  # noqa: E402
from langmem_cog.graph.store import SCHEMA_VERSION, GraphMemory, graphs_equal  # noqa: E402

EXTRACTOR = RuleExtractor()


def _mem(store: Any, **kw: Any) -> GraphMemory:
    return GraphMemory(backend=BaseStoreGraphStore(store), **{"journal_min_bytes": 0, "journal_ratio": 0.2, **kw})


def _add(mem: GraphMemory, ns: str, *turns: Any) -> None:
    mem.apply(ns, EXTRACTOR.extract(list(turns)))
    mem.commit(ns)


def _sequential(ns: str, turns: list[Any]) -> Any:
    seq = GraphMemory()
    for t in sorted(turns, key=lambda t: t.timestamp):
        seq.apply(ns, EXTRACTOR.extract([t]))
    return seq.graph(ns)


# ------------------------------------------------------------------ in one process: the interleavings, forced
def test_two_commits_racing_both_stay(ns: str) -> None:
    """Both workers apply before either commits: with whole-snapshot writes the second erased the first."""
    shared = InMemoryStore()
    a, b = _mem(shared), _mem(shared)
    a.graph(ns), b.graph(ns)
    a.apply(ns, EXTRACTOR.extract([make(ns, "a0", 0, "Ann")]))
    b.apply(ns, EXTRACTOR.extract([make(ns, "b0", 1, "Bob")]))
    b.commit(ns)
    a.commit(ns)  # A never saw B's commit
    G = _mem(shared).graph(ns)
    assert set(G.graph["turns"]) == provenance(G) == {"a0", "b0"}
    assert {"person:ann", "person:bob"} <= set(G)
    # Both warm workers catch up on their next read, to the same graph.
    assert graphs_equal(a.graph(ns), G) and graphs_equal(b.graph(ns), G)


def test_a_stale_compaction_loses_nothing_and_out_of_order_entries_converge(ns: str) -> None:
    shared = InMemoryStore()
    a, b = _mem(shared, journal_ratio=0), _mem(shared, journal_ratio=0)  # a snapshot on every commit
    turns = [make(ns, f"t{i}", i, "Ann" if i % 2 else "Bob") for i in range(10)]
    _add(a, ns, turns[0])
    b.graph(ns)
    # B applies t1 while A commits t2..t5 (and rewrites the snapshot each time); B's commit then rewrites the
    # snapshot from its older view (t0, t1): a slower compaction overwriting a newer one.
    b.apply(ns, EXTRACTOR.extract([turns[1]]))
    for t in turns[2:6]:
        _add(a, ns, t)
    b.commit(ns)
    snap = BaseStoreGraphStore(shared).read_state(ns)
    assert set(snap["snapshot"]["graph"]["graph"]["turns"]) == {"t0", "t1"}  # the older snapshot won
    fresh = _mem(shared).graph(ns)
    assert set(fresh.graph["turns"]) == provenance(fresh) == {f"t{i}" for i in range(6)}
    # A's entries t2..t5 were replayed after B's t1, which sorts after them; A holds the same graph once it reads.
    assert graphs_equal(a.graph(ns), fresh) and graphs_equal(b.graph(ns), fresh)
    for t in turns[6:]:
        _add(a if t.position % 2 else b, ns, t)
    assert graphs_equal(_mem(shared).graph(ns), _sequential(ns, turns))


def test_a_rebuild_racing_with_an_add_keeps_the_add(ns: str) -> None:
    shared = InMemoryStore()
    a, b = _mem(shared), _mem(shared)
    old = [make(ns, f"t{i}", i, "Ann") for i in range(4)]
    _add(a, ns, *old)
    mark = b.journal_mark(ns)  # B reads the heads, then the raw turns (the 4 above) ...
    late = make(ns, "late", 9, "Bob")
    _add(a, ns, late)  # ... while A adds a turn B's raw view does not hold
    b.rebuild(ns, old, EXTRACTOR, seen=mark)
    b.save(ns)
    for mem in (b, a, _mem(shared)):
        G = mem.graph(ns)
        assert set(G.graph["turns"]) == provenance(G) == {"t0", "t1", "t2", "t3", "late"}
    assert graphs_equal(a.graph(ns), b.graph(ns))


def test_a_rebuild_replaces_a_damaged_snapshot(ns: str) -> None:
    shared = InMemoryStore()
    a = _mem(shared)
    turns = [make(ns, f"t{i}", i, "Ann") for i in range(3)]
    _add(a, ns, *turns)
    a.save(ns)
    BaseStoreGraphStore(shared).write(ns, {"schema_version": SCHEMA_VERSION + 99, "namespace": ns, "graph": {}})
    with pytest.raises(StoreError, match="rebuild_graph"):
        _mem(shared).graph(ns)
    b = _mem(shared)
    b.rebuild(ns, turns, EXTRACTOR, seen=b.journal_mark(ns))
    b.save(ns)
    expected = GraphMemory().rebuild(ns, turns, EXTRACTOR)
    assert graphs_equal(_mem(shared).graph(ns), expected)


def test_a_delete_scrubs_the_turn_from_the_journal_and_the_snapshot(ns: str) -> None:
    shared = InMemoryStore()
    a, b = _mem(shared), _mem(shared)
    canary = f"zq{uuid.uuid4().hex[:10]}"
    secret = make(ns, "secret", 1, "Ann").model_copy(update={"text": f"My neighbour {canary} keeps bees."})
    _add(a, ns, make(ns, "t0", 0, "Ann"), secret)
    _add(b, ns, make(ns, "t2", 2, "Bob"))
    b.save(ns)

    def stored() -> str:
        return json.dumps([it.value for ns_ in shared.list_namespaces() for it in shared.search(ns_, limit=1000)])

    assert canary in stored()  # in A's journal entry and in B's snapshot
    b.delete_turns(ns, ["secret"])  # by the worker that did not write the entry
    b.save(ns)
    assert canary not in stored()
    G = _mem(shared).graph(ns)
    assert set(G.graph["turns"]) == {"t0", "t2"} and "secret" not in provenance(G)
    assert graphs_equal(a.graph(ns), G)


def test_forget_removes_every_item_of_the_namespace(ns: str) -> None:
    shared = InMemoryStore()
    a, b = _mem(shared), _mem(shared)
    _add(a, ns, make(ns, "t0", 0, "Ann"))
    _add(b, ns, make(ns, "t1", 1, "Bob"))
    b.save(ns)
    assert a.forget(ns) is True
    key = snapshot_key(ns)
    left = [it.key for n in shared.list_namespaces() if key in n or n == ("langmem_cog", "graphs")
            for it in shared.search(n, limit=1000)]
    assert left == []
    assert b.graph(ns).number_of_nodes() == 0  # B's clock is ahead of the store's: it reloads
    _add(b, ns, make(ns, "t2", 2, "Bob"))
    assert set(_mem(shared).graph(ns).graph["turns"]) == {"t2"}


# ------------------------------------------------------------------ across processes: a Chroma server, SQLite / PostgreSQL
class Worker(WorkerProcess):
    """A worker process of this module: its own data directory, the shared Chroma server and graph store."""

    def __init__(self, port: int, data_dir: Path, graph_store: str) -> None:
        super().__init__(__file__, port, data_dir, "--graph-store", graph_store)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """A ``chroma run`` on 127.0.0.1 (a free port) for the module; skips it when the server cannot start."""
    yield from chroma_server_for(tmp_path_factory, "scaleout-graph")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.reliability)])
def graph_store(request: pytest.FixtureRequest, server: tuple[int, Path]) -> Iterator[str]:
    """The shared graph store's spec for ``open_graph_store``, its tables made once before the workers open it:
    a SQLite file, or a fresh schema on the PostgreSQL server of ``LMC_PG_URL`` (dropped at the end)."""
    if request.param == "sqlite":
        path = server[1] / "graphs.sqlite"
        open_sqlite_store(path).conn.close()
        yield f"sqlite:{path}"
        return
    url = os.environ.get("LMC_PG_URL")
    if not url:
        pytest.skip("no PostgreSQL for the shared-graph tests: set LMC_PG_URL (make reliability starts one)")
    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = f"lmc_scaleout_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            spec = "postgres:" + make_conninfo(url, options=f"-csearch_path={schema}")
            with open_graph_store(spec) as store:
                store.setup()
            yield spec
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(scope="module")
def workers(server: tuple[int, Path], graph_store: str) -> Iterator[dict[str, Worker]]:
    port, root = server
    kind = graph_store.partition(":")[0]
    made = {name: Worker(port, root / f"{name}-{kind}", graph_store) for name in ("A", "B")}
    with running(made):
        yield made


def _shared_graph(graph_store: str, ns: str) -> Any:
    """The graph as a fresh reader of the shared store holds it (no raw store, no cache)."""
    with open_graph_store(graph_store) as store:
        return GraphMemory(backend=BaseStoreGraphStore(store)).graph(ns)


@pytest.mark.parametrize("run", range(5))
def test_concurrent_single_turn_adds_keep_every_record(workers: dict[str, Worker], graph_store: str, ns: str,
                                                       run: int) -> None:
    """(a) and (c): 20 single-turn adds by each of two workers, started at the same moment."""
    a, b = workers["A"], workers["B"]
    plan = {"A": [[f"a{i}", 2 * i, "Ann"] for i in range(20)], "B": [[f"b{i}", 2 * i + 1, "Bob"] for i in range(20)]}
    start_at = time.time() + 0.5
    a.send(op="adds", ns=ns, turns=plan["A"], start_at=start_at)
    b.send(op="adds", ns=ns, turns=plan["B"], start_at=start_at)
    acked = set(a.result()) | set(b.result())
    assert len(acked) == 40
    G = _shared_graph(graph_store, ns)
    assert set(G.graph["turns"]) == acked, f"run {run}: missing {sorted(acked - set(G.graph['turns']))}"
    assert provenance(G) == acked, f"run {run}: records missing for {sorted(acked - provenance(G))}"
    for w in (a, b):  # every worker's view is the shared one, and in step with the raw store
        view = w("view", ns=ns)
        assert set(view["turns"]) == set(view["prov"]) == acked and view["nodes"] == sorted(G.nodes)
        assert w("count", ns=ns) == 40 and w("sync", ns=ns) is False
    # (c) The same graph as one built sequentially from the same turns.
    turns = [make(ns, tid, minute, who) for rows in plan.values() for tid, minute, who in rows]
    assert graphs_equal(G, _sequential(ns, turns)), f"run {run}: the shared graph differs from a sequential build"


def test_a_stale_worker_keeps_the_other_workers_nodes(workers: dict[str, Worker], graph_store: str, ns: str) -> None:
    """(b) B is warm on 6 turns; A adds 6 more; B's add, ``sync_graph`` and ``rebuild_graph`` keep A's nodes."""
    a, b = workers["A"], workers["B"]
    a("adds", ns=ns, turns=[[f"a{i}", i, "Ann"] for i in range(6)])
    warm = b("view", ns=ns)
    assert len(warm["turns"]) == 6 and b("count", ns=ns) == 6  # B's graph and raw caches hold the 6 turns
    a("adds", ns=ns, turns=[[f"a{i}", i, "Ann" if i % 2 else "Cleo"] for i in range(6, 12)])
    a_nodes = set(a("view", ns=ns)["nodes"])
    assert "person:cleo" in a_nodes and "person:cleo" not in warm["nodes"]
    b("adds", ns=ns, turns=[["b0", 30, "Bob"]])
    assert b("sync", ns=ns) is False  # in step: B caught up with the graph before comparing with the raw turns
    want = {f"a{i}" for i in range(12)} | {"b0"}
    G = _shared_graph(graph_store, ns)
    assert set(G.graph["turns"]) == provenance(G) == want
    assert a_nodes <= set(G.nodes)
    rebuilt = b("rebuild", ns=ns)  # derived from the fresh raw turns: A's 12 and B's one
    assert set(rebuilt["turns"]) == want and a_nodes <= set(rebuilt["nodes"])
    G = _shared_graph(graph_store, ns)
    assert set(G.graph["turns"]) == provenance(G) == want and a_nodes <= set(G.nodes)
    assert a("view", ns=ns)["nodes"] == sorted(G.nodes)


def _memories(server: tuple[int, Path], ns: str) -> tuple[Any, Any, InMemoryStore]:
    """Two CogMemory workers in this process: own data directories, the shared server and one graph store."""
    from fakes import FakeEmbeddings

    from langmem_cog import CogMemConfig
    from langmem_cog.memory import CogMemory

    port, root = server
    shared = InMemoryStore()

    def one(name: str) -> CogMemory:
        cfg = CogMemConfig.preset("server", chroma_host="127.0.0.1", chroma_port=port, data_dir=root / f"{name}-{ns}")
        return CogMemory(cfg, embeddings=FakeEmbeddings(), graph=_mem(shared))

    return one("ia"), one("ib"), shared


@pytest.mark.parametrize(("call", "after_read"), [("sync_graph", 2), ("rebuild_graph", 1)])
def test_a_turn_added_while_a_worker_repairs_its_graph_is_never_erased(
    server: tuple[int, Path], ns: str, call: str, after_read: int
) -> None:
    """(b), the window forced. B's graph lacks a turn of B's (a crash between its raw write and its graph
    update), so ``sync_graph`` repairs it; A's add lands just after the raw read the repair (or an explicit
    ``rebuild_graph``) works from. A rebuild from that raw view, written as the whole snapshot, erased A's turn."""
    a, b, shared = _memories(server, ns)
    a.add_turns([make(ns, f"a{i}", i, "Ann") for i in range(6)])
    assert len(b.graph(ns).graph["turns"]) == 6  # warm
    b.store.add_turns([make(ns, "b-crash", 20, "Bob")])  # the raw write only
    real = b.store.get_turns
    reads: list[int] = []

    def then_a_adds(namespace: str, ids: Any = None) -> Any:
        out = real(namespace, ids)
        reads.append(1)
        if len(reads) == after_read:
            a.add_turns([make(ns, "late", 40, "Cleo")])  # raw first, then its graph entry
        return out

    b.store.get_turns = then_a_adds  # type: ignore[method-assign]
    assert getattr(b, call)(ns)
    del b.store.get_turns
    want = {f"a{i}" for i in range(6)} | {"b-crash", "late"}
    G = _mem(shared).graph(ns)
    assert len(reads) >= after_read and set(G.graph["turns"]) == provenance(G) == want and "person:cleo" in G
    assert set(b.graph(ns).graph["turns"]) == want and b.sync_graph(ns) is False


def test_a_rebuild_supersedes_a_malformed_journal_entry(ns: str) -> None:
    shared = InMemoryStore()
    a = _mem(shared, journal_min_bytes=10**9)  # no compaction: the entries stay past the snapshot
    turns = [make(ns, f"t{i}", i, "Ann") for i in range(3)]
    for t in turns:
        _add(a, ns, t)
    backend = BaseStoreGraphStore(shared)
    key = sorted(backend.entries(ns, [f"{a.writer_id}.{s:012d}" for s in (1, 2, 3)]))[1]
    backend.rewrite_entry(ns, key, {"torn": True})
    with pytest.raises(StoreError, match="malformed"):
        _mem(shared).graph(ns)
    b = _mem(shared)
    b.rebuild(ns, turns, EXTRACTOR, seen=b.journal_mark(ns))
    b.save(ns)
    assert graphs_equal(_mem(shared).graph(ns), GraphMemory().rebuild(ns, turns, EXTRACTOR))

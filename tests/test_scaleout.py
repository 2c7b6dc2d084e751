"""Several workers on one Chroma server (issue #22, defects 1 and 2): read-your-writes across workers.

A real ``chroma run`` serves 127.0.0.1 for the module. Each worker is a separate process (this file run
as a script, ``--worker``) with its own data directory, as on two machines: they share nothing but the
server. The test drives them over stdin/stdout, one JSON command a line, one ``@``-prefixed JSON answer.

- (a) A adds turns: warm B's ``count``, hybrid / lexical / dense search (exact and HNSW paths) and
  ``get_turns`` see them at once.
- (b) A deletes a turn: B never returns it again, and B's local files lose its text (canary grep); a turn
  deleted and added again under the same id with other text is read with the new text.
- (b') A forgets the namespace: B finds none and drops its local files of it; created again with other
  turns under the same ids, B reads the new ones.
- (c) a fresh worker on an existing namespace builds its BM25 index without a repair warning.
- (d) both workers add and delete concurrently: both end with the same ids (and BM25 ids), those of a
  sequential run of the same operations.
- a version token that cannot be written fails the call, and its identical retry writes it; a query
  makes one request while nothing changed (``-s`` prints the check's cost on loopback).
"""

from __future__ import annotations

import random
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORDS = ["hiking", "puppy", "guitar", "marathon", "painting", "nurse", "Japan", "cake", "peanuts", "detective"]


# --------------------------------------------------------------------------- the worker process
def _worker(argv: list[str]) -> None:
    """``--worker --port P --data-dir D [--exact-max N]``: serve commands from stdin until ``quit``."""
    import logging
    from datetime import UTC, datetime, timedelta

    from fakes import FakeEmbeddings

    from langmem_cog import CogMemConfig
    from langmem_cog.config import SearchSettings
    from langmem_cog.records import make_turn
    from langmem_cog.store import TurnStore

    records: list[tuple[str, str]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append((record.levelname, record.getMessage()))

    logging.getLogger("langmem_cog").addHandler(Keep(level=logging.INFO))
    logging.getLogger("langmem_cog").setLevel(logging.INFO)

    opt = dict(zip(argv[0::2], argv[1::2], strict=False))
    overrides: dict[str, Any] = {}
    if "--exact-max" in opt:
        overrides["search"] = SearchSettings(exact_search_max=int(opt["--exact-max"]))
    cfg = CogMemConfig.preset("server", chroma_host="127.0.0.1", chroma_port=int(opt["--port"]),
                              data_dir=Path(opt["--data-dir"]), **overrides)
    store = TurnStore(cfg, embeddings=FakeEmbeddings())
    t0 = datetime(2024, 1, 1, tzinfo=UTC)

    def turns(ns: str, rows: list[list[Any]]) -> list[Any]:
        return [make_turn(id=tid, namespace=ns, conversation_id="c1", session_id=str(pos // 10), speaker="Ann",
                          text=text, timestamp=t0 + timedelta(minutes=pos), position=pos) for tid, text, pos in rows]

    def run(cmd: dict[str, Any]) -> Any:
        op, ns = cmd["op"], cmd.get("ns", "")
        if op == "add":
            return store.add_turns(turns(ns, cmd["turns"]))
        if op == "delete":
            return store.delete_turns(ns, cmd["ids"])
        if op == "forget":
            return store.forget_namespace(ns)
        if op == "count":
            return store.count(ns)
        if op == "has":
            return store.has_namespace(ns)
        if op == "search":
            return [h.turn.id for h in store.search(ns, cmd["q"], k=cmd.get("k", 5), mode=cmd["mode"])]
        if op == "get":
            return [[t.id, t.text] for t in store.get_turns(ns, cmd.get("ids"))]
        if op == "view":  # what every index of this worker holds, after a read brought it up to date
            ids = sorted(t.id for t in store.get_turns(ns))
            return {"turns": ids, "bm25": sorted(store._spaces.lexical_index(ns).ids), "count": store.count(ns)}
        if op == "script":  # a list of add / delete commands, each followed by a search (concurrency test)
            for step in cmd["steps"]:
                run({**step, "ns": ns})
                store.search(ns, random.choice(WORDS), k=3)
            return len(cmd["steps"])
        if op == "logs":
            return records
        raise ValueError(f"unknown op {op!r}")

    from scaleout_helpers import serve

    serve(run)


if __name__ == "__main__" and "--worker" in sys.argv:
    sys.path.insert(0, str(HERE))
    _worker(sys.argv[sys.argv.index("--worker") + 1 :])
    sys.exit(0)


# --------------------------------------------------------------------------- the tests
from datetime import UTC, datetime, timedelta  # noqa: E402

import pytest  # noqa: E402
from scaleout_helpers import WorkerProcess, chroma_server_for, running  # noqa: E402

from langmem_cog.errors import StoreError  # noqa: E402


class Worker(WorkerProcess):
    """A worker process of this module: its own data directory, the shared server."""

    def __init__(self, port: int, data_dir: Path, *extra: str) -> None:
        super().__init__(__file__, port, data_dir, *extra)


def _rows(prefix: str, n: int, start: int = 0, word: str = "") -> list[list[Any]]:
    rng = random.Random(f"{prefix}:{start}")
    return [[f"{prefix}{j}", f"I talked about {rng.choice(WORDS)} and {rng.choice(WORDS)} on day {j} {word}".strip(), j]
            for j in range(start, start + n)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """A ``chroma run`` on 127.0.0.1 (a free port) for the module; skips it when the server cannot start."""
    yield from chroma_server_for(tmp_path_factory, "scaleout")


@pytest.fixture(scope="module")
def workers(server: tuple[int, Path]) -> Iterator[dict[str, Worker]]:
    """Warm workers A, B (exact search) and H (the HNSW path: ``exact_search_max=0``), own data dirs each."""
    port, root = server
    made = {"A": Worker(port, root / "A"), "B": Worker(port, root / "B"),
            "H": Worker(port, root / "H", "--exact-max", "0")}
    with running(made):
        yield made


@pytest.fixture
def ns() -> str:
    return f"so-{uuid.uuid4().hex[:12]}"


def test_a_warm_worker_sees_another_workers_adds_at_once(workers: dict[str, Worker], ns: str) -> None:
    a, b, h = workers["A"], workers["B"], workers["H"]
    a("add", ns=ns, turns=_rows("t", 30))
    for w in (b, h):  # warm: caches and BM25 index loaded, every search path used once
        assert w("count", ns=ns) == 30
        for mode in ("hybrid", "lexical", "dense"):
            assert w("search", ns=ns, q="guitar marathon", mode=mode)
    new = _rows("n", 3, start=30, word="zqxylophone quokka")
    a("add", ns=ns, turns=new)
    want = {r[0] for r in new}
    for w in (b, h):
        assert w("count", ns=ns) == 33, w.data_dir.name
        for mode in ("hybrid", "lexical", "dense"):
            hits = w("search", ns=ns, q="zqxylophone quokka", k=3, mode=mode)
            assert set(hits) == want, (w.data_dir.name, mode, hits)
        assert [i for i, _ in w("get", ns=ns, ids=sorted(want))] == sorted(want)
        view = w("view", ns=ns)
        assert len(view["turns"]) == len(view["bm25"]) == 33


def test_a_turn_another_worker_deleted_never_comes_back(workers: dict[str, Worker], ns: str) -> None:
    a, b, h = workers["A"], workers["B"], workers["H"]
    canary = f"zqcanary{random.randrange(10**8):08d}"
    a("add", ns=ns, turns=[*_rows("t", 20), ["secret", f"My neighbour {canary} keeps bees", 20]])
    for w in (b, h):
        assert w("search", ns=ns, q=canary, k=1, mode="lexical") == ["secret"]
        assert any(canary.encode() in p.read_bytes() for p in w.data_dir.rglob("*") if p.is_file()), \
            "the canary should be in the worker's BM25 log before the delete (else the grep proves nothing)"
    assert a("delete", ns=ns, ids=["secret"]) == 1
    for w in (b, h):
        for mode in ("hybrid", "lexical", "dense"):
            assert "secret" not in w("search", ns=ns, q=f"{canary} neighbour bees", k=21, mode=mode), (w, mode)
        assert w("count", ns=ns) == 20 and w("get", ns=ns, ids=["secret"]) == []
        hits = [p for p in w.data_dir.rglob("*") if p.is_file() and canary.encode() in p.read_bytes()]
        assert hits == [], f"{w.data_dir.name} keeps the deleted text in {hits}"
    # Deleted, then added again under the same id with other text: read with the new text everywhere.
    a("delete", ns=ns, ids=["t3"])
    a("add", ns=ns, turns=[["t3", "We sailed to Okinawa zqokinawa", 3]])
    for w in (b, h):
        assert w("get", ns=ns, ids=["t3"]) == [["t3", "We sailed to Okinawa zqokinawa"]]
        assert w("search", ns=ns, q="zqokinawa", k=1, mode="lexical") == ["t3"]
        assert w("search", ns=ns, q="sailed Okinawa zqokinawa", k=1, mode="dense") == ["t3"]


def test_a_namespace_another_worker_forgot_is_gone_and_its_successor_is_read(
    workers: dict[str, Worker], ns: str
) -> None:
    a, b = workers["A"], workers["B"]
    a("add", ns=ns, turns=_rows("t", 10, word="zqold1"))
    assert b("search", ns=ns, q="zqold1", k=1, mode="lexical")
    local = [p for p in b.data_dir.rglob("*") if p.is_file() and b"zqold1" in p.read_bytes()]
    assert local, "B's BM25 log should hold the namespace's words before the forget"
    assert a("forget", ns=ns) is True
    assert b("count", ns=ns) == 0 and b("has", ns=ns) is False
    assert b.answer("search", ns=ns, q="zqold1", mode="hybrid")["error"].startswith("UnknownNamespaceError")
    assert not any(p.exists() for p in local), "B keeps the local files of a forgotten namespace"
    a("add", ns=ns, turns=_rows("t", 4, word="zqnew2"))  # the same ids, other text, a new collection
    assert b("count", ns=ns) == 4
    assert all(text.endswith("zqnew2") for _, text in b("get", ns=ns))
    assert b("search", ns=ns, q="zqnew2", k=1, mode="lexical")
    assert not [p for p in b.data_dir.rglob("*") if p.is_file() and b"zqold1" in p.read_bytes()]
    assert sorted(b("view", ns=ns)["bm25"]) == ["t0", "t1", "t2", "t3"]


def test_a_fresh_worker_on_an_existing_namespace_logs_no_repair_warning(
    server: tuple[int, Path], workers: dict[str, Worker], ns: str
) -> None:
    port, root = server
    workers["A"]("add", ns=ns, turns=_rows("t", 25))
    c = Worker(port, root / f"C-{ns}")
    try:
        c.wait_ready()
        assert c("count", ns=ns) == 25
        assert c("search", ns=ns, q="puppy cake", k=3, mode="hybrid")
        logs = c("logs")
    finally:
        c.close()
    warnings = [m for level, m in logs if level not in ("DEBUG", "INFO")]
    assert warnings == [], warnings
    assert any("missing from the local BM25 log" in m for _, m in logs), logs  # built, at INFO


def test_concurrent_adds_and_deletes_of_two_workers_converge(workers: dict[str, Worker], ns: str) -> None:
    a, b = workers["A"], workers["B"]
    a("add", ns=ns, turns=_rows("base", 20))
    assert b("count", ns=ns) == 20  # B warm on the base turns
    rng = random.Random(22)
    scripts: dict[str, list[dict[str, Any]]] = {}
    for name, base in (("A", range(0, 10)), ("B", range(10, 20))):
        steps: list[dict[str, Any]] = []
        mine: list[str] = []
        others = [f"base{j}" for j in base]  # each deletes half of the base turns, cached by both
        for i in range(20):
            if i % 3 == 2 and (mine or others):
                pool = others if (others and rng.random() < 0.5) or not mine else mine
                victim = pool.pop(rng.randrange(len(pool)))
                steps.append({"op": "delete", "ids": [victim]})
            else:
                rows = _rows(f"{name.lower()}{i}-", rng.randint(1, 3), start=100 + 10 * i)
                mine += [r[0] for r in rows]
                steps.append({"op": "add", "turns": rows})
        scripts[name] = steps
    a.send(op="script", ns=ns, steps=scripts["A"])  # both run at once
    b.send(op="script", ns=ns, steps=scripts["B"])
    assert a.result() == b.result() == 20
    expected = {f"base{j}" for j in range(20)}  # a sequential run of both scripts (they touch disjoint ids)
    for steps in (scripts["A"], scripts["B"]):
        for step in steps:
            if step["op"] == "add":
                expected |= {r[0] for r in step["turns"]}
            else:
                expected -= set(step["ids"])
    for w in (a, b):
        view = w("view", ns=ns)
        assert set(view["turns"]) == expected, w.data_dir.name
        assert set(view["bm25"]) == expected and view["count"] == len(expected), w.data_dir.name


def test_a_write_whose_version_token_fails_is_announced_by_its_retry(server: tuple[int, Path], ns: str) -> None:
    """The token is written after the data; if it cannot be, the call says so and an identical retry writes it."""
    from fakes import FakeEmbeddings

    from langmem_cog import CogMemConfig
    from langmem_cog.store import TurnStore

    port, root = server

    def open_store(name: str) -> TurnStore:
        cfg = CogMemConfig.preset("server", chroma_host="127.0.0.1", chroma_port=port, data_dir=root / f"{name}-{ns}")
        return TurnStore(cfg, embeddings=FakeEmbeddings())

    a, b = open_store("wa"), open_store("wb")
    a.add_turns(_turns(ns, _rows("t", 5)))
    assert b.count(ns) == 5
    col = a._spaces.collections[ns]

    def refuse(**_: Any) -> None:
        raise ConnectionError("injected: the server went away")

    col.modify = refuse  # type: ignore[method-assign]
    extra = _turns(ns, _rows("n", 2, start=5))
    with pytest.raises(StoreError, match="version token"):
        a.add_turns(extra)
    assert a.count(ns) == 7  # stored (Chroma is the commit point), not yet announced
    del col.modify
    assert a.add_turns(extra) == ["n5", "n6"]  # the identical retry writes the token
    assert b.count(ns) == 7 and {t.id for t in b.get_turns(ns, ["n5", "n6"])} == {"n5", "n6"}


def _turns(ns: str, rows: list[list[Any]]) -> list[Any]:
    from langmem_cog.records import make_turn

    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    return [make_turn(id=i, namespace=ns, conversation_id="c1", session_id=str(p // 10), speaker="Ann", text=t,
                      timestamp=t0 + timedelta(minutes=p), position=p) for i, t, p in rows]


def test_the_freshness_check_is_one_request_per_query(server: tuple[int, Path], ns: str) -> None:
    """Per query: one small request (the version token), no listing while nothing changed. With ``-s`` it
    prints the check's cost on loopback: the median search time with and without it, and the check alone."""
    import statistics
    import time

    from fakes import FakeEmbeddings

    from langmem_cog import CogMemConfig
    from langmem_cog.store import TurnStore

    port, root = server
    cfg = CogMemConfig.preset("server", chroma_host="127.0.0.1", chroma_port=port, data_dir=root / f"cost-{ns}")
    store = TurnStore(cfg, embeddings=FakeEmbeddings())
    store.add_turns(_turns(ns, _rows("t", 1000)))
    store.search(ns, "guitar", k=5)  # warm (and caught up with its own write)
    calls = {"token": 0, "catch_up": 0}
    token, catch_up = store._sync.server_record, store._sync.catch_up

    def counted_token(namespace: str) -> Any:
        calls["token"] += 1
        return token(namespace)

    def counted_catch_up(*args: Any) -> Any:
        calls["catch_up"] += 1
        return catch_up(*args)

    store._sync.server_record, store._sync.catch_up = counted_token, counted_catch_up  # type: ignore[method-assign]
    for mode in ("hybrid", "dense", "lexical"):
        store.search(ns, "puppy marathon", k=5, mode=mode)
    store.get_turns(ns, ["t1"])
    store.count(ns)
    store.check_freshness(ns)  # what `bench scale` times on its own
    assert calls == {"token": 6, "catch_up": 0}

    queries = [f"{a} {b}" for a in WORDS for b in WORDS]
    with_check, without, alone = [], [], []
    check = store._sync.check
    for q in queries * 2:
        start = time.perf_counter()
        store.search(ns, q, k=10)
        with_check.append(time.perf_counter() - start)
        store._sync.check = lambda namespace: None  # type: ignore[method-assign]  # the old behaviour
        start = time.perf_counter()
        store.search(ns, q, k=10)
        without.append(time.perf_counter() - start)
        store._sync.check = check  # type: ignore[method-assign]
        start = time.perf_counter()
        check(ns)
        alone.append(time.perf_counter() - start)
    # A catch-up: the first search after another worker added one turn (or deleted one).
    other = TurnStore(cfg.model_copy(update={"data_dir": root / f"cost-other-{ns}"}), embeddings=FakeEmbeddings())
    caught = []
    for j in range(20):
        if j % 2:
            other.delete_turns(ns, [f"x{j - 1}"])
        else:
            other.add_turns(_turns(ns, [[f"x{j}", f"an extra turn about {WORDS[j % 10]}", 2000 + j]]))
        start = time.perf_counter()
        store.search(ns, "guitar", k=10)
        caught.append(time.perf_counter() - start)
    assert store.count(ns) == 1000
    ms = {k: 1000 * statistics.median(v) for k, v in (("with", with_check), ("without", without), ("alone", alone),
                                                       ("caught", caught))}
    print(f"\nfreshness check, 1,000 turns, {len(alone)} hybrid searches on loopback: median search "
          f"{ms['with']:.2f} ms with the check, {ms['without']:.2f} ms without (+{ms['with'] - ms['without']:.2f} ms); "
          f"the check alone {ms['alone']:.2f} ms (p90 {1000 * statistics.quantiles(alone, n=10)[-1]:.2f} ms); "
          f"a search that catches up with another worker's add or delete of one turn {ms['caught']:.2f} ms")

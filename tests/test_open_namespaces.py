"""Bounded resources: at most ``CogMemConfig.open_namespaces`` namespaces open, a closed one reopened on
use with the same answers, Chroma's loaded HNSW indexes bounded alike, and a process out of files told so."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from fakes import FakeEmbeddings, make_turns

from langmem_cog import CogMemConfig, CogMemory
from langmem_cog.errors import ConfigError, ResourceLimitError
from langmem_cog.store import TurnStore

TEXTS = ["I adopted a puppy called Rex", "We went hiking near the lake", "My sister lives in Lisbon",
         "I started learning the cello", "The bakery on Elm street closed"]


def _fill(store: TurnStore, count: int) -> list[str]:
    names = [f"tenant-{i:02d}" for i in range(count)]
    for name in names:
        store.add_turns(make_turns(name, [f"{name}: {text}" for text in TEXTS]))
    return names


def _held(store: TurnStore) -> set[str]:
    spaces = store._spaces
    return set(spaces.caches) | set(spaces.lexical) | set(spaces.collections) | set(spaces.contexts)


def test_a_store_keeps_at_most_open_namespaces_and_answers_the_same_after_reopening(tmp_path: Path) -> None:
    store = TurnStore(CogMemConfig(data_dir=tmp_path, open_namespaces=3), embeddings=FakeEmbeddings())
    names = _fill(store, 8)
    assert len(_held(store)) <= 3
    first = {n: [(h.turn.id, round(h.score, 6)) for h in store.search(n, "puppy hiking cello", k=5)] for n in names}
    assert len(_held(store)) <= 3
    again = {n: [(h.turn.id, round(h.score, 6)) for h in store.search(n, "puppy hiking cello", k=5)] for n in names}
    assert again == first  # each namespace was closed and reopened in between
    for n in names:
        assert {h.turn.namespace for h in store.search(n, "puppy", k=5)} == {n}
        assert store.count(n) == len(TEXTS)


def test_the_least_recently_used_namespace_is_closed_and_listeners_hear_of_it(tmp_path: Path) -> None:
    store = TurnStore(CogMemConfig(data_dir=tmp_path, open_namespaces=2), embeddings=FakeEmbeddings())
    closed: list[str] = []
    store.on_namespaces_closed(closed.extend)
    a, b, c = _fill(store, 3)
    assert closed == [a]
    store.count(b)  # b is now the most recently used: c's neighbour is b, so using a closes c
    store.count(a)
    assert closed == [a, c]
    assert _held(store) == {a, b}


def test_a_namespace_in_use_by_another_thread_stays_open(tmp_path: Path) -> None:
    store = TurnStore(CogMemConfig(data_dir=tmp_path, open_namespaces=1), embeddings=FakeEmbeddings())
    a, b = _fill(store, 2)
    store.count(a)
    held, release = threading.Event(), threading.Event()

    def use_a() -> None:
        with store._spaces.lock(a):
            held.set()
            release.wait(30)

    worker = threading.Thread(target=use_a)
    worker.start()
    try:
        assert held.wait(30)
        store.count(b)
        assert a in store._spaces.caches  # over the bound for now, not pulled from under its user
    finally:
        release.set()
        worker.join(30)
    store.count(b)
    assert a not in _held(store)


def test_chroma_keeps_as_many_hnsw_indexes_loaded_as_open_namespaces(tmp_path: Path) -> None:
    from chromadb.api import ServerAPI
    from chromadb.api.shared_system_client import SharedSystemClient

    TurnStore(CogMemConfig(data_dir=tmp_path, open_namespaces=7), embeddings=FakeEmbeddings())
    system = SharedSystemClient._identifier_to_system[str(tmp_path / "chroma")]
    assert system.instance(ServerAPI).hnsw_cache_size == 7  # type: ignore[type-abstract,attr-defined]


def test_a_load_that_chroma_cannot_serve_from_an_evicted_index_is_retried_on_a_new_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """chromadb 1.5 may fail to load again an HNSW index its cache evicted: a new embedded system loads it."""
    from chromadb.errors import InternalError

    store = TurnStore(CogMemConfig(data_dir=tmp_path, open_namespaces=2), embeddings=FakeEmbeddings())
    names = _fill(store, 3)
    other = TurnStore(CogMemConfig(data_dir=tmp_path, open_namespaces=2), embeddings=FakeEmbeddings())
    assert other.count(names[1]) == len(TEXTS)
    store.count(names[2])  # names[0] is closed
    old_client = store.client
    collection_type = type(store._spaces.collection(names[2], create=False))
    real_get = collection_type.get
    failures = [1]

    def get(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if failures:
            failures.pop()
            raise InternalError("Error executing plan: Internal error: Error creating hnsw segment reader: "
                                "Nothing found on disk")
        return real_get(self, *args, **kwargs)

    monkeypatch.setattr(collection_type, "get", get)
    assert store.count(names[0]) == len(TEXTS)
    assert not failures and store.client is not old_client
    # Another store of the process follows the new system on its next read.
    assert other.count(names[1]) == len(TEXTS) and other.client is store.client
    assert [h.turn.namespace for h in other.search(names[0], "puppy", k=1)] == [names[0]]


def test_a_process_out_of_files_gets_a_named_error_and_the_bm25_log_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TurnStore(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    (name,) = _fill(store, 1)
    log = store._spaces.lexical_path(name)
    before = log.read_bytes()
    reopened = TurnStore(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    real_open = Path.open

    def open_(self: Path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if self == log:
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    with pytest.raises(ResourceLimitError, match="ulimit -n") as info:
        reopened.search(name, "puppy", k=1)
    assert "nothing stored is damaged" in str(info.value) and "open_namespaces" in str(info.value)
    monkeypatch.setattr(Path, "open", real_open)
    assert log.read_bytes() == before
    assert reopened.search(name, "puppy", k=1)[0].turn.namespace == name  # works once files are free


def test_a_memory_lets_closed_namespaces_graphs_go_and_reads_them_again(tmp_path: Path) -> None:
    memory = CogMemory(CogMemConfig(data_dir=tmp_path, open_namespaces=2), embeddings=FakeEmbeddings())
    names = [f"user-{i}" for i in range(4)]
    for name in names:
        memory.add_turns(make_turns(name, ["I adopted a puppy called Rex", "Rex loves the lake"]))
    assert set(memory.graphs._graphs) <= set(names[-3:])  # closed with their namespaces in the store
    reopened = CogMemory(CogMemConfig(data_dir=tmp_path, open_namespaces=10), embeddings=FakeEmbeddings())
    sizes = {n: reopened.graph(n).number_of_nodes() for n in names}
    assert all(sizes.values())
    for name in names:
        memory.store.count(name)
        assert memory.graph(name).number_of_nodes() == sizes[name]
    assert len(memory.graphs._graphs) <= 3


def test_open_namespaces_from_the_environment() -> None:
    assert CogMemConfig.from_env(environ={"LANGMEM_COG_OPEN_NAMESPACES": "12"}).open_namespaces == 12
    with pytest.raises(ConfigError, match="LANGMEM_COG_OPEN_NAMESPACES"):
        CogMemConfig.from_env(environ={"LANGMEM_COG_OPEN_NAMESPACES": "0"})


def test_open_files_stay_bounded_under_a_low_ulimit(tmp_path: Path) -> None:
    """A process under ``ulimit -n 256`` that reads 40 namespaces twice fails no read, and holds the files of
    at most ``open_namespaces`` loaded HNSW indexes (Chroma's own cache keeps up to about 64, evicting lazily)."""
    build = TurnStore(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    names = _fill(build, 40)
    del build
    script = textwrap.dedent(f"""
        import json, os, resource, sys
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from fakes import FakeEmbeddings
        from langmem_cog import CogMemConfig
        from langmem_cog.store import TurnStore
        store = TurnStore(CogMemConfig(data_dir={str(tmp_path)!r}, open_namespaces=8), embeddings=FakeEmbeddings())
        def hnsw_files():
            n = 0
            for fd in os.listdir("/proc/self/fd"):
                try:
                    n += os.readlink(f"/proc/self/fd/{{fd}}").endswith(".bin")
                except OSError:
                    pass
            return n
        base, peak, peak_hnsw, failed = len(os.listdir("/proc/self/fd")), 0, 0, 0
        for _ in range(2):
            for name in {names!r}:
                try:
                    hits = store.search(name, "puppy", k=3)
                    assert {{h.turn.namespace for h in hits}} == {{name}}
                except Exception as exc:
                    failed += 1
                    print(type(exc).__name__, exc, file=sys.stderr)
                peak = max(peak, len(os.listdir("/proc/self/fd")))
                peak_hnsw = max(peak_hnsw, hnsw_files())
        fds = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                fds.append(os.readlink(f"/proc/self/fd/{{fd}}"))
            except OSError:
                pass
        print(json.dumps({{"base": base, "peak": peak, "peak_hnsw": peak_hnsw, "failed": failed, "fds": fds}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["failed"] == 0, out.stderr
    # Each loaded HNSW index holds four files; a new embedded system after every eight namespace loads
    # closes them (without it, 29 indexes of the 40 stayed loaded here).
    summary = {k: v for k, v in result.items() if k != "fds"}
    assert 0 < result["peak_hnsw"] <= 8 * 4, summary
    assert result["peak"] - result["base"] <= 8 * 4 + 8, summary


def test_namespaces_are_listed_a_page_at_a_time_and_again_when_a_write_landed_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langmem_cog.storage import namespaces

    store = TurnStore(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    names = _fill(store, 7)
    monkeypatch.setattr(namespaces, "LIST_PAGE", 4)
    monkeypatch.setattr(namespaces, "LIST_OVERLAP", 1)
    client, pages = store.client, []
    real_list = client.list_collections

    def paged(limit=None, offset=0):
        pages.append((limit, offset))
        return real_list(limit=limit, offset=offset)

    monkeypatch.setattr(client, "list_collections", paged)
    assert store.namespaces() == names
    assert pages == [(4, 0), (4, 3), (4, 6)]  # never the whole list in one call; each page overlaps the last
    lock = store._access.dir_lock
    real_read, reads = lock.read, iter([(1, 0), (2, 0), (2, 0), (2, 0)])  # another process wrote during the first
    monkeypatch.setattr(lock, "read", lambda: next(reads, real_read()))
    pages.clear()
    assert store._access.steady(store._spaces.stored) == names
    assert len(pages) == 6  # listed twice
    # A namespace forgotten between two pages shifts the later ones back: the overlap still sees every other one.
    pages.clear()
    real_paged = paged

    def forgetting(limit=None, offset=0):
        page = real_paged(limit=limit, offset=offset)
        if offset == 0:
            client.delete_collection(page[0].name)
        return page

    monkeypatch.setattr(client, "list_collections", forgetting)
    assert store._spaces.stored() == names


def test_the_embedded_system_is_restarted_after_open_namespaces_loads_but_never_under_another_load(
        tmp_path: Path) -> None:
    build = TurnStore(CogMemConfig(data_dir=tmp_path), embeddings=FakeEmbeddings())
    names = _fill(build, 6)
    del build
    store = TurnStore(CogMemConfig(data_dir=tmp_path, open_namespaces=2), embeddings=FakeEmbeddings())
    store._access.restart_embedded(quiet=True)  # a fresh system: no namespace loaded by it yet
    first = store.client
    store.count(names[0])
    assert store.client is first
    store.count(names[1])  # the second load: a new embedded system closes the indexes loaded so far
    second = store.client
    assert second is not first
    with store._access.chroma_read():  # another thread's load in flight: the restart waits for it
        store.count(names[2])
        store.count(names[3])
        assert store.client is second
    store.count(names[4])  # the next load past the bound restarts
    assert store.client is not second
    assert [store.count(n) for n in names] == [len(TEXTS)] * 6  # every namespace reads back whole

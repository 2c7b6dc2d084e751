"""Scale benchmark: one namespace grown to 1k / 10k / 100k turns, cost measured at each size.

The turns are real (LoCoMo conversations, then LongMemEval haystack sessions), replayed
with fresh ids and dates shifted by a year per replay once the unique pool is used up.
Ingest goes through :class:`~langmem_cog.memory.CogMemory` with the ``RuleExtractor`` on
(raw write, BM25, extraction, graph update and save) into a persistent store; at each
size the bench records ingest throughput of the step, p50/p95 search latency per system
(``dense``, ``bm25``, ``hybrid``) over real LoCoMo questions, the resident memory of the
process (and of the Chroma server) and the disk used.

Embeddings are memoised by text (:class:`~langmem_cog.embeddings.CachedEmbeddings`), so a
replayed turn does not pay for the model again; the cold embedding rate of the unique pool
is reported separately (``embed_cold_turns_per_s``) and the cache counts are in the result.

Chroma runs embedded (``PersistentClient``) and, with ``chroma_url`` or ``start_server``,
against a Chroma server (``chroma run`` on loopback), side by side.

Example:
    >>> replay_turn_id("D1:3", 2)
    'r2.D1:3'
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from langmem_cog.bench.protocol import locomo_questions, percentiles
from langmem_cog.bench.runner import Progress, default_locomo_path, no_progress
from langmem_cog.bench.systems import SYSTEMS
from langmem_cog.config import CogMemConfig, parse_chroma_url
from langmem_cog.errors import InvalidInputError, StoreError
from langmem_cog.loaders import locomo_turns, read_json
from langmem_cog.records import Turn

__all__ = ["run_scale", "ScaleWorkload", "ScaleTargets", "bench_graph_stores", "scale_turns", "base_pool", "replay_turn_id", "plot_scale", "chroma_server", "rss_mb", "dir_mb"]

logger = logging.getLogger(__name__)

def replay_turn_id(turn_id: str, replay: int) -> str:
    """The id of a turn in replay ``replay`` (replay 0 keeps the original id)."""
    return turn_id if replay == 0 else f"r{replay}.{turn_id}"


def base_pool(unique: int, locomo: Path | None, longmemeval: Path | None) -> list[Turn]:
    """Up to ``unique`` real turns: LoCoMo first, then LongMemEval sessions (each session once)."""
    pool: list[Turn] = []
    if locomo is not None:
        for rec in read_json(locomo):  # dia_ids ("D1:3") repeat across conversations: prefix the conversation
            pool.extend(t.model_copy(update={"id": f"{t.conversation_id}/{t.id}"})
                        for t in locomo_turns(rec, namespace="scale"))
    if len(pool) < unique and longmemeval is not None:
        from langmem_cog.loaders import load_longmemeval

        seen: set[str] = set()
        for q in load_longmemeval(longmemeval):
            for t in q.turns:
                if len(pool) >= unique:
                    break
                if t.id in seen:  # haystack sessions repeat across questions; ids are "session:index"
                    continue
                seen.add(t.id)
                pool.append(t.model_copy(update={"conversation_id": f"lme.{t.session_id}", "namespace": "scale"}))
            if len(pool) >= unique:
                break
    if not pool:
        raise InvalidInputError("no source turns: pass the LoCoMo and/or LongMemEval data files")
    return pool[:unique]


def scale_turns(pool: Sequence[Turn], n: int, namespace: str, start: int = 0) -> Iterator[Turn]:
    """Turns ``start`` .. ``n - 1`` of the endless replay of ``pool`` into ``namespace``.

    Replay ``r`` gives every turn the id ``r{r}.{id}``, conversation ``r{r}.{conversation}`` and a
    timestamp ``r`` years (365 days) later, so ids stay unique and time keeps moving forward.
    """
    if not pool:
        raise InvalidInputError("scale_turns needs a non-empty pool")
    for i in range(start, n):
        r, j = divmod(i, len(pool))
        t = pool[j]
        yield t.model_copy(
            update={
                "id": replay_turn_id(t.id, r),
                "namespace": namespace,
                "conversation_id": t.conversation_id if r == 0 else f"r{r}.{t.conversation_id}",
                "timestamp": t.timestamp + timedelta(days=365 * r),
            }
        )


def rss_mb(pid: int | None = None) -> float:
    """Resident memory of a process in MiB (``/proc``; 0.0 where unavailable)."""
    try:
        with open(f"/proc/{pid or os.getpid()}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def dir_mb(path: Path) -> float:
    """Bytes under ``path`` in MiB."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, f))
    return total / 2**20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def chroma_server(path: Path, port: int | None = None, timeout_s: float = 60.0) -> Iterator[tuple[str, int, int]]:
    """Start ``chroma run`` on loopback for the duration of the block: yields ``(host, port, pid)``.

    Raises:
        StoreError: If the ``chroma`` CLI is missing or the server does not answer in time.
    """
    exe = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))
    if not Path(exe).exists():
        raise StoreError("the `chroma` command is not installed: pip install chromadb")
    port = port or _free_port()
    log = open(path.parent / f"chroma-server-{port}.log", "w", encoding="utf-8")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([exe, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        import chromadb
        from chromadb.config import Settings

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False)).heartbeat()
                break
            except Exception as exc:  # not up yet
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise StoreError(f"the Chroma server on 127.0.0.1:{port} did not start ({exc}); see {log.name}") from exc
                time.sleep(0.5)
        yield "127.0.0.1", port, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _questions(locomo: Path | None, n: int) -> list[str]:
    if locomo is None:
        return ["What did she say about the weekend?"]
    qs = [q["question"] for rec in read_json(locomo) for q in locomo_questions(rec)]
    step = max(1, len(qs) // n)
    return qs[::step][:n]


@dataclass(frozen=True)
class ScaleWorkload:
    """What :func:`run_scale` grows and times.

    Attributes:
        sizes: Namespace sizes in turns (measured in increasing order).
        systems: Search systems timed at each size (``dense``, ``bm25``, ``hybrid``).
        unique: Size of the pool of real turns before replays start.
        queries: Timed questions per system and size.
        batch: Turns per ``add_turns`` call.
        extractor: Run the ``RuleExtractor`` and the graph update at ingest.
        locomo: LoCoMo JSON (default: ``../shared/data``).
        longmemeval: LongMemEval JSON[.gz] (default: ``../shared/data``), used when ``unique`` exceeds LoCoMo.

    Raises:
        InvalidInputError: If a size is not a positive count or a system is unknown.

    Example:
        >>> ScaleWorkload(sizes=(10_000, 1_000)).sizes
        (1000, 10000)
    """

    sizes: Sequence[int] = (1_000, 10_000, 100_000)
    systems: Sequence[str] = ("dense", "bm25", "hybrid")
    unique: int = 8_000
    queries: int = 50
    batch: int = 1_000
    extractor: bool = True
    locomo: str | Path | None = None
    longmemeval: str | Path | None = None

    def __post_init__(self) -> None:
        sizes = tuple(sorted(int(s) for s in self.sizes))
        if not sizes or sizes[0] < 1:
            raise InvalidInputError(f"sizes={list(self.sizes)!r}: pass positive turn counts")
        search = sorted(name for name, s in SYSTEMS.items() if s.kind == "search")
        bad = [s for s in self.systems if s not in search]
        if bad:
            raise InvalidInputError(f"unknown systems {bad}: choose from the search systems {search}")
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "systems", tuple(self.systems))


@dataclass(frozen=True)
class ScaleTargets:
    """Which stores :func:`run_scale` measures: the embedded one and/or a Chroma server.

    Attributes:
        embedded: Measure the embedded store (``False``: only the server, which then must be given).
        chroma_url: Also measure against this running Chroma server (``http://host:port``).
        start_server: Also measure against a Chroma server started here on loopback.

    Raises:
        InvalidInputError: If no store is left to measure.
    """

    embedded: bool = True
    chroma_url: str | None = None
    start_server: bool = False

    def __post_init__(self) -> None:
        if not self.embedded and not (self.chroma_url or self.start_server):
            raise InvalidInputError("embedded=False measures a server only: pass chroma_url or start_server=True")


@dataclass
class _ModeRun:
    """One store's measurement: its name, the shared embedder and work folder, the server (or None)."""

    mode: str
    embeddings: Any
    workdir: Path
    server: tuple[str, int, int] | None
    progress: Progress


def _memory(run: _ModeRun, extractor: bool) -> tuple[Any, CogMemConfig]:
    """The ``CogMemory`` one mode ingests into (the rule extractor, or none), and its config."""
    from langmem_cog.memory import CogMemory

    update: dict[str, Any] = {"data_dir": run.workdir / run.mode}
    if run.server is not None:
        update.update(chroma_mode="http", chroma_host=run.server[0], chroma_port=run.server[1])
    cfg = CogMemConfig.preset("default", **update)
    if extractor:
        return CogMemory(cfg, embeddings=run.embeddings), cfg
    from langmem_cog.graph.schema import Extraction

    class _NoExtraction:
        def extract(self, turns: Sequence[Turn]) -> list[Extraction]:
            return [Extraction(turn_id=t.id, timestamp=t.timestamp, speaker=t.speaker) for t in turns]

    return CogMemory(cfg, embeddings=run.embeddings, extractor=_NoExtraction()), cfg


def _timed(questions: Sequence[str], call: Any) -> dict[str, float]:
    """p50 / p95 / ... in milliseconds of ``call(q)`` over ``questions``."""
    times = []
    for q in questions:
        t1 = time.perf_counter()
        call(q)
        times.append((time.perf_counter() - t1) * 1000)
    return percentiles(times)


def _one_mode(run: _ModeRun, work: ScaleWorkload, pool: Sequence[Turn], questions: Sequence[str]) -> dict[str, Any]:
    memory, cfg = _memory(run, work.extractor)
    ns = f"scale.{run.mode}.{uuid.uuid4().hex[:6]}"
    rss0 = rss_mb()
    points = []
    have = 0
    for size in work.sizes:
        todo = list(scale_turns(pool, size, ns, start=have))
        t0 = time.perf_counter()
        for i in run.progress(range(0, len(todo), work.batch), f"{run.mode} ingest to {size}", -(-len(todo) // work.batch)):
            memory.add_turns(todo[i : i + work.batch])
        ingest_s = time.perf_counter() - t0
        have = size
        memory.store.search(ns, "warm up the indexes", k=10)  # builds BM25 / loads caches once, untimed
        latency = {}
        for system in work.systems:
            smode, fusion = SYSTEMS[system].mode, SYSTEMS[system].fusion
            run.embeddings.discard(list(questions))  # every system pays for its query embeddings
            memory.store.clear_query_cache()
            latency[system] = _timed(questions, lambda q, smode=smode, fusion=fusion: memory.store.search(
                ns, q, k=10, mode=smode, fusion=fusion))
        # What each read pays to see the other workers' writes (issue #22); embedded: no server to check.
        check = _timed(questions, lambda _q: memory.store.check_freshness(ns)) if run.server is not None else None
        point = {
            "turns": size,
            "ingest_turns": len(todo),
            "ingest_turns_per_s": len(todo) / ingest_s if ingest_s > 0 else float("inf"),
            "latency_ms": latency,
            "freshness_check_ms": check,
            "search_path": "exact" if size <= cfg.search.exact_search_max else "hnsw+bm25",
            "rss_mb": rss_mb(),
            "rss_growth_mb": rss_mb() - rss0,
            "server_rss_mb": rss_mb(run.server[2]) if run.server else None,
            "disk_mb": dir_mb(run.workdir / "server-data") if run.server else dir_mb(run.workdir / run.mode),
            "graph_nodes": memory.graph(ns).number_of_nodes(),
        }
        logger.info("scale %s %d: %s", run.mode, size, point)
        points.append(point)
    memory.forget(ns)
    return {"mode": run.mode, "points": points}


def run_scale(
    work: ScaleWorkload = ScaleWorkload(),
    targets: ScaleTargets = ScaleTargets(),
    *,
    embedder: str = "minilm",
    embeddings: Any | None = None,
    workdir: str | Path | None = None,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Grow one namespace to each size of ``work`` in each store of ``targets`` and measure it (see the
    module docstring).

    Args:
        work: Sizes, systems, pool, questions, batch and extractor.
        targets: The embedded store and/or a Chroma server.
        embedder: ``minilm``, ``mpnet`` or a model directory (ignored when ``embeddings`` is given).
        embeddings: An embedder to use (tests pass a fake); it is wrapped in a text cache.
        workdir: Where the stores live (default: a temporary directory, removed after).
        progress: Wraps iterables to show progress.

    Returns:
        ``{"modes": [{"mode", "points": [...]}], "embed_cold_turns_per_s", "cache", ...}``.
    """
    from langmem_cog.bench.longmemeval import default_longmemeval_path
    from langmem_cog.embeddings import CachedEmbeddings, resolve_embedder

    sizes = list(work.sizes)
    loc = Path(work.locomo) if work.locomo else default_locomo_path()
    lme = Path(work.longmemeval) if work.longmemeval else default_longmemeval_path()
    pool = base_pool(min(work.unique, sizes[-1]), loc, lme if work.unique > 5_000 else None)
    questions = _questions(loc, work.queries)
    inner = embeddings if embeddings is not None else resolve_embedder(embedder)
    cached = CachedEmbeddings(inner, max_items=max(len(pool) + work.queries + 16, 1024))
    # Cold embedding rate of the unique pool (this also fills the cache used by the replays).
    texts = [t.memory_text for t in pool]
    cached.embed_query("warm up")
    t0 = time.perf_counter()
    for i in progress(range(0, len(texts), 256), "embed pool", -(-len(texts) // 256)):
        cached.embed_array(texts[i : i + 256])
    embed_s = time.perf_counter() - t0

    tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="lmc-scale-"))
    tmp.mkdir(parents=True, exist_ok=True)

    def measure(mode: str, server: tuple[str, int, int] | None) -> dict[str, Any]:
        return _one_mode(_ModeRun(mode, cached, tmp, server, progress), work, pool, questions)

    modes = []
    try:
        if targets.embedded:
            modes.append(measure("embedded", None))
        if targets.chroma_url:
            host, port = parse_chroma_url(targets.chroma_url)
            modes.append(measure("server", (host, port, 0)))
        elif targets.start_server:
            with chroma_server(tmp / "server-data") as srv:
                modes.append(measure("server", srv))
    finally:
        if not workdir:
            shutil.rmtree(tmp, ignore_errors=True)
    return {
        "sizes": sizes,
        "systems": list(work.systems),
        "embedder": embedder if embeddings is None else type(inner).__name__,
        "unique_turns": len(pool),
        "embed_cold_turns_per_s": len(texts) / embed_s if embed_s > 0 else float("inf"),
        "cache": {"hits": cached.hits, "misses": cached.misses},
        "extractor": "rule" if work.extractor else None,
        "batch": work.batch,
        "queries": len(questions),
        "cpu_count": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "modes": modes,
    }


def plot_scale(result: dict[str, Any], path: str | Path) -> Path:
    """Draw ingest throughput, p95 latency per system, memory and disk against size (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(18, 4.2))
    for m in result["modes"]:
        xs = [p["turns"] for p in m["points"]]
        style = "-o" if m["mode"] == "embedded" else "--s"
        axes[0].plot(xs, [p["ingest_turns_per_s"] for p in m["points"]], style, label=m["mode"])
        for system in result["systems"]:
            axes[1].plot(xs, [p["latency_ms"][system]["p95"] for p in m["points"]], style, label=f"{system} ({m['mode']})")
        axes[2].plot(xs, [p["rss_mb"] + (p["server_rss_mb"] or 0) for p in m["points"]], style, label=m["mode"])
        axes[3].plot(xs, [p["disk_mb"] for p in m["points"]], style, label=m["mode"])
    titles = ["ingest (turns/s, rule extractor on)", "search p95 latency (ms)", "resident memory (MiB)", "disk (MiB)"]
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("turns in the namespace")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[1].axhline(150, color="grey", lw=0.8, ls=":")
    fig.suptitle(f"langmem-cog scale ({result['embedder']}, {result['cpu_count']} cores, "
                 f"load {result['load_avg_1m']:.1f})", fontsize=11)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def bench_graph_stores(
    turn_counts: Sequence[int] = (1_000, 5_000),
    *,
    postgres_url: str | None = None,
    workdir: str | Path | None = None,
    locomo: str | Path | None = None,
    repeats: int = 5,
) -> list[dict[str, Any]]:
    """Save / load latency of graph snapshots: local files versus a LangGraph ``BaseStore``.

    A graph is built with the ``RuleExtractor`` from the first ``n`` LoCoMo turns (replayed when
    needed), then saved and loaded ``repeats`` times through each backend: ``file``
    (:class:`~langmem_cog.graph.backends.FileGraphStore`), ``inmemory`` (LangGraph ``InMemoryStore``)
    and, with ``postgres_url``, ``postgres`` (``PostgresStore`` from ``langgraph-checkpoint-postgres``).

    Returns:
        One dict per (backend, size): nodes, edges, snapshot size and p50 save / load milliseconds.
    """
    from langgraph.store.memory import InMemoryStore

    from langmem_cog.graph.backends import BaseStoreGraphStore, FileGraphStore
    from langmem_cog.graph.rules import RuleExtractor
    from langmem_cog.graph.store import GraphMemory, graph_payload

    loc = Path(locomo) if locomo else default_locomo_path()
    pool = base_pool(6_000, loc, None)
    tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="lmc-gstore-"))
    out: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        backends: dict[str, Any] = {"file": FileGraphStore(tmp), "inmemory": BaseStoreGraphStore(InMemoryStore())}
        if postgres_url:
            from langgraph.store.postgres import PostgresStore

            pg = stack.enter_context(PostgresStore.from_conn_string(postgres_url))
            pg.setup()
            backends["postgres"] = BaseStoreGraphStore(pg)
        for n in turn_counts:
            ns = f"gstore.{n}.{uuid.uuid4().hex[:6]}"
            built = GraphMemory()
            built.apply(ns, RuleExtractor().extract(list(scale_turns(pool, n, ns))))
            G = built.graph(ns)
            size_kb = len(json.dumps(graph_payload(ns, G))) / 1024
            for name, backend in backends.items():
                mem = GraphMemory(backend=backend)
                mem._graphs[ns] = G  # the graph to persist (built once, shared by every backend)
                saves, loads = [], []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    mem.save(ns)
                    saves.append((time.perf_counter() - t0) * 1000)
                    reader = GraphMemory(backend=backend)
                    t1 = time.perf_counter()
                    reader.graph(ns)
                    loads.append((time.perf_counter() - t1) * 1000)
                out.append({"backend": name, "turns": n, "nodes": G.number_of_nodes(), "edges": G.number_of_edges(),
                            "snapshot_kb": size_kb, "save_ms": percentiles(saves), "load_ms": percentiles(loads)})
                mem.forget(ns)
    if not workdir:
        shutil.rmtree(tmp, ignore_errors=True)
    return out

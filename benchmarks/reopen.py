"""The first query after a restart: one big namespace of a persistent data directory, reopened in a fresh process.

Builds (or, with ``--dir`` pointing at an existing one, reuses) a persistent data directory holding ``--turns``
turns in one namespace: real turns (the LoCoMo conversations' 5,882 turns; with ``--source mixed`` then
LongMemEval-S haystack sessions), replayed with fresh ids and dates a year later once the unique pool is used
up (``bench.scale.scale_turns``), ingested through ``CogMemory.add_turns`` in batches of ``--batch`` (rule
extractor, the default cascade mode, so node vectors are made at ingest).

Then each measurement runs in a fresh subprocess (nothing cached in memory, the models' ONNX exports
already on disk) and times, with the default retriever (``CogMemRetriever(memory=..., namespace=...)``):

* ``open``: ``CogMemConfig`` + ``CogMemory(config)`` (imports timed apart);
* ``first query``: the first ``invoke`` after the open;
* ``warm p50 / p95``: ``--queries`` further questions (the query-vector cache cleared before each);
* with ``--adds N``: N rounds of a chat, one turn added then one question asked (``add_p50``, and the query
  right after an add, ``after_add_p50`` / ``after_add_max``); the turns stay in the data directory.

With ``--steps`` a second fresh process times the parts of the first query one by one, in the order the
first query meets them: the embedder (one query embedded), the raw store (the namespace's turns, vectors
and BM25 index), the graph file, the graph's check against the raw turns (and the node vectors of the
graph, read or embedded), then the rest of the first query (reranker, operator loop, features).

Usage::

    python benchmarks/reopen.py --turns 5000 [--source locomo|mixed] [--dir DIR] [--queries 50] [--runs 2]
        [--steps] [--adds N] [--json OUT]

The code measured is this checkout's, or with ``PYTHONPATH`` set the one it names (say another worktree's, on
the same ``--dir``: the data directory's formats are shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if not os.environ.get("PYTHONPATH"):  # PYTHONPATH picks the code measured (another checkout's, say)
    sys.path.insert(0, str(ROOT))

NAMESPACE = "reopen"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
LONGMEMEVAL = ROOT.parent / "shared" / "data" / "longmemeval" / "longmemeval_s_dev.json.gz"


def _data_file(arg: str | None, default: Path, fallback: str) -> Path | None:
    for p in (arg, default, Path("/work/shared/data") / fallback):
        if p and Path(p).is_file():
            return Path(p)
    return None


def _questions(locomo: Path | None, n: int) -> list[str]:
    """``n`` LoCoMo questions spread over the file (read with ``json``: the measured process imports nothing
    of langmem_cog before its timer starts)."""
    if locomo is None:
        return [f"What did they say about topic {i}?" for i in range(n)]
    out: list[str] = []
    for rec in json.loads(locomo.read_text(encoding="utf-8")):
        out.extend(str(qa["question"]) for qa in rec["qa"])
    step = max(1, len(out) // n)
    return out[::step][:n]


def build(data_dir: Path, turns: int, batch: int, locomo: Path | None, longmemeval: Path | None) -> dict[str, Any]:
    """Ingest ``turns`` turns into ``data_dir`` (the turns it already holds are skipped)."""
    from langmem_cog import CogMemConfig
    from langmem_cog.bench.scale import base_pool, scale_turns
    from langmem_cog.memory import CogMemory

    memory = CogMemory(CogMemConfig.preset("default", data_dir=data_dir))
    have = memory.store.count(NAMESPACE) if memory.store.has_namespace(NAMESPACE) else 0
    if have >= turns:
        return {"ingested": 0, "held": have, "seconds": 0.0}
    pool = base_pool(turns, locomo, longmemeval)
    todo = list(scale_turns(pool, turns, NAMESPACE, start=have))
    t0 = time.perf_counter()
    for i in range(0, len(todo), batch):
        memory.add_turns(todo[i : i + batch])
        done = have + i + len(todo[i : i + batch])
        print(f"  ingested {done}/{turns} turns ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return {"ingested": len(todo), "held": turns, "seconds": time.perf_counter() - t0}


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)


def measure(data_dir: Path, queries: list[str], steps: bool, adds: int = 0) -> dict[str, Any]:
    """In this (fresh) process: open, the first query (or its parts, with ``steps``), then warm queries."""
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    from langmem_cog import CogMemConfig, CogMemRetriever
    from langmem_cog.graph.operators import node_text
    from langmem_cog.memory import CogMemory

    out["import_ms"] = _ms(t0)
    t0 = time.perf_counter()
    memory = CogMemory(CogMemConfig.preset("default", data_dir=data_dir))
    out["open_ms"] = _ms(t0)
    retriever = CogMemRetriever(memory=memory, namespace=NAMESPACE)
    first, warm = queries[0], queries[1:]
    if steps:
        t0 = time.perf_counter()
        memory.store.embed_query("a warm-up text that is not a question of the run")
        out["embedder_ms"] = _ms(t0)
        t0 = time.perf_counter()
        out["turns"] = memory.store.count(NAMESPACE)
        out["raw_load_ms"] = _ms(t0)
        t0 = time.perf_counter()
        G = memory.graphs.graph(NAMESPACE)
        out["graph_load_ms"] = _ms(t0)
        out["nodes"] = G.number_of_nodes()
        t0 = time.perf_counter()
        G = memory.graph(NAMESPACE)
        out["graph_check_ms"] = _ms(t0)
        texts = [node_text(G, n) for n in G.nodes]
        out["node_texts"] = len(set(texts))
        t0 = time.perf_counter()
        memory.node_vectors.vectors(texts)
        out["node_vectors_ms"] = _ms(t0)
    memory.store.clear_query_cache()
    t0 = time.perf_counter()
    retriever.invoke(first)
    out["first_query_ms"] = _ms(t0)
    times = []
    for q in warm:
        memory.store.clear_query_cache()
        t0 = time.perf_counter()
        retriever.invoke(q)
        times.append((time.perf_counter() - t0) * 1000)
    if times:
        s = sorted(times)
        out["warm_p50_ms"] = round(statistics.median(s), 1)
        out["warm_p95_ms"] = round(s[min(len(s) - 1, round(0.95 * (len(s) - 1)))], 1)
        out["warm_queries"] = len(s)
    if adds:
        out.update(_chat(memory, retriever, queries, adds))
    return out


def _chat(memory: Any, retriever: Any, queries: list[str], adds: int) -> dict[str, Any]:
    """``adds`` rounds of a chat after the restart: one new turn added (a question's text, said by the
    namespace's last speaker a minute after the last turn), then a question asked; both timed."""
    from datetime import timedelta

    from langmem_cog import make_turn

    last = max(memory.store.get_turns(NAMESPACE), key=lambda t: (t.timestamp, t.position))
    add_ms, after_ms = [], []
    for i in range(adds):
        turn = make_turn(id=f"chat-{os.getpid()}-{i}", namespace=NAMESPACE, speaker=last.speaker,
                         text=queries[i % len(queries)], timestamp=(last.timestamp + timedelta(minutes=i + 1)).isoformat(),
                         position=last.position + i + 1, conversation_id=last.conversation_id,
                         session_id=f"chat-{os.getpid()}")
        t0 = time.perf_counter()
        memory.add_turns([turn])
        add_ms.append((time.perf_counter() - t0) * 1000)
        memory.store.clear_query_cache()
        t0 = time.perf_counter()
        retriever.invoke(queries[(i + 1) % len(queries)])
        after_ms.append((time.perf_counter() - t0) * 1000)
    return {"add_p50_ms": round(statistics.median(add_ms), 1),
            "after_add_p50_ms": round(statistics.median(after_ms), 1), "after_add_max_ms": round(max(after_ms), 1)}


def _fresh(data_dir: Path, queries: int, steps: bool, locomo: Path | None, adds: int = 0) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--measure", "--dir", str(data_dir), "--queries", str(queries), "--adds", str(adds)]
    if steps:
        cmd.append("--steps")
    if locomo is not None:
        cmd += ["--locomo", str(locomo)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = round(time.perf_counter() - t0, 2)
    return result


def _table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    keys = ["turns", "nodes", "node_texts", "import_ms", "open_ms", "embedder_ms", "raw_load_ms", "graph_load_ms",
            "graph_check_ms", "node_vectors_ms", "first_query_ms", "warm_p50_ms", "warm_p95_ms", "add_p50_ms",
            "after_add_p50_ms", "after_add_max_ms", "process_s"]
    keys = [k for k in keys if any(k in r for _, r in rows)]
    width = max(len(k) for k in keys)
    head = f"| {'':{width}} | " + " | ".join(f"{name:>10}" for name, _ in rows) + " |"
    lines = [head, "|" + "-" * (width + 2) + "|" + "|".join("-" * 12 for _ in rows) + "|"]
    for k in keys:
        lines.append(f"| {k:{width}} | " + " | ".join(f"{r.get(k, ''):>10}" for _, r in rows) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=5000, help="turns in the namespace (default 5000)")
    ap.add_argument("--dir", type=Path, default=None, help="the data directory to build or reuse (default: a temp one)")
    ap.add_argument("--batch", type=int, default=500, help="turns per add_turns call while building")
    ap.add_argument("--queries", type=int, default=50, help="warm queries timed after the first")
    ap.add_argument("--runs", type=int, default=2, help="fresh processes measured one after the other")
    ap.add_argument("--steps", action="store_true", help="also time the first query's parts in one more process")
    ap.add_argument("--source", choices=["locomo", "mixed"], default="locomo",
                    help="locomo: the LoCoMo turns replayed; mixed: LoCoMo, then LongMemEval-S sessions (long "
                         "assistant turns: a graph some five times larger)")
    ap.add_argument("--locomo", default=None)
    ap.add_argument("--longmemeval", default=None)
    ap.add_argument("--adds", type=int, default=0,
                    help="then N rounds of a chat in each run: add one turn, ask a question (writes N turns to --dir)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    locomo = _data_file(args.locomo, LOCOMO, "locomo/locomo10.json")
    if args.measure:
        print(json.dumps(measure(args.dir, _questions(locomo, args.queries + 1), args.steps, args.adds)))
        return 0
    longmemeval = (_data_file(args.longmemeval, LONGMEMEVAL, "longmemeval/longmemeval_s_dev.json.gz")
                   if args.source == "mixed" else None)
    data_dir = args.dir or Path(tempfile.mkdtemp(prefix="lmc-reopen-"))
    print(f"data dir {data_dir}: {args.turns} turns in namespace {NAMESPACE!r}", file=sys.stderr)
    built = build(data_dir, args.turns, args.batch, locomo, longmemeval)
    print(f"ingest: {built['ingested']} turns in {built['seconds']:.1f} s", file=sys.stderr)
    rows: list[tuple[str, dict[str, Any]]] = []
    for i in range(args.runs):
        rows.append((f"run {i + 1}", _fresh(data_dir, args.queries, False, locomo, args.adds)))
    if args.steps:
        rows.append(("steps", _fresh(data_dir, args.queries, True, locomo)))
    if rows:
        print(_table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps({"dir": str(data_dir), "build": built, "runs": dict(rows)}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

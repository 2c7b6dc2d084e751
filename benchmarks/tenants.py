"""Many tenants in one data directory: ingest speed, then memory, open files and isolation of a new process.

Build a data directory with ``--tenants`` namespaces of ``--turns`` turns each (LoCoMo's turn texts, 20
consecutive turns from a seeded random start per tenant), then query it from a fresh process under a
file-descriptor limit (``ulimit -n``), the way a multi-tenant server would after a restart::

    python benchmarks/tenants.py build --dir /tmp/t100 --tenants 100
    python benchmarks/tenants.py query --dir /tmp/t100 --queries 100 --nofile 1024
    python benchmarks/tenants.py query --dir /tmp/t100 --queries 100 --open-namespaces 8

``query`` opens the default memory (``CogMemory``, the cascade retriever) on the directory and asks
``--queries`` LoCoMo questions, each of a random tenant, through ``CogMemRetriever``. It prints the
peak resident memory, the peak number of open files of the process, the failed queries, the documents
that came from another tenant, and the per-query latency (p50 / p95). ``build`` prints the ingest rate.
Both print one JSON line at the end, for scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path


def _rss_mb() -> float:
    """This process's resident memory now, in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _open_files() -> int:
    """How many file descriptors this process holds (Linux)."""
    return len(os.listdir("/proc/self/fd"))


def _locomo() -> list:  # the conversations, for turn texts and questions
    from langmem_cog.bench.runner import default_locomo_path
    from langmem_cog.loaders import load_locomo

    path = default_locomo_path()
    if path is None:
        sys.exit("LoCoMo not found: see ../shared/data/README.md")
    return load_locomo(path)


def build(args: argparse.Namespace) -> dict:
    from langmem_cog import CogMemConfig, CogMemory, Turn

    texts = [(t.speaker, t.text, t.timestamp) for conv in _locomo() for t in conv.turns]
    rng = random.Random(args.seed)
    memory = CogMemory(CogMemConfig(data_dir=args.dir))
    t0 = time.perf_counter()
    for i in range(args.tenants):
        ns = f"tenant-{i:05d}"
        start = rng.randrange(len(texts) - args.turns)
        turns = [Turn(id=f"{ns}-{j}", namespace=ns, speaker=sp, text=text, timestamp=ts)
                 for j, (sp, text, ts) in enumerate(texts[start:start + args.turns])]
        memory.add_turns(turns)
        if (i + 1) % max(1, args.tenants // 10) == 0:
            done = (i + 1) * args.turns
            print(f"{i + 1} tenants, {done / (time.perf_counter() - t0):.1f} turns/s, "
                  f"RSS {_rss_mb():.0f} MB, {_open_files()} open files", flush=True)
    elapsed = time.perf_counter() - t0
    out = {"tenants": args.tenants, "turns_per_tenant": args.turns, "seconds": round(elapsed, 1),
           "turns_per_s": round(args.tenants * args.turns / elapsed, 1), "rss_mb": round(_rss_mb()),
           "open_files": _open_files()}
    print(json.dumps(out))
    return out


def query(args: argparse.Namespace) -> dict:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if args.nofile:  # before anything opens files (Chroma sizes caches from this limit)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(args.nofile, hard), hard))
    from langmem_cog import CogMemConfig, CogMemory, CogMemRetriever

    questions = [str(q["question"]) for conv in _locomo() for q in conv.qa if q.get("question")]
    overrides = {} if args.open_namespaces is None else {"open_namespaces": args.open_namespaces}
    memory = CogMemory(CogMemConfig(data_dir=args.dir, **overrides))
    tenants = memory.store.namespaces()
    rng = random.Random(args.seed)
    rss0, files0 = _rss_mb(), _open_files()
    peak_rss, peak_files, failed, crossed, lat = rss0, files0, 0, 0, []
    errors: dict[str, int] = {}
    for _ in range(args.queries):
        ns = rng.choice(tenants)
        retriever = CogMemRetriever(memory=memory, namespace=ns)
        t0 = time.perf_counter()
        try:
            docs = retriever.invoke(rng.choice(questions))
        except Exception as exc:  # counted and reported: this benchmark measures failures
            failed += 1
            key = f"{type(exc).__name__}: {str(exc)[:120]}"
            errors[key] = errors.get(key, 0) + 1
            continue
        lat.append((time.perf_counter() - t0) * 1000)
        crossed += sum(1 for d in docs if not str(d.metadata.get("turn_id", "")).startswith(f"{ns}-"))
        peak_rss, peak_files = max(peak_rss, _rss_mb()), max(peak_files, _open_files())
    lat.sort()
    out = {"tenants": len(tenants), "queries": args.queries, "nofile": args.nofile,
           "open_namespaces": memory.config.open_namespaces,
           "rss_mb_after_open": round(rss0), "peak_rss_mb": round(peak_rss),
           "open_files_after_open": files0, "peak_open_files": peak_files, "failed": failed,
           "cross_tenant_docs": crossed,
           "p50_ms": round(statistics.median(lat), 1) if lat else None,
           "p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 1) if lat else None, "errors": errors}
    print(json.dumps(out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="ingest --tenants namespaces of --turns turns each into --dir")
    b.add_argument("--dir", type=Path, required=True)
    b.add_argument("--tenants", type=int, default=100)
    b.add_argument("--turns", type=int, default=20)
    b.add_argument("--seed", type=int, default=0)
    q = sub.add_parser("query", help="query random tenants of --dir from this (fresh) process")
    q.add_argument("--dir", type=Path, required=True)
    q.add_argument("--queries", type=int, default=200)
    q.add_argument("--nofile", type=int, default=1024, help="the soft open-files limit to run under (0: as is)")
    q.add_argument("--open-namespaces", type=int, default=None, help="CogMemConfig.open_namespaces (default: its default)")
    q.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    (build if args.cmd == "build" else query)(args)


if __name__ == "__main__":
    main()

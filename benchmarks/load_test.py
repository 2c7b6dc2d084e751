"""Sustained mixed load: ingest + search from several threads for a bounded time.

Prints throughput, p50 / p95 latencies, the error count (must be 0) and RSS growth, and
exits with status 1 if any call failed. Part of ``make reliability``.

Usage::

    python benchmarks/load_test.py --seconds 60 --writers 2 --readers 4 [--data-dir DIR] [--embedder fake|minilm]

The default embedder is the hashed bag-of-words ``FakeEmbeddings`` of the test suite, so
the figures measure the store (Chroma, BM25, graph, locking), not the model.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

WORDS = ["puppy", "hiking", "guitar", "marathon", "painting", "nurse", "Japan", "cake", "peanuts", "detective", "sister", "lake", "band", "Berlin", "pottery", "birthday", "hospital", "trip", "spring", "book", "shoes", "chocolate", "jazz", "Friday", "weekend"]


def rss_mb() -> float:
    """Resident set size of this process in MiB (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--writers", type=int, default=2)
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--namespaces", type=int, default=4)
    ap.add_argument("--batch", type=int, default=5)
    ap.add_argument("--data-dir", default=None, help="persistent data dir (default: a temporary one)")
    ap.add_argument("--embedder", choices=["fake", "minilm"], default="fake")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)

    from langmem_cog import CogMemConfig
    from langmem_cog.memory import CogMemory
    from langmem_cog.records import make_turn

    data_dir = args.data_dir or tempfile.mkdtemp(prefix="lmc-load-")
    if args.embedder == "fake":
        from fakes import FakeEmbeddings

        mem = CogMemory(CogMemConfig(data_dir=data_dir), embeddings=FakeEmbeddings())
    else:
        mem = CogMemory(CogMemConfig(data_dir=data_dir))
    namespaces = [f"load-{i}" for i in range(args.namespaces)]
    # Warm up: one turn per namespace, so readers have something to search from the start.
    t0 = datetime(2024, 1, 1, tzinfo=UTC)

    def turn(ns: str, tid: str, rng: random.Random, j: int):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20)))
        return make_turn(id=tid, namespace=ns, speaker=rng.choice(["Ann", "Ben"]), text=f"I said {text}",
                         timestamp=t0 + timedelta(seconds=j), position=j)

    for ns in namespaces:
        mem.add_turns([turn(ns, "warm", random.Random(0), 0)])
    rss0 = rss_mb()
    stop = time.monotonic() + args.seconds
    lock = threading.Lock()
    add_lat: list[float] = []
    search_lat: list[float] = []
    errors: list[str] = []
    added = [0]

    def writer(w: int) -> None:
        rng = random.Random(w)
        j = 0
        while time.monotonic() < stop:
            ns = rng.choice(namespaces)
            batch = [turn(ns, f"w{w}-{j + i}", rng, j + i + 1) for i in range(args.batch)]
            j += args.batch
            t = time.perf_counter()
            try:
                mem.add_turns(batch)
            except Exception as exc:  # counted and reported
                with lock:
                    errors.append(f"add: {type(exc).__name__}: {exc}")
                continue
            with lock:
                add_lat.append(time.perf_counter() - t)
                added[0] += len(batch)

    def reader(r: int) -> None:
        rng = random.Random(1000 + r)
        while time.monotonic() < stop:
            ns = rng.choice(namespaces)
            q = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
            t = time.perf_counter()
            try:
                hits = mem.store.search(ns, q, k=10)
                if any(h.turn.namespace != ns for h in hits):
                    raise AssertionError(f"search of {ns} returned another namespace's turn")
            except Exception as exc:  # counted and reported
                with lock:
                    errors.append(f"search: {type(exc).__name__}: {exc}")
                continue
            with lock:
                search_lat.append(time.perf_counter() - t)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(args.writers)]
    threads += [threading.Thread(target=reader, args=(r,)) for r in range(args.readers)]
    start = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.monotonic() - start
    rss1 = rss_mb()
    total = sum(mem.store.count(ns) for ns in namespaces)
    consistent = all(
        set(mem.graph(ns).graph["turns"]) == {t.id for t in mem.store.get_turns(ns)} for ns in namespaces
    )
    figures = {
        "seconds": round(elapsed, 1),
        "writers": args.writers,
        "readers": args.readers,
        "batch": args.batch,
        "turns_added": added[0],
        "ingest_turns_per_s": round(added[0] / elapsed, 1),
        "searches": len(search_lat),
        "searches_per_s": round(len(search_lat) / elapsed, 1),
        "add_p50_ms": round(pct(add_lat, 0.5) * 1000, 1),
        "add_p95_ms": round(pct(add_lat, 0.95) * 1000, 1),
        "search_p50_ms": round(pct(search_lat, 0.5) * 1000, 1),
        "search_p95_ms": round(pct(search_lat, 0.95) * 1000, 1),
        "errors": len(errors),
        "rss_start_mb": round(rss0, 1),
        "rss_end_mb": round(rss1, 1),
        "rss_growth_mb": round(rss1 - rss0, 1),
        "stored_turns": total,
        "graph_in_step": consistent,
    }
    for key, value in figures.items():
        print(f"{key:>20}: {value}")
    for e in errors[:5]:
        print("ERROR", e)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    ok = not errors and consistent and total == added[0] + len(namespaces)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

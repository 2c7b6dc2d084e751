"""Single-query embedding time with torch's default threads and with one thread, on an idle machine
and with a busy process on every core (issue #20, item 10).

Usage::

    python benchmarks/query_embed_threads.py --queries 200

Prints p50 / p95 milliseconds per query for each of the four cases. The busy processes spin in pure
Python (one per core) while the queries are timed.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time

import numpy as np

from langmem_cog.embeddings import LocalSentenceEmbeddings, resolve_model_path


def _spin(stop: mp.Event) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def _time(emb: LocalSentenceEmbeddings, n: int) -> tuple[float, float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        emb.embed_array([f"What did Caroline research in week {i}?"])
        out.append((time.perf_counter() - t0) * 1000)
    return float(np.percentile(out, 50)), float(np.percentile(out, 95))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    path = resolve_model_path("minilm")
    systems = {"torch default threads": LocalSentenceEmbeddings(path, single_threads=None),
               "one thread (default)": LocalSentenceEmbeddings(path)}
    for emb in systems.values():
        emb.embed_array(["warm up"])
    for busy in (False, True):
        stop = mp.Event()
        procs = [mp.Process(target=_spin, args=(stop,)) for _ in range(os.cpu_count() or 1)] if busy else []
        for p in procs:
            p.start()
        try:
            for name, emb in systems.items():
                p50, p95 = _time(emb, args.queries)
                print(f"{'busy' if busy else 'idle'} cores, {name:<22}: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms")
        finally:
            stop.set()
            for p in procs:
                p.join()


if __name__ == "__main__":
    main()

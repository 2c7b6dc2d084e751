"""Latency of the rerank step alone (ConvMemory v2 over a fused top 10) for cross-encoder checkpoints,
token limits and torch thread counts, on a seed's test questions from cached pools.

Usage (nothing else running)::

    python benchmarks/rerank_latency.py --pool-cache results/cache/pools-graph-ctx2.pkl \
        results/fitrest/seed-47 results/heldout-l4/seed-7

Per checkpoint, token limit (``--max-lengths``) and thread count (``--threads``): ten warm-up calls,
then p50 / p95 of ``ConvMemoryCompressor.compress_documents`` over ``--sample`` test questions of
``--seed`` (shuffled as the bench's latency probe does), whose fused top 10 comes from the fusion
scorer fitted on that seed's train conversations. The full pipeline's latency is ``bench locomo``'s.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import numpy as np
import torch

from langmem_cog.bench.cascade import fit_seed_scorer, fused_head, load_pool_cache, pool_matrices
from langmem_cog.bench.runner import splits
from langmem_cog.config import CogMemConfig
from langmem_cog.rank.compressor import ConvMemoryCompressor
from langmem_cog.rank.cross_encoder import LocalCrossEncoder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--pool-cache", required=True)
    ap.add_argument("--seed", type=int, default=47)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--max-lengths", default="64,48")
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    ps = load_pool_cache(args.pool_cache)
    w = CogMemConfig().lexical_weight
    feats, gold = pool_matrices(ps, w)
    ((seed, train, test),) = list(splits(ps.by_sample, [args.seed], "seeds"))
    scorer = fit_seed_scorer(seed, train, ps, feats, gold)
    todo = [qp for sid in test for qp in ps.by_sample[sid]]
    random.Random(0).shuffle(todo)
    heads = [(fused_head(qp, scorer, feats, w)[1], qp.question["question"]) for qp in todo[: args.sample]]
    for ckpt in args.checkpoints:
        for max_length in map(int, args.max_lengths.split(",")):
            for threads in map(int, args.threads.split(",")):
                torch.set_num_threads(threads)
                compressor = ConvMemoryCompressor(cross_encoder=LocalCrossEncoder(ckpt, max_length=max_length))
                for docs, query in heads[:10]:
                    compressor.compress_documents(docs, query)
                ms = []
                for docs, query in heads:
                    t0 = time.perf_counter()
                    compressor.compress_documents(docs, query)
                    ms.append((time.perf_counter() - t0) * 1000)
                print(json.dumps({"checkpoint": ckpt, "max_length": max_length, "threads": threads,
                                  "p50_ms": round(float(np.percentile(ms, 50)), 1),
                                  "p95_ms": round(float(np.percentile(ms, 95)), 1)}), flush=True)


if __name__ == "__main__":
    main()

"""The listwise loss of equal logits on each seed's reranker training lists (the bar a trained
cross-encoder's final loss must get under), for the lists ``bench locomo --system full`` builds.

Usage::

    python benchmarks/reranker_uniform_loss.py --pool-cache results/cache/pools-graph-ctx2.pkl

Per seed: the fusion scorer fitted on the seed's train conversations, its top 10 (+ missed gold) for
the first ``--max-queries`` shuffled train questions, as the bench does, and the mean of
``ln(list length / gold in the list)`` over the lists with a gold and a non-gold candidate.
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from langmem_cog.bench.cascade import _key, load_pool_cache, pool_matrices
from langmem_cog.bench.locomo import _splits
from langmem_cog.config import CogMemConfig
from langmem_cog.rank.data import rerank_examples
from langmem_cog.rank.scorer import FusionScorer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool-cache", required=True)
    ap.add_argument("--seeds", default="7,11,23,31,47")
    ap.add_argument("--max-queries", type=int, default=500)
    args = ap.parse_args()
    ps = load_pool_cache(args.pool_cache)
    feats, gold = pool_matrices(ps, CogMemConfig().lexical_weight)
    for seed, train, _test in _splits(ps.by_sample, [int(s) for s in args.seeds.split(",")], "seeds"):
        keys = [_key(qp) for sid in train for qp in ps.by_sample[sid]]
        scorer = FusionScorer.fit([feats[k] for k in keys], [gold[k] for k in keys])
        qps = [qp for sid in train for qp in ps.by_sample[sid]]
        random.Random(seed).shuffle(qps)
        pools = [(qp.question["question"], qp.pool, scorer.score(feats[_key(qp)]), gold[_key(qp)])
                 for qp in qps[: args.max_queries]]
        lists = [e for e in rerank_examples(pools, depth=10) if 0 < e.n_gold < len(e.docs)]
        loss = float(np.mean([np.log(len(e.docs) / e.n_gold) for e in lists]))
        print(f"seed {seed}: {len(lists)} lists, loss of equal logits {loss:.4f}", flush=True)


if __name__ == "__main__":
    main()

"""The listwise loss of equal logits on each seed's reranker training lists (the bar a trained
cross-encoder's final loss must get under), for the lists ``bench locomo --system full`` builds.

Usage::

    python benchmarks/reranker_uniform_loss.py --pool-cache results/cache/pools-graph-ctx2.pkl

Per seed: the fusion scorer fitted on the seed's train conversations and its training lists for the
first ``--max-queries`` shuffled train questions, both built by the bench's own functions, then
:func:`~langmem_cog.rank.training.uniform_loss` over them.
"""

from __future__ import annotations

import argparse

from langmem_cog.bench.cascade import (
    fit_seed_scorer,
    load_pool_cache,
    pool_matrices,
    reranker_lists,
    reranker_questions,
)
from langmem_cog.bench.runner import splits
from langmem_cog.config import CogMemConfig
from langmem_cog.rank.training import uniform_loss, usable_examples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool-cache", required=True)
    ap.add_argument("--seeds", default="7,11,23,31,47")
    ap.add_argument("--max-queries", type=int, default=500)
    args = ap.parse_args()
    ps = load_pool_cache(args.pool_cache)
    feats, gold = pool_matrices(ps, CogMemConfig().lexical_weight)
    for seed, train, _test in splits(ps.by_sample, [int(s) for s in args.seeds.split(",")], "seeds"):
        scorer = fit_seed_scorer(seed, train, ps, feats, gold)
        fit_qps, _tune = reranker_questions(seed, train, ps, args.max_queries, 0)
        lists = reranker_lists(fit_qps, scorer, feats, gold)
        print(f"seed {seed}: {len(usable_examples(lists))} lists, loss of equal logits {uniform_loss(lists):.4f}",
              flush=True)


if __name__ == "__main__":
    main()

"""The per-seed LoCoMo protocol with the shipped recipe's fusion scorer (development script).

For each protocol seed, the fusion scorer is fitted with the shipped recipe
(:data:`langmem_cog.rank.shipped.SHIPPED_RECIPE`, :func:`fit_scorer`) on LongMemEval-S dev plus that
seed's five train conversations, and the seed's test questions are ranked through the cascade's own
last steps (:func:`langmem_cog.rank.shipped.rank_pools`: head with raw protection, compressor, claim
rules). The cross-encoder is the one of ``--reranker-models`` (a ``train-models`` folder); to keep a
test conversation out of it, pass one fitted without LoCoMo (``--datasets longmemeval``). Its blend
weight is chosen per seed on 300 held-out train questions (the recipe's rule). The recipe's own
per-seed cross-encoder (fine-tuned on each seed's lists) is not refitted here: five fits of about
25 minutes each on the 2-core machine.

    python benchmarks/per_seed_shipped.py --locomo-pools ~/.cache/lmc-dev/locomo-pools.pkl \\
        --lme-pools ~/.cache/lmc-dev/longmemeval-pools.pkl --reranker-models results/models-lme3 \\
        --rows results/seed-shipped.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from langmem_cog.bench.cascade import _tune_blend, load_pool_cache, pool_matrices
from langmem_cog.bench.locomo import _row, _splits
from langmem_cog.bench.pools import PoolSet
from langmem_cog.bench.protocol import SEEDS, summarize
from langmem_cog.config import CogMemConfig
from langmem_cog.rank.compressor import ConvMemoryCompressor
from langmem_cog.rank.cross_encoder import LocalCrossEncoder
from langmem_cog.rank.defaults import cascade_settings
from langmem_cog.rank.shipped import SHIPPED_RECIPE, fit_scorer, rank_pools


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo-pools", required=True, help="LoCoMo pool cache")
    ap.add_argument("--lme-pools", required=True, help="LongMemEval-S dev pool cache")
    ap.add_argument("--reranker-models", required=True, help="a train-models folder whose reranker/ is used")
    ap.add_argument("--rows", help="write the scored rows (JSON lines) here")
    ap.add_argument("--tune-queries", type=int, default=300, help="held-out train questions for the blend weight")
    args = ap.parse_args()
    loc, lme = load_pool_cache(args.locomo_pools), load_pool_cache(args.lme_pools)
    lme_qps = [qp for g in lme.by_sample.values() for qp in g]
    settings = cascade_settings(args.reranker_models)
    ce = LocalCrossEncoder(Path(args.reranker_models) / "reranker", max_length=int(settings.get("max_length", 64)))
    cfg = CogMemConfig.preset("ephemeral")
    rows, report = [], {}
    for seed, train, test in _splits(loc.by_sample, SEEDS, "seeds"):
        train_qps = [qp for sid in train for qp in loc.by_sample[sid]]
        scorer, _, _ = fit_scorer(lme_qps + train_qps, SHIPPED_RECIPE, trained_on=f"LongMemEval + seed {seed} train")
        tune = list(train_qps)
        random.Random(seed).shuffle(tune)
        tune = tune[: args.tune_queries]
        ps = PoolSet(by_sample={"tune": tune})
        feats, gold = pool_matrices(ps, cfg.lexical_weight)
        weight, grid = _tune_blend(ce, tune, scorer, feats, gold)
        compressor = ConvMemoryCompressor(cross_encoder=ce, cross_encoder_weight=weight)
        test_qps = [qp for sid in test for qp in loc.by_sample[sid]]
        for qp, ids in rank_pools(test_qps, scorer, compressor, cfg):
            rows.append(_row(seed, qp.sample_id, qp.question, ids))
        seed_rows = [r for r in rows if r["seed"] == seed]
        report[seed] = {"cross_encoder_weight": weight, "tune_mrr": grid,
                        "mrr": sum(r["mrr"] for r in seed_rows) / len(seed_rows)}
        print(json.dumps({"seed": seed, **report[seed]}), flush=True)
    summary = summarize(rows)
    print(json.dumps({"full": summary["full"], "std": summary.get("std"), "n_rows": len(rows)}), flush=True)
    if args.rows:
        Path(args.rows).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()

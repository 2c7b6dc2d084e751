"""Feature audit of the fusion scorer by leaving one dataset out (development script).

For each candidate feature set and L2 penalty, the fusion scorer is fitted on one dataset's labelled
pools and scored (fused ranking, no cross-encoder) on the other's, in both directions, against plain
hybrid search on the same questions. The recipe keeps the setting with the best mean transfer MRR; no
test split of either dataset is involved (each direction scores a dataset the scorer never saw).

    python benchmarks/feature_audit.py --locomo-pools ~/.cache/lmc-dev/locomo-pools.pkl \\
        --lme-pools ~/.cache/lmc-dev/longmemeval-pools-80.pkl
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np

from langmem_cog.bench.cascade import load_pool_cache
from langmem_cog.config import CogMemConfig
from langmem_cog.fusion import zscore_fuse
from langmem_cog.rank.shipped import SHIPPED_RECIPE, fit_scorer, mean_mrr, rank_pools

DROPS = {
    "all features": (),
    "no style (position, length, question mark)": ("style",),
    "no style, no answer types": ("style", "who_name", "where_place", "count_number", "title_name",
                                  "like_preference", "why_reason"),
    "no graph": ("graph",),
    "no context": ("context",),
}
L2S = (1e-3, 1e-2, 1e-1)


def _hybrid_mrr(qps) -> float:
    total = 0.0
    for qp in qps:
        s = zscore_fuse([qp.pool.dense, qp.pool.lexical], [1.0, 1.0])
        ids = [qp.pool.ids[i] for i in np.argsort(-s, kind="stable")]
        gold = set(qp.question["gold"])
        total += next((1.0 / r for r, t in enumerate(ids, 1) if t in gold), 0.0)
    return total / len(qps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo-pools", required=True)
    ap.add_argument("--lme-pools", required=True)
    args = ap.parse_args()
    cfg = CogMemConfig.preset("ephemeral")
    data = {name: [qp for g in load_pool_cache(p).by_sample.values() for qp in g]
            for name, p in (("locomo", args.locomo_pools), ("longmemeval", args.lme_pools))}
    print(f"hybrid (z-score fusion of the pools' scores): LoCoMo {_hybrid_mrr(data['locomo']):.4f}, "
          f"LongMemEval {_hybrid_mrr(data['longmemeval']):.4f}")
    results = []
    for label, drop in DROPS.items():
        for l2 in L2S:
            recipe = dataclasses.replace(SHIPPED_RECIPE, drop_features=drop, l2=l2)
            lme_fit, _, _ = fit_scorer(data["longmemeval"], recipe)
            loc_fit, _, _ = fit_scorer(data["locomo"], recipe)
            to_loc = mean_mrr(rank_pools(data["locomo"], lme_fit, None, cfg))
            to_lme = mean_mrr(rank_pools(data["longmemeval"], loc_fit, None, cfg))
            results.append({"features": label, "l2": l2, "lme_to_locomo": round(to_loc, 4),
                            "locomo_to_lme": round(to_lme, 4), "mean": round((to_loc + to_lme) / 2, 4)})
            print(json.dumps(results[-1]), flush=True)
    best = max(results, key=lambda r: r["mean"])
    print("best:", json.dumps(best))


if __name__ == "__main__":
    main()

"""Feature audit of the fusion scorer by leaving one dataset out (development script).

For each candidate feature set, L2 penalty and raw-protect setting (how many of plain hybrid's best
turns the fused top 10 must hold, :func:`langmem_cog.rank.head.head_order`), the fusion scorer is
fitted as the recipe fits it (:func:`langmem_cog.bench.recipe.fit_scorer`: dropped columns held at zero,
:meth:`FusionScorer.fit`, their weights set to 0; the features are computed once) on one dataset's
labelled pools and scored on the other's, in both directions, against plain hybrid search on the same pools
(z(dense) + z(BM25) over each pool, which gives `bench locomo --system hybrid`'s Hit@10 exactly).
Only the fused ranking is scored (no cross-encoder, no claim rules, which reorder inside the top 10
and so change neither Hit@10 nor recall_all@10). No test split is involved: each direction scores a
dataset the scorer never saw.

A setting passes when, in the direction where it was not fitted, it keeps the Hit@10 memory tax on
LoCoMo within 1% of hybrid's hits and LongMemEval's turn recall_all@10 at least at hybrid's. Among
passing settings the script picks the one whose smaller MRR gain over hybrid (of the two directions)
is largest.

    python benchmarks/feature_audit.py --locomo-pools ~/.cache/lmc-dev/locomo-pools.pkl \\
        --lme-pools ~/.cache/lmc-dev/longmemeval-pools.pkl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import numpy as np

from langmem_cog.bench.cascade import load_pool_cache, pool_key, pool_matrices
from langmem_cog.bench.pools import PoolSet
from langmem_cog.bench.recipe import dropped_features
from langmem_cog.rank.features import FEATURE_NAMES
from langmem_cog.rank.head import head_order
from langmem_cog.rank.scorer import FusionScorer

# The context features are left out of every set: 177 of the 233 LongMemEval pools have no context scores.
FEATURE_SETS = {
    "all features": ("context",),
    "no style (position, length, question mark)": ("style", "context"),
    "transfer set (the shipped recipe)": ("nontransfer",),
    "transfer set, no graph": ("nontransfer", "graph"),
}
L2S = (1e-2, 3e-2, 1e-1)
PROTECTS = (0, 8)


def _ranked(qps: Sequence, scorer, feats: dict, protect: int) -> list[list[str]]:
    out = []
    for qp in qps:
        hybrid = qp.pool.hybrid(1.0)
        order = head_order(scorer.score(feats[pool_key(qp)]) if scorer is not None else hybrid, hybrid, protect=protect)
        out.append([qp.pool.ids[i] for i in order])
    return out


def _metrics(qps: Sequence, ranked: list[list[str]], base: list[list[str]]) -> dict[str, float]:
    mrr, hits, rall, tax, base_hits = [], 0, 0, 0, 0
    for qp, ids, hyb in zip(qps, ranked, base, strict=True):
        gold = set(qp.question["gold"])
        mrr.append(next((1.0 / r for r, t in enumerate(ids, 1) if t in gold), 0.0))
        hit, base_hit = bool(gold & set(ids[:10])), bool(gold & set(hyb[:10]))
        hits += hit
        base_hits += base_hit
        tax += base_hit and not hit
        rall += gold <= set(ids[:10])
    n = len(qps)
    return {"mrr": float(np.mean(mrr)), "hit10": hits / n, "recall_all10": rall / n, "tax": tax,
            "tax_pct": 100.0 * tax / max(base_hits, 1)}


def _features(qps: Sequence) -> tuple[dict, dict]:
    ps = PoolSet()
    for qp in qps:
        ps.by_sample.setdefault(qp.sample_id, []).append(qp)
    return pool_matrices(ps, 1.0)


def _fit(qps: Sequence, feats: dict, gold: dict, drop: Sequence[str], l2: float) -> FusionScorer:
    """:func:`~langmem_cog.bench.recipe.fit_scorer`'s fit on precomputed features."""
    cols = [FEATURE_NAMES.index(f) for f in dropped_features(drop)]
    lists = []
    for qp in qps:
        X = feats[pool_key(qp)].copy()
        X[:, cols] = 0.0
        lists.append(X)
    scorer = FusionScorer.fit(lists, [gold[pool_key(qp)] for qp in qps], l2=l2)
    scorer.weights[cols] = 0.0
    return scorer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo-pools", required=True, help="LoCoMo pool cache (bench transfer / train-models)")
    ap.add_argument("--lme-pools", required=True, help="LongMemEval-S dev pool cache (benchmarks/lme_pools.py)")
    args = ap.parse_args()
    data = {name: [qp for g in load_pool_cache(p).by_sample.values() for qp in g]
            for name, p in (("locomo", args.locomo_pools), ("longmemeval", args.lme_pools))}
    mats = {name: _features(qps) for name, qps in data.items()}
    hybrid = {name: _ranked(qps, None, mats[name][0], 0) for name, qps in data.items()}
    ref = {name: _metrics(qps, hybrid[name], hybrid[name]) for name, qps in data.items()}
    print("hybrid:", json.dumps({k: {m: round(v, 4) for m, v in r.items()} for k, r in ref.items()}), flush=True)
    results = []
    for label, drop in FEATURE_SETS.items():
        for l2 in L2S:
            fitted = {name: _fit(qps, *mats[name], drop, l2) for name, qps in data.items()}
            for protect in PROTECTS:
                to_loc = _metrics(data["locomo"], _ranked(data["locomo"], fitted["longmemeval"], mats["locomo"][0],
                                                          protect), hybrid["locomo"])
                to_lme = _metrics(data["longmemeval"], _ranked(data["longmemeval"], fitted["locomo"],
                                                               mats["longmemeval"][0], protect), hybrid["longmemeval"])
                passes = to_loc["tax_pct"] <= 1.0 and to_lme["recall_all10"] >= ref["longmemeval"]["recall_all10"]
                gain = min(to_loc["mrr"] - ref["locomo"]["mrr"], to_lme["mrr"] - ref["longmemeval"]["mrr"])
                results.append({"features": label, "l2": l2, "protect": protect, "passes": passes,
                                "min_mrr_gain": round(gain, 4),
                                "lme_to_locomo": {m: round(v, 4) for m, v in to_loc.items()},
                                "locomo_to_lme": {m: round(v, 4) for m, v in to_lme.items()}})
                print(json.dumps(results[-1]), flush=True)
    passing = [r for r in results if r["passes"]]
    best = max(passing or results, key=lambda r: r["min_mrr_gain"])
    print(("best passing: " if passing else "nothing passes; best: ") + json.dumps(best))


if __name__ == "__main__":
    main()

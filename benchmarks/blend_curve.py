"""The cross-encoder's blend curve on held-out and on left-out questions.

For a leave-one-dataset-out fit (``langmem-cog train-models --datasets X --work-dir W --out M``), prints
the MRR of ``w * ce + first`` inside the protected top 10 for every weight of a grid:

- on the fitted dataset's held-out questions, scored by the fold checkpoints in ``W/folds`` (the
  cross-fitted curve the recipe chooses its weight on), and
- on every question of the left-out dataset, scored by ``M/reranker`` (``--left-out``),

each with the cross-encoder's scores z-scored per question (the compressor's blend) and centred only
(its raw scale kept). Only the head is reordered (no attribution rules), so the figures are not the
product's; ``bench transfer`` gives those. A question whose gold is below the head keeps its rank.

    python benchmarks/blend_curve.py --fitted longmemeval --work results/W-lme-s20 \
        --models results/models-lme-s20 --pools-dir ~/.cache/lmc-dev/int8 [--left-out]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np

from langmem_cog.bench.cascade import load_pool_cache, pool_key, pool_matrices
from langmem_cog.bench.recipe import SHIPPED_RECIPE, fit_scorer
from langmem_cog.fusion import zscore
from langmem_cog.rank.cascade import pool_documents
from langmem_cog.rank.compressor import ConvMemoryCompressor
from langmem_cog.rank.cross_encoder import LocalCrossEncoder
from langmem_cog.rank.defaults import default_scorer
from langmem_cog.rank.head import RERANK_DEPTH, head_order

GRID = (0, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10)
OTHER = {"longmemeval": "locomo", "locomo": "longmemeval"}


def heads(ce, qps, scorer, feats, gold):
    probe = ConvMemoryCompressor(cross_encoder=ce, cross_encoder_weight=1.0, first_stage_weight=0.0,
                                 use_positions=False)
    out = []
    for qp in qps:  # the head as fused_head cuts it, with the whole order kept for gold below the head
        fused, hybrid = scorer.score(feats[pool_key(qp)]), qp.pool.hybrid(1.0)
        order = head_order(fused, hybrid)
        docs = pool_documents(qp.pool, qp.graph, fused, order[:RERANK_DEPTH], hybrid=hybrid)
        g = gold[pool_key(qp)][order]
        below = next((r for r, x in enumerate(g, 1) if x and r > RERANK_DEPTH), None)
        ce_raw = np.asarray(ce.score(probe.pairs(docs, qp.question["question"])), dtype=float)
        out.append((ce_raw, np.array([d.metadata["score"] for d in docs]), g[:RERANK_DEPTH], below))
    return out


def curve(hs, raw: bool) -> dict[float, float]:
    res = {}
    for w in GRID:
        rr = []
        for ce, first, g, below in hs:
            s = w * ((ce - ce.mean()) if raw else zscore(ce)) + zscore(first)
            if g.any():
                rr.append(1.0 / (1 + int(np.nonzero(g[np.argsort(-s, kind="stable")])[0][0])))
            else:
                rr.append(1.0 / below if below else 0.0)
        res[w] = float(np.mean(rr))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fitted", choices=sorted(OTHER), required=True)
    ap.add_argument("--work", required=True, help="the fit's --work-dir (with folds/)")
    ap.add_argument("--models", required=True, help="the fit's --out")
    ap.add_argument("--pools-dir", required=True, help="folder with locomo-pools.pkl and longmemeval-pools.pkl")
    ap.add_argument("--left-out", action="store_true", help="also score the left-out dataset")
    args = ap.parse_args()
    pools = Path(args.pools_dir).expanduser()
    ps = load_pool_cache(pools / f"{args.fitted}-pools.pkl")
    qps = [qp for g in ps.by_sample.values() for qp in g]
    scorer, feats, gold = fit_scorer(qps, SHIPPED_RECIPE)
    order = list(qps)
    random.Random(SHIPPED_RECIPE.seed).shuffle(order)
    held = []
    for f in range(SHIPPED_RECIPE.folds):
        ce = LocalCrossEncoder(Path(args.work) / "folds" / f"fold-{f}", max_length=SHIPPED_RECIPE.score_max_length)
        held += heads(ce, order[f::SHIPPED_RECIPE.folds], scorer, feats, gold)
    runs = {f"{args.fitted} held out (cross-fitted)": held}
    if args.left_out:
        other = load_pool_cache(pools / f"{OTHER[args.fitted]}-pools.pkl")
        oqps = [qp for g in other.by_sample.values() for qp in g]
        ofeats, ogold = pool_matrices(other, 1.0)
        ce = LocalCrossEncoder(Path(args.models) / "reranker", max_length=SHIPPED_RECIPE.score_max_length)
        runs[f"{OTHER[args.fitted]} left out"] = heads(ce, oqps, default_scorer(args.models), ofeats, ogold)
    for name, hs in runs.items():
        for raw in (False, True):
            c = curve(hs, raw)
            print(f"{name}, {'centred' if raw else 'z-scored'} cross-encoder ({len(hs)} q): "
                  + " ".join(f"{w}:{m:.4f}" for w, m in c.items()))


if __name__ == "__main__":
    main()

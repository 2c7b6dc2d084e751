"""Held-out MRR and H@1 of a reranker recipe on each seed's tune questions (train questions the
cross-encoder never sees), for choosing a recipe without the test split.

Usage::

    python benchmarks/heldout_probe.py --pool-cache results/cache/pools-graph-ctx2.pkl --seeds 7,23 \
        --fit-rest --num-layers 4 --work-dir results/heldout-l4

Per seed, with the bench's own functions and the settings of ``bench locomo --system full``'s session-9
recipe (warm start from the shipped reranker, mean pooling, lr 2e-4, 2 epochs, 96-token training pairs,
one frozen layer, one thread): the fusion scorer fitted on the seed's train conversations; the
cross-encoder trained on the first ``--max-queries`` shuffled train questions (with ``--fit-rest``,
also those after the tune slice), or ``--reuse`` of a checkpoint already in ``--work-dir``; then the
blend grid (MRR / H@1 of ``w * z(cross-encoder) + z(first stage)`` inside the fused top 10) on the next
``--tune-queries`` questions, scored at ``--score-max-length`` tokens.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from langmem_cog.bench.cascade import (
    blend_grid,
    blend_heads,
    fit_seed_scorer,
    load_pool_cache,
    pool_matrices,
    reranker_lists,
    reranker_questions,
)
from langmem_cog.bench.runner import splits
from langmem_cog.config import CogMemConfig
from langmem_cog.rank.cross_encoder import LocalCrossEncoder, default_reranker_path
from langmem_cog.rank.training import TrainConfig, train_cross_encoder

WEIGHTS = (0.0, 0.25, 0.5, 0.6, 0.75, 0.9, 1.0, 1.25, 1.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool-cache", required=True)
    ap.add_argument("--seeds", default="7,23")
    ap.add_argument("--work-dir", required=True, help="per-seed checkpoints go to WORK_DIR/seed-N")
    ap.add_argument("--reuse", action="store_true", help="score the checkpoint already in WORK_DIR/seed-N")
    ap.add_argument("--max-queries", type=int, default=500)
    ap.add_argument("--tune-queries", type=int, default=300)
    ap.add_argument("--fit-rest", action="store_true")
    ap.add_argument("--num-layers", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--score-max-length", type=int, default=64)
    args = ap.parse_args()
    ps = load_pool_cache(args.pool_cache)
    feats, gold = pool_matrices(ps, CogMemConfig().lexical_weight)
    cfg = TrainConfig(epochs=args.epochs, lr=args.lr, max_length=96, threads=1, freeze_layers=1,
                      num_layers=args.num_layers, pooling="mean")
    for seed, train, _test in splits(ps.by_sample, [int(s) for s in args.seeds.split(",")], "seeds"):
        scorer = fit_seed_scorer(seed, train, ps, feats, gold)
        fit_qps, tune_qps = reranker_questions(seed, train, ps, args.max_queries, args.tune_queries, args.fit_rest)
        out = Path(args.work_dir) / f"seed-{seed}"
        if not args.reuse:
            report = train_cross_encoder(reranker_lists(fit_qps, scorer, feats, gold), default_reranker_path(), out, cfg)
            print(f"seed {seed}: trained on {report['examples']} lists in {report['seconds']:.0f} s, final loss "
                  f"{report['final_epoch_loss']:.4f} (equal logits: {report['uniform_loss']:.4f})", flush=True)
        ce = LocalCrossEncoder(out, max_length=args.score_max_length, threads=1)
        grid = blend_grid(blend_heads(ce, tune_qps, scorer, feats, gold), WEIGHTS)
        print(json.dumps({"seed": seed, "tune_questions": len(tune_qps),
                          "mrr_h1_by_weight": {str(w): [round(m, 4), round(h, 4)] for w, (m, h) in grid.items()}}),
              flush=True)


if __name__ == "__main__":
    main()

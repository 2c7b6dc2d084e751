"""The per-seed LoCoMo protocol with the shipped recipe's fusion scorer (development script).

For each protocol seed, the fusion scorer is fitted with the shipped recipe
(:data:`langmem_cog.bench.recipe.SHIPPED_RECIPE`, :func:`fit_scorer`) on LongMemEval-S dev plus that
seed's five train conversations, and the seed's test questions are ranked through the cascade's own
last steps (:func:`langmem_cog.bench.recipe.rank_pools`: head with raw protection, compressor, claim
rules). The cross-encoder is the one of ``--reranker-models`` (a ``train-models`` folder); to keep a
test conversation out of it, pass one fitted without LoCoMo (``--datasets longmemeval``). Its blend
weight is chosen per seed on 300 held-out train questions (the recipe's rule).

With ``--fit-cross-encoder DIR`` the whole recipe is refitted per seed instead
(:func:`langmem_cog.bench.recipe.fit_recipe`, what ``langmem-cog train-models`` runs): the fusion
scorer, the cross-encoder fine-tuned on that seed's lists (LongMemEval-S dev + the seed's train
conversations; ~25 minutes on one core) and its blend weight on held-out questions of the same
pools. The cross-encoder trains on one thread, so two processes with ``--seeds`` split the seeds
over two cores; ``--merge`` summarises their rows files together.

    python benchmarks/per_seed_shipped.py --locomo-pools ~/.cache/lmc-dev/locomo-pools.pkl \\
        --lme-pools ~/.cache/lmc-dev/longmemeval-pools.pkl --reranker-models results/models-lme3 \\
        --rows results/seed-shipped.jsonl
    python benchmarks/per_seed_shipped.py --locomo-pools ... --lme-pools ... \\
        --fit-cross-encoder results/seed-fits --seeds 7 11 23 --rows results/seed-recipe-a.jsonl
    python benchmarks/per_seed_shipped.py --merge results/seed-recipe-a.jsonl results/seed-recipe-b.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
from pathlib import Path

from langmem_cog.bench.blend import BLEND_RULES
from langmem_cog.bench.cascade import load_pool_cache, pool_matrices, tune_blend
from langmem_cog.bench.pools import PoolSet
from langmem_cog.bench.protocol import SEEDS, summarize
from langmem_cog.bench.recipe import SHIPPED_RECIPE, fit_recipe, fit_scorer, rank_pools
from langmem_cog.bench.runner import row, splits
from langmem_cog.config import CogMemConfig
from langmem_cog.rank.compressor import SCALES, ConvMemoryCompressor
from langmem_cog.rank.cross_encoder import LocalCrossEncoder
from langmem_cog.rank.defaults import load_blend_settings


def _print_summary(rows: list[dict]) -> None:
    summary = summarize(rows)
    print(json.dumps({"full": summary["full"], "std": summary.get("std"), "n_rows": len(rows)}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo-pools", help="LoCoMo pool cache")
    ap.add_argument("--lme-pools", help="LongMemEval-S dev pool cache")
    ap.add_argument("--reranker-models", help="a train-models folder whose reranker/ is used (fusion-only refit)")
    ap.add_argument("--fit-cross-encoder", metavar="DIR",
                    help="refit the whole recipe per seed, cross-encoder included, in DIR/seed-N")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS), help=f"protocol seeds (default: {SEEDS})")
    ap.add_argument("--blend-rule", choices=list(BLEND_RULES), default=SHIPPED_RECIPE.blend_rule,
                    help="how held-out MRR picks the blend weight (default: the shipped recipe's)")
    ap.add_argument("--blend-scale", choices=list(SCALES), default=SHIPPED_RECIPE.blend_scale,
                    help="the scale the blend weight is chosen and applied on (default: the shipped recipe's); "
                         "with --fit-cross-encoder, a second run reuses the first run's checkpoints")
    ap.add_argument("--rerank-precision", choices=["auto", "fp32", "int8"], default="auto",
                    help="the cross-encoder's arithmetic when ranking the test questions (default: the product's, "
                         "auto: int8 on ONNX Runtime, else fp32)")
    ap.add_argument("--rows", help="write the scored rows (JSON lines) here")
    ap.add_argument("--tune-queries", type=int, default=300, help="held-out train questions for the blend weight")
    ap.add_argument("--merge", nargs="+", metavar="ROWS", help="only summarise these rows files together")
    args = ap.parse_args()
    if args.merge:
        _print_summary([json.loads(line) for f in args.merge for line in Path(f).read_text().splitlines() if line])
        return
    if not (args.locomo_pools and args.lme_pools and (args.reranker_models or args.fit_cross_encoder)):
        ap.error("pass --locomo-pools, --lme-pools and --reranker-models or --fit-cross-encoder")
    if set(args.seeds) - set(SEEDS):
        ap.error(f"--seeds must be among the protocol's {SEEDS}")
    loc, lme = load_pool_cache(args.locomo_pools), load_pool_cache(args.lme_pools)
    lme_qps = [qp for g in lme.by_sample.values() for qp in g]
    from langmem_cog.runtime import resolve_backend

    quantize = args.rerank_precision == "int8" or (args.rerank_precision == "auto" and resolve_backend("auto") == "onnx")
    ce = None
    recipe = dataclasses.replace(SHIPPED_RECIPE, blend_rule=args.blend_rule, blend_scale=args.blend_scale)
    positions = SHIPPED_RECIPE.pair_positions  # the pair format of the cross-encoders fitted here
    if not args.fit_cross_encoder:
        blend = load_blend_settings(args.reranker_models)
        positions = blend.use_positions  # that folder's pair format
        ce = LocalCrossEncoder(Path(args.reranker_models) / "reranker", max_length=blend.max_length,
                               quantize=quantize)
    cfg = CogMemConfig.preset("ephemeral")
    rows, report = [], {}
    for seed, train, test in splits(loc.by_sample, args.seeds, "seeds"):
        train_qps = [qp for sid in train for qp in loc.by_sample[sid]]
        trained_on = f"LongMemEval + seed {seed} train"
        if args.fit_cross_encoder:
            work = Path(args.fit_cross_encoder) / f"seed-{seed}"
            models = fit_recipe(lme_qps + train_qps, recipe, work, trained_on=trained_on,
                                reuse=(work / "reranker" / "training.json").exists())
            scorer, weight, grid = models.scorer, models.cross_encoder_weight, models.report["tune_mrr"]
            seed_ce = LocalCrossEncoder(work / "reranker", max_length=models.max_length, quantize=quantize)
        else:
            scorer, _, _ = fit_scorer(lme_qps + train_qps, SHIPPED_RECIPE, trained_on=trained_on)
            tune = list(train_qps)
            random.Random(seed).shuffle(tune)
            tune = tune[: args.tune_queries]
            ps = PoolSet(by_sample={"tune": tune})
            feats, gold = pool_matrices(ps, cfg.search.lexical_weight)
            seed_ce = ce
            weight, grid = tune_blend(seed_ce, tune, scorer, feats, gold, positions=positions,
                                      rule=recipe.blend_rule, scale=recipe.blend_scale)
        compressor = ConvMemoryCompressor(cross_encoder=seed_ce, cross_encoder_weight=weight, use_positions=positions,
                                          scale=recipe.blend_scale)
        test_qps = [qp for sid in test for qp in loc.by_sample[sid]]
        for qp, ids in rank_pools(test_qps, scorer, compressor, cfg):
            rows.append(row(seed, qp.sample_id, qp.question, ids))
        seed_rows = [r for r in rows if r["seed"] == seed]
        report[seed] = {"cross_encoder_weight": weight, "tune_mrr": grid,
                        "mrr": sum(r["mrr"] for r in seed_rows) / len(seed_rows)}
        print(json.dumps({"seed": seed, **report[seed]}), flush=True)
        if args.rows:  # each seed's rows as soon as it is done
            Path(args.rows).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    _print_summary(rows)
    if args.rows:
        Path(args.rows).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()

"""Choose fusion features without reading a test split: leave-one-conversation-out inside each seed's train half.

For every LoCoMo seed, each of its five train conversations is held out in turn, the fusion scorer is
fitted on the other four, and the held-out conversation's questions are ranked, once with every feature
and once with ``--drop`` held at zero (as ``bench locomo --drop-features`` does). The held-out rows of the
two are compared as ``bench compare`` compares runs (paired bootstrap of the MRR difference). The test
halves are never read. A conversation is held out once per seed it trains in, so rows repeat across
seeds and the interval is approximate.

Usage::

    python benchmarks/fusion_cv.py --pool-cache results/cache/pools-graph.pkl \
        --drop who_name,where_place,count_number,title_name,like_preference,why_reason,proper_overlap,bigram_overlap

The pool cache is the one ``bench locomo --pool-cache`` writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from langmem_cog.bench.cascade import dropped_columns, load_pool_cache, pool_key, pool_matrices  # noqa: E402
from langmem_cog.bench.compare import compare_rows  # noqa: E402
from langmem_cog.bench.protocol import SEEDS, row_metrics, split_conversations  # noqa: E402
from langmem_cog.config import CogMemConfig  # noqa: E402
from langmem_cog.rank.scorer import FusionScorer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool-cache", required=True)
    ap.add_argument("--drop", required=True, help="comma-separated feature names (or 'graph') held at zero")
    args = ap.parse_args()
    ps = load_pool_cache(args.pool_cache)
    w = CogMemConfig.preset("ephemeral").lexical_weight
    drop = dropped_columns(args.drop.split(","))
    feats, gold = pool_matrices(ps, w)
    fewer = {k: X.copy() for k, X in feats.items()}
    for X in fewer.values():
        X[:, drop] = 0.0
    rows = held_out_rows(ps, {f"without {len(drop)}": fewer, "all features": feats}, gold)
    (base, a), (new, b) = rows.items()
    print(compare_rows(a, b).format(base, new))


def held_out_rows(ps, runs: dict[str, dict], gold: dict, seeds=SEEDS) -> dict[str, list[dict]]:
    """Per feature set in ``runs`` (question key -> feature matrix), the held-out rows of leave-one-conversation-out
    inside each seed's train half; prints per-seed means as it goes."""
    rows: dict[str, list[dict]] = {name: [] for name in runs}
    for seed in seeds:
        train, _ = split_conversations(ps.by_sample, seed)
        for held in train:
            keys = [pool_key(qp) for sid in train if sid != held for qp in ps.by_sample[sid]]
            for name, feats in runs.items():
                scorer = FusionScorer.fit([feats[k] for k in keys], [gold[k] for k in keys])
                for qp in ps.by_sample[held]:
                    order = np.argsort(-scorer.score(feats[pool_key(qp)]), kind="stable")
                    rows[name].append({"seed": seed, "sample_id": held, "qa_index": qp.question["qa_index"],
                                       **row_metrics([qp.pool.ids[i] for i in order], qp.question["gold"])})
        print(f"seed {seed}: held-out train MRR " + ", ".join(
            f"{n} {np.mean([r['mrr'] for r in v if r['seed'] == seed]):.4f}" for n, v in rows.items()), flush=True)
    return rows


if __name__ == "__main__":
    main()

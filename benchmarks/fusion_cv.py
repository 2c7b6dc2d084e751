"""Choose fusion features without reading a test split: leave-one-conversation-out inside each seed's train half.

For every LoCoMo seed, each of its five train conversations is held out in turn, the fusion scorer is
fitted on the other four, and the held-out conversation's questions are ranked. The MRR over all those
held-out rows is printed for the full feature set and for the set with ``--drop`` held at zero (as
``bench locomo --drop-features`` does). The test halves are never read.

Usage::

    python benchmarks/fusion_cv.py --pool-cache results/cache/pools-graph.pkl \
        --drop who_name,where_place,count_number,title_name,like_preference,why_reason,proper_overlap,bigram_overlap

The pool cache is the one ``bench locomo --pool-cache`` writes.
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from langmem_cog.bench.cascade import _dropped, _key  # noqa: E402
from langmem_cog.bench.protocol import SEEDS  # noqa: E402
from langmem_cog.config import CogMemConfig  # noqa: E402
from langmem_cog.rank.features import candidate_features  # noqa: E402
from langmem_cog.rank.scorer import FusionScorer  # noqa: E402


def _mrr(keys: list, feats: dict, gold: dict, scorer: FusionScorer) -> list[float]:
    out = []
    for k in keys:
        g = gold[k][np.argsort(-scorer.score(feats[k]), kind="stable")]
        out.append(1.0 / (1 + int(np.argmax(g))) if g.any() else 0.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool-cache", required=True)
    ap.add_argument("--drop", required=True, help="comma-separated feature names (or 'graph') held at zero")
    args = ap.parse_args()
    with Path(args.pool_cache).open("rb") as fh:
        ps = pickle.load(fh)  # noqa: S301 - our own cache file
    w = CogMemConfig.preset("ephemeral").lexical_weight
    feats = {_key(qp): candidate_features(qp.pool, qp.question["question"], qp.graph, lexical_weight=w)
             for qps in ps.by_sample.values() for qp in qps}
    gold = {_key(qp): np.isin(np.array(qp.pool.ids), qp.question["gold"]) for qps in ps.by_sample.values() for qp in qps}
    drop = _dropped(args.drop.split(","))
    fewer = {k: X.copy() for k, X in feats.items()}
    for X in fewer.values():
        X[:, drop] = 0.0
    scores: dict[str, list[float]] = {"all features": [], f"without {len(drop)}": []}
    ids = sorted(ps.by_sample)
    for seed in SEEDS:
        order = ids[:]
        random.Random(seed).shuffle(order)
        train = order[:5]
        for held in train:
            keys = [_key(qp) for sid in train if sid != held for qp in ps.by_sample[sid]]
            held_keys = [_key(qp) for qp in ps.by_sample[held]]
            for name, F in zip(scores, (feats, fewer), strict=True):
                scorer = FusionScorer.fit([F[k] for k in keys], [gold[k] for k in keys])
                scores[name] += _mrr(held_keys, F, gold, scorer)
        print(f"seed {seed}: " + ", ".join(f"{n} {np.mean(v):.4f}" for n, v in scores.items()), flush=True)
    a, b = (np.array(v) for v in scores.values())
    rng = np.random.default_rng(0)
    boots = [float((a - b)[idx].mean()) for idx in rng.integers(0, len(a), size=(2000, len(a)))]
    print(f"held-out train rows {len(a)}: MRR all {a.mean():.4f}, without {b.mean():.4f}, "
          f"diff {a.mean() - b.mean():+.4f}, 95% CI [{np.percentile(boots, 2.5):+.4f}, {np.percentile(boots, 97.5):+.4f}]")


if __name__ == "__main__":
    main()

"""Which neighbour should a turn's context vector hold? Train-half cross-validation, no test split read.

The store's context vector embeds a turn with the **previous** turn of its session
(``langmem_cog.context``). This script compares that choice with the **next** turn: for each
variant the two context columns (``context_z``, ``context_rr``) are recomputed from that variant's
vectors, and, as in ``fusion_cv.py``, each train conversation of each seed is held out in turn, the
fusion scorer is fitted on the other four and the held-out questions are ranked. Every variant is
compared with ``none`` (the context columns held at zero) by the paired bootstrap of ``bench compare``.

Usage::

    python benchmarks/context_variants.py --pool-cache results/cache/pools-graph-ctx.pkl

The pool cache is the one ``bench locomo --pool-cache`` writes (its pools carry the ``previous`` scores);
the ``next`` variant is embedded here with the packaged MiniLM (a few minutes on one core).
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from fusion_cv import held_out_rows  # noqa: E402

from langmem_cog.bench.cascade import _key, pool_matrices  # noqa: E402
from langmem_cog.bench.compare import compare_rows  # noqa: E402
from langmem_cog.config import CogMemConfig  # noqa: E402
from langmem_cog.context import _previous  # noqa: E402
from langmem_cog.embeddings import resolve_embedder  # noqa: E402
from langmem_cog.fusion import zscore  # noqa: E402
from langmem_cog.rank.features import FEATURE_NAMES, _rank_recip  # noqa: E402

CZ, CR = FEATURE_NAMES.index("context_z"), FEATURE_NAMES.index("context_rr")


def _next_cosines(ps) -> dict:
    """Per question, the cosine of the query and each pool turn embedded with the *next* turn of its session."""
    emb = resolve_embedder("minilm")
    out = {}
    for qps in ps.by_sample.values():
        turns = sorted(qps[0].pool.turns, key=lambda t: (t.conversation_id, t.position, t.id))
        previous = _previous(turns)  # the store's session rule: turn j is the next turn of j - 1 when linked
        texts = [f"{t.memory_text}\n{turns[j + 1].memory_text}" if j + 1 < len(turns) and previous[j + 1] is t
                 else t.memory_text for j, t in enumerate(turns)]
        row = {t.id: i for i, t in enumerate(turns)}
        vecs = np.asarray(emb.embed_documents(texts))
        queries = np.asarray(emb.embed_documents([qp.question["question"] for qp in qps]))
        for qp, q in zip(qps, queries, strict=True):
            out[_key(qp)] = vecs[[row[t] for t in qp.pool.ids]] @ q
        print(f"embedded {qps[0].sample_id}", flush=True)
    return out


def _with(feats: dict, cos: dict | None) -> dict:
    out = {}
    for k, X in feats.items():
        X = X.copy()
        if cos is None:
            X[:, [CZ, CR]] = 0.0
        else:
            X[:, CZ], X[:, CR] = zscore(cos[k]), _rank_recip(cos[k])
        out[k] = X
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool-cache", required=True)
    args = ap.parse_args()
    with Path(args.pool_cache).open("rb") as fh:
        ps = pickle.load(fh)  # noqa: S301 - our own cache file
    if any(qp.pool.context is None for qps in ps.by_sample.values() for qp in qps):
        raise SystemExit(f"{args.pool_cache} has no context scores: rebuild it with this version's bench")
    feats, gold = pool_matrices(ps, CogMemConfig.preset("ephemeral").lexical_weight)
    runs = {"none": _with(feats, None), "previous": feats, "next": _with(feats, _next_cosines(ps))}
    rows = held_out_rows(ps, runs, gold)
    for name in ("previous", "next"):
        print(compare_rows(rows["none"], rows[name]).format("none", name))


if __name__ == "__main__":
    main()

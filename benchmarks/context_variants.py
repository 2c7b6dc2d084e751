"""How much context should a turn's context features hold? Train-half cross-validation, no test split read.

The store scores each turn's **context text** (``langmem_cog.context``: up to ``CONTEXT_TURNS`` = 2
previous turns of its session, then the turn) twice: the cosine of its vector (``context_z``,
``context_rr``) and BM25 against a context index (``context_lex_z``, ``context_lex_rr``). This script
compares that choice with other windows: for each variant the four context columns are recomputed
from that variant's texts (or held at zero), and, as in ``fusion_cv.py``, each train conversation of
each seed is held out in turn, the fusion scorer is fitted on the other four and the held-out
questions are ranked. Every variant is compared with ``none`` (the four columns held at zero) and
with the shipped one by the paired bootstrap of ``bench compare``.

Variants (``--variants``, comma-separated):

- ``none``: no context features;
- ``prevN``: N previous turns, vectors and BM25 (``prev2`` is what the store ships; its columns come
  straight from the pool cache, the others are embedded here with the packaged MiniLM);
- ``prevN-vectors`` / ``prevN-bm25``: only one of the two halves;
- ``next``: the turn and the next turn of its session, vectors and BM25.

Usage::

    python benchmarks/context_variants.py --pool-cache results/cache/pools-graph-ctx2.pkl \\
        --variants none,prev1,prev2-vectors,prev2,prev3 --seeds 7,11

The pool cache is the one ``bench locomo --pool-cache`` writes (its pools carry the shipped scores).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from fusion_cv import held_out_rows  # noqa: E402

from langmem_cog.bench.cascade import load_pool_cache, pool_key, pool_matrices  # noqa: E402
from langmem_cog.bench.compare import compare_rows  # noqa: E402
from langmem_cog.bench.protocol import SEEDS  # noqa: E402
from langmem_cog.config import CogMemConfig  # noqa: E402
from langmem_cog.context import CONTEXT_TURNS, context_text, context_windows, previous_turns  # noqa: E402
from langmem_cog.embeddings import resolve_embedder  # noqa: E402
from langmem_cog.fusion import zscore  # noqa: E402
from langmem_cog.lexical import LexicalIndex  # noqa: E402
from langmem_cog.rank.features import CONTEXT_FEATURES, FEATURE_NAMES, rank_recip  # noqa: E402

VEC = [FEATURE_NAMES.index(f) for f in ("context_z", "context_rr")]
LEX = [FEATURE_NAMES.index(f) for f in ("context_lex_z", "context_lex_rr")]
SHIPPED = f"prev{CONTEXT_TURNS}"
_VARIANT = re.compile(r"^(none|next|prev[1-9])(-vectors|-bm25)?$")


def _texts(turns, window: str) -> list[str]:
    """The context text of each turn (chronological order) for a window: ``prevN`` or ``next``."""
    if window.startswith("prev"):
        return [context_text(t, w) for t, w in zip(turns, context_windows(turns, int(window[4:])), strict=True)]
    previous = previous_turns(turns)  # the store's session rule: turn j is the next turn of j - 1 when linked
    return [f"{t.memory_text}\n{turns[j + 1].memory_text}" if j + 1 < len(turns) and previous[j + 1] is t
            else t.memory_text for j, t in enumerate(turns)]


def _scores(ps, window: str) -> tuple[dict, dict]:
    """Per question, the cosine and the BM25 of each pool turn's context text for ``window``."""
    emb = resolve_embedder("minilm")
    cos, bm25 = {}, {}
    for qps in ps.by_sample.values():
        turns = sorted(qps[0].pool.turns, key=lambda t: (t.conversation_id, t.position, t.id))
        texts = _texts(turns, window)
        row = {t.id: i for i, t in enumerate(turns)}
        vecs = np.asarray(emb.embed_documents(texts))
        queries = np.asarray(emb.embed_documents([qp.question["question"] for qp in qps]))
        lexical = LexicalIndex()
        lexical.add([t.id for t in turns], texts)
        for qp, q in zip(qps, queries, strict=True):
            cos[pool_key(qp)] = vecs[[row[t] for t in qp.pool.ids]] @ q
            bm25[pool_key(qp)] = lexical.scores_for(qp.question["question"], qp.pool.ids)
        print(f"{window}: embedded {qps[0].sample_id}", flush=True)
    return cos, bm25


def _with(feats: dict, cols: list[int], scores: dict | None) -> dict:
    out = {}
    for k, X in feats.items():
        X = X.copy()
        if scores is None:
            X[:, cols] = 0.0
        else:
            X[:, cols[0]], X[:, cols[1]] = zscore(scores[k]), rank_recip(scores[k])
        out[k] = X
    return out


def variant_features(ps, feats: dict, name: str) -> dict:
    """The feature matrices of one variant (see the module docstring)."""
    m = _VARIANT.match(name)
    if m is None:
        raise SystemExit(f"unknown variant {name!r}: use none, next or prevN, optionally with -vectors or -bm25")
    window, half = m.group(1), m.group(2)
    if window == "none":
        return _with(feats, VEC + LEX, None)
    if window == SHIPPED:
        cos = bm25 = None
        out = feats
    else:
        cos, bm25 = _scores(ps, window)
        out = _with(_with(feats, VEC, cos), LEX, bm25)
    if half == "-vectors":
        out = _with(out, LEX, None)
    elif half == "-bm25":
        out = _with(out, VEC, None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool-cache", required=True)
    ap.add_argument("--variants", default=f"none,prev1,{SHIPPED}", help="comma-separated (see the docstring)")
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated LoCoMo seeds")
    ap.add_argument("--rows", help="write each variant's held-out rows to ROWS.<variant>.jsonl (to pool lanes)")
    args = ap.parse_args()
    ps = load_pool_cache(args.pool_cache)
    if any(qp.pool.context is None for qps in ps.by_sample.values() for qp in qps):
        raise SystemExit(f"{args.pool_cache} has no context scores ({', '.join(CONTEXT_FEATURES)}): "
                         "rebuild it with this version's bench")
    feats, gold = pool_matrices(ps, CogMemConfig.preset("ephemeral").lexical_weight)
    names = list(dict.fromkeys(["none", *args.variants.split(","), SHIPPED]))
    runs = {name: variant_features(ps, feats, name) for name in names}
    rows = held_out_rows(ps, runs, gold, seeds=[int(s) for s in args.seeds.split(",")])
    if args.rows:
        for name, r in rows.items():
            Path(f"{args.rows}.{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in r), encoding="utf-8")
    for name in names[1:]:
        print(compare_rows(rows["none"], rows[name]).format("none", name))
    for name in names[1:]:
        if name != SHIPPED:
            print(compare_rows(rows[name], rows[SHIPPED]).format(name, SHIPPED))


if __name__ == "__main__":
    main()

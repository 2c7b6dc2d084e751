"""Where the attribution-and-currency set's errors lie: two diagnostics over one half of the set.

``echo``: each belief or now-question's counterpart turn (the record; the old state) is taken as the
anchor and every turn of the conversation is scored against it as the later word on the matter scores
them (:meth:`~langmem_cog.store.TurnStore.pool_scores` for the anchor's text with its stored vector,
z-scored dense plus BM25). Prints, per kind, how often the answer is the strongest candidate: for a
belief question the holder's turns said with or after the record, for a now-question the speaker's
turns of later sessions. That bounds what a rule that starts from the counterpart can do.

``dense``: dense retrieval alone over every turn (``"speaker: text"``) with each embedder, per kind:
H@1, gold in the top 10 and MRR. Needs all-mpnet-base-v2 (``make models-mpnet``) for ``mpnet``.

``stance``: a stance classifier distilled from the stance lexicon onto the default embedder's vectors
(logistic regression; positives: turns with a first-person stance or hedge, negatives: turns with no
stance cue at all, ``--per-class`` of each, 6+ words), trained on the chitchat corpus with the chitchat
set's 8 pairs left out (needs ``chitchat-dataset``), then read on the half's opinion turns (the belief
questions' gold) and record turns (the record questions' gold), alone and or-ed with the lexicon
(:func:`~langmem_cog.rank.questions.states_stance`), at several thresholds.

Usage::

    python benchmarks/memset_diagnostics.py echo --split dev
    python benchmarks/memset_diagnostics.py dense --split dev --embedders minilm mpnet
    python benchmarks/memset_diagnostics.py stance --split dev
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from langmem_cog.bench.memset import load_memset, pick_split


def _convs(split: str) -> list:
    return pick_split(load_memset(), split)  # type: ignore[arg-type]  # split: dev, test or all (argparse)


def echo(split: str) -> None:
    from langmem_cog import CogMemConfig, CogMemory
    from langmem_cog.fusion import zscore_fuse
    from langmem_cog.rank.features import first_name

    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    found: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for conv in _convs(split):
        ns = f"diag.{conv.sample_id}"
        memory.add_turns([t.model_copy(update={"namespace": ns}) for t in conv.turns])
        by_id = {t.id: t for t in conv.turns}
        vectors = memory.store.stored_vectors(ns, list(by_id))
        for q in conv.questions:
            if q.kind not in ("belief", "now") or not q.other:
                continue
            anchor, gold = by_id[q.other[0]], by_id[q.evidence[0]]
            ps = memory.store.pool_scores(ns, anchor.text, query_vector=vectors[anchor.id])
            z = dict(zip(ps.ids, zscore_fuse([ps.dense, ps.lexical], [1.0, 1.0]), strict=True))
            if q.kind == "now":
                cands = [t for t in conv.turns if t.speaker == anchor.speaker and t.session_id != anchor.session_id
                         and t.timestamp > anchor.timestamp]
            else:
                cands = [t for t in conv.turns if first_name(t.speaker) == first_name(q.holder)
                         and t.id != anchor.id and t.timestamp >= anchor.timestamp]
            best = max(cands, key=lambda t: z.get(t.id, -np.inf), default=None)
            found[q.kind].append((best is not None and best.id == gold.id, float(z.get(gold.id, -np.inf)) >= 3.0))
        memory.forget(ns)
    for kind, rows in found.items():
        print(f"{kind}: {len(rows)} questions; the answer is the strongest candidate for {sum(a for a, _ in rows)}, "
              f"of them with z >= 3.0: {sum(a and b for a, b in rows)}")


def dense(split: str, embedders: list[str]) -> None:
    from langmem_cog import CogMemConfig
    from langmem_cog.embeddings import config_embedder

    for name in embedders:
        model = config_embedder(CogMemConfig.preset("ephemeral", embedder=name, embed_precision="fp32"))
        ranks: dict[str, list[int]] = defaultdict(list)
        for conv in _convs(split):
            ids = [t.id for t in conv.turns]
            turns = np.asarray(model.embed_documents([f"{t.speaker}: {t.text}" for t in conv.turns]))
            for q in conv.questions:
                order = list(np.argsort(-(turns @ np.asarray(model.embed_query(q.question))), kind="stable"))
                ranks[q.kind].append(order.index(ids.index(q.evidence[0])) + 1)
        for kind, r in ranks.items():
            a = np.array(r)
            print(f"{name} {kind}: n={len(a)} H@1 {np.mean(a == 1):.3f} in top 10 {np.mean(a <= 10):.3f} "
                  f"MRR {np.mean(1 / a):.3f}")


def stance(split: str, per_class: int) -> None:
    import random
    import sys
    from pathlib import Path

    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    from langmem_cog.config import CogMemConfig
    from langmem_cog.embeddings import config_embedder
    from langmem_cog.rank.questions import states_stance

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import chitchat

    texts = [t for _, t in chitchat.unheld_turns() if len(t.split()) >= 6]
    random.Random(0).shuffle(texts)
    pos = [t for t in texts if states_stance(t, evaluative=False)][:per_class]
    neg = [t for t in texts if not states_stance(t)][:per_class]
    emb = config_embedder(CogMemConfig.preset("ephemeral"))
    X, y = np.asarray(emb.embed_documents(pos + neg)), np.array([1] * len(pos) + [0] * len(neg))
    clf = LogisticRegression(C=1.0, max_iter=2000)
    print(f"chitchat corpus, 8 set pairs left out: {len(pos)} stance and {len(neg)} plain turns; "
          f"3-fold accuracy on the lexicon's labels {cross_val_score(clf, X, y, cv=3).mean():.3f}")
    clf.fit(X, y)
    opinions, records = [], []
    for conv in _convs(split):
        text = {t.id: t.text for t in conv.turns}
        for q in conv.questions:
            (opinions if q.kind == "belief" else records if q.kind == "record" else []).extend(text[e] for e in q.evidence)
    p = clf.predict_proba(np.asarray(emb.embed_documents(opinions + records)))[:, 1]
    po, pr = p[: len(opinions)], p[len(opinions):]
    lo = np.array([states_stance(t) for t in opinions])
    lr = np.array([states_stance(t) for t in records])
    print(f"{split}: {len(opinions)} opinion turns, {len(records)} record turns; read as a stance by")
    print(f"  the lexicon: opinions {lo.mean():.3f}, records {lr.mean():.3f}")
    for th in (0.3, 0.4, 0.5, 0.6, 0.7):
        print(f"  classifier > {th}: opinions {(po > th).mean():.3f}, records {(pr > th).mean():.3f};"
              f" lexicon or classifier: opinions {(lo | (po > th)).mean():.3f}, records {(lr | (pr > th)).mean():.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["echo", "dense", "stance"])
    parser.add_argument("--split", choices=["dev", "test", "all"], default="dev")
    parser.add_argument("--embedders", nargs="+", default=["minilm", "mpnet"])
    parser.add_argument("--per-class", type=int, default=6000, help="stance: training turns of each label")
    args = parser.parse_args()
    if args.what == "echo":
        echo(args.split)
    elif args.what == "dense":
        dense(args.split, args.embedders)
    else:
        stance(args.split, args.per_class)


if __name__ == "__main__":
    main()

"""Does a learned reorder of the top turns put the current (or earlier) state first? A dev-half study.

For the questions of the attribution-and-currency set's dev half that the default retriever reads as
asking for a state now or before (``state_tense``, or a present-tense state question), each of the
top ``K`` turns the default retriever returns gets eight general features: its rank (1/rank), the
z-scores of its cross-encoder blend, dense and lexical scores within the list, whether its speaker is
named in the question (the holder), its place in time among the ``K`` turns signed by the question's
tense (latest first for "now", earliest for "before"), that place for the holder's turns, and whether
it is the holder's latest (earliest) turn there. A conditional logit over the list is fitted with one
conversation left out in turn, and each left-out question's first place is compared with the
default's. Only the dev half is read.

    python benchmarks/tense_reorder.py dump --out /tmp/dev-dump.jsonl
    python benchmarks/tense_reorder.py cv /tmp/dev-dump.jsonl --k 10
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

FEATURES = ("inv_rank", "blend_z", "dense_z", "lexical_z", "holder", "time", "time_x_holder", "holder_extreme")


def dump(out: Path) -> None:
    """Every dev question's top 20 turns of the default retriever, with their metadata, as JSON lines."""
    from langmem_cog.bench.memset import conversation_retrievers, load_memset, pick_split
    from langmem_cog.config import CogMemConfig
    from langmem_cog.memory import CogMemory

    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    with out.open("w") as fh:
        for conv, retriever in conversation_retrievers(pick_split(load_memset(), "dev"), memory):
            for q in conv.questions:
                docs = retriever.invoke(q.question)[:20]
                fh.write(json.dumps({
                    "sample_id": conv.sample_id, "id": q.id, "kind": q.kind, "question": q.question,
                    "gold": sorted(q.evidence),
                    "docs": [{"turn_id": d.metadata["turn_id"], "speaker": d.metadata["speaker"],
                              "timestamp": d.metadata["timestamp"], "score": d.metadata["score"],
                              "relevance_score": d.metadata.get("relevance_score", d.metadata["score"]),
                              "dense_score": d.metadata["dense_score"],
                              "lexical_score": d.metadata["lexical_score"]} for d in docs],
                }) + "\n")


def _tense(question: str) -> str | None:
    from langmem_cog.rank.questions import asks_present_state, state_tense

    t = state_tense(question)
    return "now" if t is None and asks_present_state(question) else t


def features(row: dict, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The list's feature matrix and gold labels, or ``None`` for a question read as no state question."""
    tense = _tense(row["question"])
    if tense is None:
        return None
    from langmem_cog.fusion import zscore
    from langmem_cog.rank.features import first_name, name_tokens

    docs = row["docs"][:k]
    words = name_tokens(row["question"])
    sign = 1.0 if tense == "now" else -1.0
    ts = np.array([np.datetime64(d["timestamp"][:19]).astype("datetime64[s]").astype(float) for d in docs])
    place = ts.argsort().argsort() / max(len(docs) - 1, 1) - 0.5
    holder = np.array([first_name(d["speaker"]) in words for d in docs], float)
    held = ts[holder > 0]
    edge = (max(held) if sign > 0 else min(held)) if len(held) else None
    extreme = np.array([float(holder[i] > 0 and ts[i] == edge) for i in range(len(docs))])
    X = np.stack([1 / np.arange(1, len(docs) + 1), zscore([d["relevance_score"] for d in docs]),
                  zscore([d["dense_score"] for d in docs]), zscore([d["lexical_score"] for d in docs]),
                  holder, sign * place, sign * place * holder, extreme], 1)
    y = np.array([d["turn_id"] in row["gold"] for d in docs], float)
    return X, y


def fit(lists: list[tuple[np.ndarray, np.ndarray]], l2: float) -> np.ndarray:
    """A conditional logit (softmax over each list, the gold turns' mass maximised), L2-penalised."""
    import torch

    Xs = [torch.tensor(X, dtype=torch.float32) for X, y in lists if y.sum() > 0]
    ys = [torch.tensor(y > 0) for X, y in lists if y.sum() > 0]
    w = torch.zeros(Xs[0].shape[1], requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=200)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = sum(torch.logsumexp(X @ w, 0) - torch.logsumexp((X @ w)[y], 0) for X, y in zip(Xs, ys, strict=True))
        loss = loss / len(Xs) + l2 * (w ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy()


def cv(dump_file: Path, k: int) -> None:
    """First places of the default and of the reorder fitted with each conversation left out, by kind; where the
    now-questions' new state stands when the default misses it in the top ``k``; the weights fitted on all."""
    rows = [json.loads(line) for line in dump_file.open()]
    data = [(r, f) for r in rows if (f := features(r, k)) is not None]
    samples = sorted({r["sample_id"] for r, _ in data})
    kinds = sorted({r["kind"] for r, _ in data})
    for l2 in (0.01, 0.1, 1.0):
        won: dict[str, bool] = {}
        for s in samples:
            w = fit([f for r, f in data if r["sample_id"] != s], l2)
            won |= {r["id"]: bool(y[int(np.argmax(X @ w))] > 0) for r, (X, y) in data if r["sample_id"] == s}
        for kind in kinds:
            ids = [(r["id"], y) for r, (_, y) in data if r["kind"] == kind]
            base = sum(bool(y[0] > 0) for _, y in ids)
            print(f"l2={l2} {kind}: {len(ids)} questions, gold in the top {k}: {sum(bool(y.sum()) for _, y in ids)}, "
                  f"first: default {base}, reorder {sum(won[i] for i, _ in ids)}")
    col = {name: i for i, name in enumerate(FEATURES)}
    missed = [(X, int(np.argmax(y))) for r, (X, y) in data if r["kind"] == "now" and y.sum() and not y[0]]
    others = sum(X[g, col["holder"]] == 0 for X, g in missed)
    latest = sum(X[g, col["holder_extreme"]] == 1 for X, g in missed)
    print(f"now-questions with the new state in the top {k} but not first: {len(missed)}; it is the named speaker's "
          f"latest turn there in {latest}, another's in {others}, an earlier turn of the named speaker in "
          f"{len(missed) - latest - others}")
    w = fit([f for _, f in data], 0.1)
    print("weights (all dev, l2=0.1):", {n: round(float(v), 2) for n, v in zip(FEATURES, w, strict=True)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("cv")
    c.add_argument("dump", type=Path)
    c.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args.out)
    else:
        cv(args.dump, args.k)


if __name__ == "__main__":
    main()

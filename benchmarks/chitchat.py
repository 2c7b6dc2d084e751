"""A third labelled set: real two-person, multi-session chats, with questions written for this project.

LoCoMo's conversations are written by a language model and LongMemEval's are user-assistant chats.
The BYU PCC chitchat corpus (``chitchat-dataset`` on PyPI, MIT licence) holds 7,168 real text
conversations between people, and many pairs of people talked again and again over weeks. This
script turns such pairs into LoCoMo's schema, so that every LoCoMo command (``bench locomo --data``,
``bench transfer --on locomo --data``) scores on them unchanged:

- a **sample** is one pair of people: every conversation of exactly those two senders, in time order,
  one session each (its ``start`` is the session's date);
- a **turn** is one run of messages by one sender (the corpus's inner lists), joined with spaces;
- the two senders get fixed pseudonyms (``NAMES``), the sorted sender ids in order.

Which pairs: those with at least 10 conversations and 400 to 1,000 turns (LoCoMo's conversations
have 369-689 turns), shuffled with ``random.Random(31)``, the first 8. The rule looks at sizes only.

The questions (``benchmarks/data/chitchat_questions.json``) were written by people who
read only the converted conversations (``dump``) and never saw a retriever's output; each names its
evidence turns. The conversations themselves are not copied into the repo: ``build`` makes them from
the installed package::

    pip install -e ".[bench]"                      # chitchat-dataset
    python benchmarks/chitchat.py dump --out /tmp/cc          # one text file per sample, to read
    python benchmarks/chitchat.py build --out ~/.cache/lmc-dev/chitchat.json
    langmem-cog bench locomo --system hybrid --split all --data ~/.cache/lmc-dev/chitchat.json
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from langmem_cog.loaders import locomo_turns

QUESTIONS = Path(__file__).resolve().parent / "data" / "chitchat_questions.json"
NAMES = (
    "Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan",
    "Kendall", "Logan", "Morgan", "Parker", "Quinn", "Riley", "Rowan", "Sawyer",
)
MIN_CONVERSATIONS = 10
TURN_RANGE = (400, 1000)
SAMPLES = 8
SEED = 31


def load_corpus() -> dict:
    """The corpus as the package ships it: conversation key -> record."""
    try:
        from importlib.resources import files

        text = files("chitchat_dataset").joinpath("dataset.json").read_text(encoding="utf-8")
    except ModuleNotFoundError as exc:
        raise SystemExit('chitchat-dataset is not installed: pip install -e ".[bench]"') from exc
    return json.loads(text)


def _senders(record: dict) -> tuple[str, ...]:
    return tuple(sorted({m["sender"] for group in record["messages"] for m in group}))


def _turns(record: dict) -> list[tuple[str, str]]:
    out = []
    for group in record["messages"]:
        text = " ".join(m["text"].strip() for m in group if m.get("text", "").strip())
        if text:
            out.append((group[0]["sender"], text))
    return out


def select_pairs(corpus: dict) -> list[tuple[tuple[str, str], list[str]]]:
    """The chosen pairs of senders, each with its conversation keys in time order."""
    pairs: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for key, record in corpus.items():
        senders = _senders(record)
        if len(senders) == 2:
            pairs[senders].append(key)
    eligible = []
    for senders, keys in sorted(pairs.items()):
        n_turns = sum(len(_turns(corpus[k])) for k in keys)
        if len(keys) >= MIN_CONVERSATIONS and TURN_RANGE[0] <= n_turns <= TURN_RANGE[1]:
            eligible.append((senders, sorted(keys, key=lambda k: (corpus[k]["start"], k))))
    random.Random(SEED).shuffle(eligible)
    return eligible[:SAMPLES]


def unheld_turns(corpus: dict | None = None) -> list[tuple[str, str]]:
    """Every ``(sender, text)`` turn of the corpus's conversations outside the chosen pairs, in corpus
    order: text to learn from that never touches the chitchat set."""
    corpus = load_corpus() if corpus is None else corpus
    held = {k for _, keys in select_pairs(corpus) for k in keys}
    return [turn for key, record in corpus.items() if key not in held for turn in _turns(record)]


def _date(stamp: str) -> str:
    when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    return f"{when.hour % 12 or 12}:{when.minute:02d} {'am' if when.hour < 12 else 'pm'} on {when.day} {when:%B}, {when.year}"


def conversations(corpus: dict) -> list[dict]:
    """The chosen pairs in LoCoMo's schema, without questions."""
    out = []
    for i, (senders, keys) in enumerate(select_pairs(corpus)):
        names = dict(zip(senders, NAMES[2 * i : 2 * i + 2], strict=True))
        conv: dict = {"speaker_a": names[senders[0]], "speaker_b": names[senders[1]]}
        for s, key in enumerate(keys, start=1):
            conv[f"session_{s}_date_time"] = _date(corpus[key]["start"])
            conv[f"session_{s}"] = [
                {"speaker": names[sender], "dia_id": f"D{s}:{n}", "text": text}
                for n, (sender, text) in enumerate(_turns(corpus[key]), start=1)
            ]
        out.append({"sample_id": f"cc-{i + 1}", "conversation": conv, "source_keys": keys})
    return out


def dump(corpus: dict, out: Path) -> None:
    """One plain-text file per sample, every turn with its id, for writing questions."""
    out.mkdir(parents=True, exist_ok=True)
    for sample in conversations(corpus):
        conv = sample["conversation"]
        lines = [f"# {sample['sample_id']}: {conv['speaker_a']} and {conv['speaker_b']}"]
        session = None
        for t in locomo_turns(sample):
            if t.session_id != session:
                session = t.session_id
                lines.append(f"\n=== Session {session}, {t.metadata['session_date']}")
            lines.append(f"{t.id} {t.speaker}: {t.text}")
        (out / f"{sample['sample_id']}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def build(corpus: dict, questions: Path, out: Path) -> int:
    """Write the samples with their questions in LoCoMo's schema; returns the number of questions."""
    qa = json.loads(questions.read_text(encoding="utf-8"))["qa"]
    samples = conversations(corpus)
    ids = {s["sample_id"] for s in samples}
    unknown = {q["sample_id"] for q in qa} - ids
    if unknown:
        raise SystemExit(f"questions name unknown samples {sorted(unknown)}")
    for sample in samples:
        turn_ids = {t.id for t in locomo_turns(sample)}
        sample["qa"] = []
        for q in qa:
            if q["sample_id"] != sample["sample_id"]:
                continue
            bad = [e for e in q["evidence"] if e not in turn_ids]
            if bad:
                raise SystemExit(f"{q['sample_id']} {q['question']!r}: evidence {bad} is not a turn id")
            sample["qa"].append({k: q[k] for k in ("question", "answer", "evidence", "category")})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(samples, indent=1), encoding="utf-8")
    return len(qa)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="one text file per sample, to read")
    d.add_argument("--out", type=Path, required=True)
    b = sub.add_parser("build", help="the samples and questions as a LoCoMo-schema JSON file")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--questions", type=Path, default=QUESTIONS)
    args = parser.parse_args()
    corpus = load_corpus()
    if args.cmd == "dump":
        dump(corpus, args.out)
    else:
        n = build(corpus, args.questions, args.out)
        print(f"{n} questions -> {args.out}")


if __name__ == "__main__":
    main()

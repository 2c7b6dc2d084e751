"""Record one operator-loop trace per intent on real LoCoMo questions (conv-26) into docs/TRACES.md.

Usage: python benchmarks/record_traces.py [--data ../shared/data/locomo/locomo10.json] [--out docs/TRACES.md]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from pathlib import Path

from langmem_cog import CogMemConfig, load_locomo
from langmem_cog.cli import main
from langmem_cog.memory import CogMemory

QUESTIONS = [
    ("COMPARE", "What subject have Caroline and Melanie both painted?"),
    ("BELIEF", "What does Melanie think about Caroline's decision to adopt?"),
    ("TEMPORAL", "When did Melanie sign up for a pottery class?"),
    ("DETAIL", "Why did Caroline choose the adoption agency?"),
    ("OTHER", "What fields would Caroline be likely to pursue in her educaton?"),
]


def run(data: Path, out: Path) -> None:
    conv = next(c for c in load_locomo(data) if c.sample_id == "conv-26")
    records = {q["question"]: q for q in json.loads(data.read_text())[0]["qa"]}
    now = conv.turns[-1].timestamp.isoformat()
    with tempfile.TemporaryDirectory() as tmp:
        memory = CogMemory(CogMemConfig(data_dir=Path(tmp)))
        memory.add_turns(conv.turns)
        memory.consolidate(conv.sample_id)
        parts = [
            "# Operator-loop traces\n",
            "One trace per intent on real LoCoMo questions (conversation conv-26, 419 turns), recorded by\n"
            "`python benchmarks/record_traces.py` with the offline defaults (RuleExtractor, MiniLM). Each is the\n"
            "output of `langmem-cog search --trace --now <last session date> \"QUESTION\"`. Timings include\n"
            "the first query's node embedding and were taken on a shared 2-core machine.\n",
        ]
        for intent, question in QUESTIONS:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                main(["search", "--data-dir", tmp, "--namespace", conv.sample_id, "--trace", "--now", now,
                      "-k", "5", question])
            gold = records.get(question, {}).get("evidence", [])
            parts.append(f"\n## {intent}: {question}\n\nGold evidence: {', '.join(gold)}\n\n```\n{buf.getvalue()}```\n")
    out.write_text("".join(parts), encoding="utf-8")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json"))
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs/TRACES.md"))
    a = p.parse_args()
    run(Path(a.data), Path(a.out))

"""Do the ONNX Runtime and torch backends rank alike? The default retriever, live, on LoCoMo.

Two ``CogMemory`` objects, one per ``CogMemConfig.inference_backend`` (``onnx``, ``torch``), ingest the
same LoCoMo conversations (graph and consolidation on); every question of them is asked through
``CogMemRetriever(memory=..., namespace=...)`` of each, and the returned turn ids are compared.

    python benchmarks/backend_equivalence.py --data ../shared/data/locomo/locomo10.json --conversations 2
"""

from __future__ import annotations

import argparse
import json

from langmem_cog.bench.protocol import locomo_questions
from langmem_cog.config import CogMemConfig
from langmem_cog.loaders import locomo_turns, read_json
from langmem_cog.memory import CogMemory
from langmem_cog.retriever import CogMemRetriever


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="locomo10.json")
    ap.add_argument("--conversations", type=int, default=2, help="the first N conversations")
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    recs = read_json(args.data)[: args.conversations]
    ranked: dict[str, list[list[str]]] = {}
    for backend in ("onnx", "torch"):
        memory = CogMemory(CogMemConfig.preset("ephemeral", inference_backend=backend))
        out: list[list[str]] = []
        for rec in recs:
            ns = f"eq.{rec['sample_id']}"
            turns = locomo_turns(rec, namespace=ns)
            memory.add_turns(turns)
            memory.consolidate(ns)
            retriever = CogMemRetriever(memory=memory, namespace=ns, now=max(t.timestamp for t in turns))
            for q in locomo_questions(rec):
                out.append([d.metadata["turn_id"] for d in retriever.invoke(q["question"], k=args.k)])
        ranked[backend] = out
    a, b = ranked["onnx"], ranked["torch"]
    same = sum(x == y for x, y in zip(a, b, strict=True))
    same_top1 = sum(x[:1] == y[:1] for x, y in zip(a, b, strict=True))
    print(json.dumps({"questions": len(a), "identical_top_k": same, "identical_top1": same_top1, "k": args.k,
                      "conversations": args.conversations}))


if __name__ == "__main__":
    main()

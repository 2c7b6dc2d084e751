"""Replay a real LoCoMo conversation into memory, then ask about it.

Ingests one conversation (raw turns and the PEC2F graph) from a LoCoMo file: by default the
bundled sample, or e.g. ``../shared/data/locomo/locomo10.json``. Then answers each ``--ask``
(hybrid retrieval, or the operator loop with ``--mode graph``) with cited evidence and the
stand-in (or ``LMC_CHAT_MODEL``) model; ``--qa N`` replays the file's first N questions and
marks whether a gold evidence turn was retrieved.

Run (from the repository root)::

    python -m examples.locomo_replay --ask "What is Leo allergic to?"
    python -m examples.locomo_replay --data ../shared/data/locomo/locomo10.json --conversation conv-26 \\
        --ask "When did Caroline go to the LGBTQ support group?" --qa 5
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples._common import add_common_args, chat_model, fail, make_memory  # noqa: E402
from langmem_cog.data import sample_path  # noqa: E402
from langmem_cog.errors import LangMemCogError  # noqa: E402


def pick(convs: Sequence[Any], which: str | None) -> Any:
    """The conversation with this sample id or index (default: the first)."""
    from langmem_cog.errors import InvalidInputError

    if which is None:
        return convs[0]
    for i, c in enumerate(convs):
        if which in (c.sample_id, str(i)):
            return c
    raise InvalidInputError(f"no conversation {which!r}: choose a sample id or index of {[c.sample_id for c in convs]}")


def main(argv: Sequence[str] | None = None, *, embeddings: Any = None, model: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.locomo_replay", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="a LoCoMo JSON file (default: the bundled sample)")
    parser.add_argument("--conversation", default=None, help="sample id or index in the file (default: the first)")
    parser.add_argument("--ask", action="append", default=[], help="a question (repeat for several)")
    parser.add_argument("--qa", type=int, default=0, help="also replay the first N questions of the file")
    parser.add_argument("--mode", choices=["cascade", "hybrid", "graph"], default="cascade",
                        help="retrieval: the default cascade, plain hybrid search, or the operator loop alone")
    parser.add_argument("--k", type=int, default=5, help="evidence turns per question")
    parser.add_argument("--data-dir", default=None, help="persist memory here (default: in memory)")
    add_common_args(parser)
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error(f"--k {args.k} is invalid: pass a positive number of evidence turns")
    if args.qa < 0:
        parser.error(f"--qa {args.qa} is invalid: pass 0 or a positive number of questions")

    from langchain_core.messages import HumanMessage, SystemMessage

    from langmem_cog import load_locomo
    from langmem_cog.graph.loop import graph_search
    from langmem_cog.integrations.evidence import format_evidence, search_evidence

    try:
        conv = pick(load_locomo(args.data or sample_path(), namespace_prefix="replay-"), args.conversation)
        memory = make_memory(args.data_dir, embeddings=embeddings, embedder=args.embedder)
        ns = conv.turns[0].namespace
        if memory.store.has_namespace(ns):
            memory.forget(ns)  # replay from scratch
        t0 = time.perf_counter()
        memory.add_turns(conv.turns)
        G = memory.graph(ns)
        sessions = len({t.session_id for t in conv.turns})
        print(f"replayed {conv.sample_id}: {len(conv.turns)} turns of {' & '.join(conv.speakers)} in {sessions} sessions "
              f"({time.perf_counter() - t0:.1f}s); graph: {G.number_of_nodes()} nodes, {G.number_of_edges()} edges")
        llm = chat_model(args.model, model)
        now = max(t.timestamp for t in conv.turns).isoformat()

        def evidence(q: str) -> list[Any]:
            if args.mode == "graph":
                return graph_search(memory, ns, q, k=args.k, now=now)
            return search_evidence(memory, ns, q, k=args.k, mode=args.mode, now=now)

        def ask(q: str, gold: set[str] | None = None, expected: Any = None) -> None:
            ev = evidence(q)
            cited = format_evidence(ev)
            system = ("Answer from these memories of the conversation; cite the [turn id]s you use.\n\n"
                      f"Memories:\n{cited or '(none found)'}")
            answer = llm.invoke([SystemMessage(content=system), HumanMessage(content=q)]).text
            print(f"\nQ: {q}\nA: {answer}")
            if expected is not None:
                ids = [e["turn_id"] if isinstance(e, dict) else e.metadata["turn_id"] for e in ev]
                hit = bool(gold and gold & set(ids))
                print(f"expected: {expected}   gold evidence {sorted(gold or ())} retrieved: {'yes' if hit else 'no'}")
            for line in cited.splitlines():
                print(f"  {line[:150]}")

        for q in args.ask:
            ask(q)
        for qa in conv.qa[: max(args.qa, 0)]:
            ask(str(qa["question"]), set(qa.get("evidence") or ()), qa.get("answer", qa.get("adversarial_answer")))
        if not args.ask and args.qa <= 0:
            print("\nnothing asked: pass --ask \"question\" (repeatable) or --qa N")
        return 0
    except LangMemCogError as exc:
        return fail(exc)


if __name__ == "__main__":
    sys.exit(main())

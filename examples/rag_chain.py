"""An LCEL RAG chain over langmem-cog memory: cited answers with their sources.

Ingests the bundled sample conversation (or a LoCoMo file) into memory, then answers each
``--ask`` with ``create_rag_chain(CogMemRetriever(...), model)``; prints the answer and the cited
evidence. ``--tool`` shows the same retriever as a ``create_retriever_tool`` tool instead.

Run (from the repository root)::

    python -m examples.rag_chain --ask "What is Leo allergic to?"
    python -m examples.rag_chain --tool --ask "Maya's favourite book"
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples._common import add_common_args, chat_model, fail, make_memory  # noqa: E402
from langmem_cog.data import sample_path  # noqa: E402
from langmem_cog.errors import LangMemCogError  # noqa: E402

DEFAULT_QUESTIONS = ["What is Leo allergic to?", "What is Maya's favourite book?"]


def main(argv: Sequence[str] | None = None, *, embeddings: Any = None, model: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.rag_chain", description=__doc__.splitlines()[0])
    parser.add_argument("--ask", action="append", default=[], help="a question (repeat for several)")
    parser.add_argument("--data", default=None, help="a LoCoMo JSON file (default: the bundled sample)")
    parser.add_argument("--k", type=int, default=5, help="evidence turns per question")
    parser.add_argument("--tool", action="store_true", help="call the retriever tool instead of the chain")
    add_common_args(parser)
    args = parser.parse_args(argv)

    from langmem_cog import CogMemRetriever, load_locomo
    from langmem_cog.integrations.langchain import create_memory_retriever_tool, create_rag_chain

    try:
        memory = make_memory(None, embeddings=embeddings, embedder=args.embedder)
        conv = load_locomo(args.data or sample_path(), namespace_prefix="rag-")[0]
        ns = conv.turns[0].namespace
        if not memory.store.has_namespace(ns):
            memory.add_turns(conv.turns)  # the raw turns and the graph derived from them
        print(f"ingested {len(conv.turns)} turns of {' & '.join(conv.speakers)} ({conv.sample_id})")
        retriever = CogMemRetriever(memory=memory, namespace=ns, k=args.k)  # the default: the shipped cascade
        questions = args.ask or DEFAULT_QUESTIONS
        if args.tool:
            tool = create_memory_retriever_tool(retriever)
            for q in questions:
                print(f"\n{tool.name}({q!r}) ->\n{tool.invoke({'query': q})}")
            return 0
        chain = create_rag_chain(retriever, chat_model(args.model, model))
        for q in questions:
            out = chain.invoke(q)
            print(f"\nQ: {q}\nA: {out['answer']}\nsources:")
            for line in out["context"].splitlines():
                print(f"  {line[:150]}")
        return 0
    except LangMemCogError as exc:
        return fail(exc)


if __name__ == "__main__":
    sys.exit(main())

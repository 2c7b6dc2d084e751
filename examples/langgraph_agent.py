"""A LangGraph agent with langmem-cog memory, over the bundled sample conversation.

Two agents, same memory:

* ``--mode tools`` (default): ``langchain.agents.create_agent`` with the ``search_memory`` and
  ``remember`` tools; the user's namespace comes from the runtime context (``MemoryContext``).
* ``--mode graph``: a parent ``StateGraph`` whose recall node is the CogMem operator loop
  (``build_operator_graph``, a subgraph), then the model, then storing the new turns.

Run (from the repository root)::

    python -m examples.langgraph_agent --ask "What is Leo allergic to?"
    python -m examples.langgraph_agent --mode graph --ask "When did Maya run her first 10k?"
    python -m examples.langgraph_agent --ask "Remember that Leo's birthday is on 3 June." --ask "When is Leo's birthday?"
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


def seed(memory: Any, user: str) -> int:
    """Put the bundled sample conversation (Maya and Leo, 6 sessions) into the user's namespace once."""
    from langmem_cog import load_locomo

    if memory.store.has_namespace(user) and memory.store.count(user):
        return 0
    turns = [t.model_copy(update={"namespace": user}) for t in load_locomo(sample_path())[0].turns]
    memory.add_turns(turns)
    return len(turns)


def print_messages(messages: Sequence[Any]) -> None:
    for m in messages:
        if m.type == "human":
            print(f"user> {m.text}")
        elif m.type == "ai" and m.tool_calls:
            for c in m.tool_calls:
                print(f"  tool call: {c['name']}({c['args']})")
        elif m.type == "tool":
            lines = m.text.splitlines()
            print(f"  tool result ({len(lines)} line{'' if len(lines) == 1 else 's'}):")
            for line in lines[:5]:
                print(f"    {line[:140]}")
        elif m.type == "ai":
            print(f"agent> {m.text}")


def main(argv: Sequence[str] | None = None, *, embeddings: Any = None, model: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.langgraph_agent", description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["tools", "graph"], default="tools")
    parser.add_argument("--ask", action="append", default=[], help="a message (repeat for several)")
    parser.add_argument("--user", default="demo-user", help="user id, any string; its memory namespace is "
                        "user_namespace(user id)")
    parser.add_argument("--data-dir", default=None, help="persist memory here (default: in memory)")
    add_common_args(parser)
    args = parser.parse_args(argv)

    from langgraph.checkpoint.memory import InMemorySaver

    from langmem_cog.integrations.langgraph import MemoryContext, build_memory_agent_graph, create_memory_tools
    from langmem_cog.integrations.langgraph.tools import user_namespace

    try:
        memory = make_memory(args.data_dir, embeddings=embeddings, embedder=args.embedder)
        ns = user_namespace(args.user)
        n = seed(memory, ns)
        print(f"memory of {args.user!r}: {memory.store.count(ns)} turns" + (f" ({n} from the sample)" if n else ""))
        llm = chat_model(args.model, model)
        if args.mode == "tools":
            from langchain.agents import create_agent

            agent = create_agent(llm, tools=create_memory_tools(memory), context_schema=MemoryContext,
                                 checkpointer=InMemorySaver(),
                                 system_prompt="Use search_memory to answer questions about the past; cite turn ids.")
        else:
            agent = build_memory_agent_graph(memory, llm, checkpointer=InMemorySaver(), context_schema=MemoryContext)
        config = {"configurable": {"thread_id": f"{args.mode}-{ns}"}}
        ctx = MemoryContext(user_id=args.user)
        seen = 0
        for text in args.ask or DEFAULT_QUESTIONS:
            out = agent.invoke({"messages": [("user", text)]}, config=config, context=ctx)
            print_messages(out["messages"][seen:])
            if args.mode == "graph":
                ids = [e["turn_id"] for e in out.get("evidence") or []]
                print(f"  operator loop grounded: {ids[:8]}")
            seen = len(out["messages"])
        return 0
    except LangMemCogError as exc:
        return fail(exc)


if __name__ == "__main__":
    sys.exit(main())

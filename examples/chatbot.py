"""A multi-session CLI chatbot that remembers across sessions and restarts.

Each run is one session (a fresh LangGraph thread); what the user and the bot say is stored in the
user's namespace on disk, and every model call sees the cited memories that match the message
(``CogMemoryMiddleware`` on a ``langchain.agents.create_agent`` agent). Offline by default with the
stand-in model; set ``LMC_CHAT_MODEL=openai:gpt-4o-mini`` (and the provider's key) for a real one.

Run (from the repository root)::

    python -m examples.chatbot --user alice --say "My dog is called Rex."      # first run
    python -m examples.chatbot --user alice --say "What is my dog called?"     # second run, a new process
    python -m examples.chatbot --user alice                                    # interactive (/quit, /forget)
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples._common import add_common_args, chat_model, fail, make_memory  # noqa: E402
from langmem_cog.errors import LangMemCogError  # noqa: E402


def default_chatbot_dir() -> Path:
    """``$LANGMEM_COG_DATA_DIR/chatbot``, else ``~/.local/share/langmem-cog/chatbot`` (outside the repository)."""
    import os

    from langmem_cog.config import default_data_dir

    base = os.environ.get("LANGMEM_COG_DATA_DIR")
    return (Path(base).expanduser() if base else default_data_dir()) / "chatbot"


def next_session(memory: Any, user: str) -> str:
    """One more than the highest chat session stored for the user ("1" for a new user)."""
    if not memory.store.has_namespace(user):
        return "1"
    sessions = [int(t.session_id) for t in memory.store.get_turns(user) if t.session_id.isdigit()]
    return str(max(sessions, default=0) + 1)


def main(argv: Sequence[str] | None = None, *, embeddings: Any = None, model: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.chatbot", description=__doc__.splitlines()[0])
    parser.add_argument("--user", default="me", help="user id, any string (default: me); its memory namespace is "
                        "user_namespace(user id)")
    parser.add_argument("--name", default=None, help="the user's name as a speaker (default: user)")
    parser.add_argument("--say", action="append", default=[], help="a message (repeat for several); no --say: interactive")
    parser.add_argument("--data-dir", default=None,
                        help="where memory lives (default: $LANGMEM_COG_DATA_DIR/chatbot or ~/.local/share/langmem-cog/chatbot)")
    parser.add_argument("--k", type=int, default=5, help="memories given to the model per message")
    parser.add_argument("--forget", action="store_true", help="forget everything about the user first")
    add_common_args(parser)
    args = parser.parse_args(argv)
    args.data_dir = args.data_dir or str(default_chatbot_dir())

    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langmem_cog.integrations.langgraph import CogMemoryMiddleware, MemoryContext
    from langmem_cog.integrations.langgraph.tools import user_namespace

    try:
        memory = make_memory(args.data_dir, embeddings=embeddings, embedder=args.embedder)
        ns = user_namespace(args.user)
        if args.forget:
            memory.forget(ns)
            print(f"forgot everything stored for {args.user!r}")
        llm = chat_model(args.model, model)
        agent = create_agent(
            llm,
            system_prompt="You are a friendly assistant with long-term memory of earlier sessions.",
            middleware=[CogMemoryMiddleware(memory, k=args.k)],
            context_schema=MemoryContext,
            checkpointer=InMemorySaver(),
        )
        session = next_session(memory, ns)
        ctx = MemoryContext(user_id=args.user, user_name=args.name, session_id=session)
        thread = {"configurable": {"thread_id": f"{ns}-{session}-{uuid.uuid4().hex[:8]}"}}
        known = memory.store.count(ns) if memory.store.has_namespace(ns) else 0
        print(f"session {session} for {args.user!r} ({known} turn{'' if known == 1 else 's'} remembered, in {args.data_dir})")

        def turn(text: str) -> None:
            out = agent.invoke({"messages": [("user", text)]}, config=thread, context=ctx)
            print(f"you> {text}\nbot> {out['messages'][-1].text}")

        if args.say:
            for text in args.say:
                turn(text)
            return 0
        print("type a message; /forget erases your memory, /quit (or Ctrl-D) ends the session")
        while True:
            try:
                text = input("you> ").strip()
            except EOFError:
                print()
                return 0
            if text in {"/quit", "/exit"}:
                return 0
            if text == "/forget":
                memory.forget(ns)
                print("forgotten")
            elif text:
                out = agent.invoke({"messages": [("user", text)]}, config=thread, context=ctx)
                print(f"bot> {out['messages'][-1].text}")
    except LangMemCogError as exc:
        return fail(exc)


if __name__ == "__main__":
    sys.exit(main())

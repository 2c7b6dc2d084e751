"""``langmem-cog ui``: serve the memory inspector (:mod:`langmem_cog.ui`) on a local web page."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from langmem_cog.errors import LangMemCogError


def cmd_ui(args: argparse.Namespace) -> int:
    """``ui``: load the sample or LoCoMo conversations if asked, then serve the memory inspector."""
    from langmem_cog import CogMemConfig
    from langmem_cog.memory import CogMemory
    from langmem_cog.ui import InspectorAPI, locomo_conversations, make_server, sample_conversation
    from langmem_cog.ui.server import check_token

    cfg = CogMemConfig.preset("ephemeral") if args.ephemeral else CogMemConfig.from_env()
    if args.data_dir:
        if args.ephemeral:
            raise LangMemCogError("--data-dir and --ephemeral exclude each other: pick one")
        cfg = cfg.model_copy(update={"data_dir": Path(args.data_dir)})
    if args.conversation and not args.load_locomo:
        raise LangMemCogError("--conversation needs --load-locomo PATH")
    convs = [sample_conversation()] if args.demo else []
    if args.data_dir and not convs and not args.load_locomo and not Path(args.data_dir).is_dir():
        raise LangMemCogError(f"--data-dir {args.data_dir} is not an existing store: pass a store's folder "
                              "(or add --demo or --load-locomo PATH to load one into it)")
    if args.load_locomo:
        if not Path(args.load_locomo).is_file():
            raise LangMemCogError(f"--load-locomo {args.load_locomo} is not a file: pass the path of locomo10.json")
        picked = locomo_conversations(args.load_locomo, args.conversation)
        convs += picked if args.conversation else picked[:1]
    if args.no_auth and args.token is not None:
        raise LangMemCogError("--token and --no-auth exclude each other: pick one")
    # --token is visible to other local users (ps); LANGMEM_COG_UI_TOKEN is not. Neither: a random token.
    token = None if args.no_auth else args.token if args.token is not None else os.environ.get("LANGMEM_COG_UI_TOKEN") or None
    if token is not None:
        check_token(token)  # before opening the store: a bad token fails at once
    api = InspectorAPI(CogMemory(cfg), max_steps=args.max_steps)
    try:  # bind before loading: a busy port fails in a second, not after the ingestion
        server = make_server(api, host=args.host, port=args.port, token=token, auth=not args.no_auth)
    except OSError as exc:
        raise LangMemCogError(f"cannot serve on {args.host}:{args.port}: {exc}; pick another --port (0 picks a free one)") from exc
    where = "memory only" if args.ephemeral else str(cfg.resolved_data_dir())
    try:
        for conv in convs:
            print(f"loading {conv.sample_id} ({len(conv.turns)} turns) into {where} ...", file=sys.stderr)
            written = api.add_conversation(conv)
            print(f"  {conv.sample_id}: " + (f"{written} turns ingested" if written else "already stored, reused"),
                  file=sys.stderr)
        print(f"langmem-cog memory inspector on {server.url}  (store: {where}; Ctrl-C stops)", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``ui``."""
    ui = sub.add_parser("ui", help="serve the memory inspector (search trace, graph, timelines) on a local web page")
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    ui.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 picks a free one)")
    ui.add_argument("--data-dir", help="the store to inspect (default: $LANGMEM_COG_DATA_DIR, else "
                                       "~/.local/share/langmem-cog)")
    ui.add_argument("--ephemeral", action="store_true", help="keep everything in memory (nothing is written)")
    ui.add_argument("--demo", action="store_true", help="first load the bundled sample conversation (namespace demo-1)")
    ui.add_argument("--load-locomo", metavar="PATH", help="first load a conversation of a LoCoMo JSON file")
    ui.add_argument("--conversation", action="append", metavar="ID",
                    help="with --load-locomo: the sample_id to load (repeatable; default: the file's first)")
    ui.add_argument("--max-steps", type=int, default=5, help="operator step budget of the search trace")
    ui.add_argument("--token", help="access token the API requires (default: $LANGMEM_COG_UI_TOKEN, else a random one "
                                    "printed in the address; a token given here is visible to other local users in ps)")
    ui.add_argument("--no-auth", action="store_true",
                    help="no access token (loopback only): any local user or process can then read every namespace")
    ui.set_defaults(func=cmd_ui)

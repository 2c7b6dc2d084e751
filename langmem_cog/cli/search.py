"""``langmem-cog search``: the top turns of one namespace for a query, or the operator loop's trace."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

from langmem_cog.cli._common import (
    DATA_DIR_HELP,
    CLIError,
    command_config,
    counted,
    require_namespace,
    store_location,
    valid_namespace,
)
from langmem_cog.errors import LangMemCogError

#: ``search --system``: the names the benchmarks use for the two retrieval paths, as ``--mode`` values.
_SEARCH_SYSTEMS = {"hybrid": "hybrid", "full": "cascade"}


def cmd_search(args: argparse.Namespace) -> int:
    """``search``: the top ``-k`` turns of one namespace for a query (or, with ``--trace``, the operator loop)."""
    from langmem_cog import CogMemRetriever, TurnStore

    cfg = command_config(args, must_exist=True)
    ns = valid_namespace(args.namespace, "--namespace")
    if args.k < 1:
        raise CLIError(f"-k {args.k} is invalid: pass a positive number of turns")
    if args.now is not None:
        from langmem_cog.filters import parse_time

        try:
            parse_time(args.now)
        except LangMemCogError:
            raise CLIError(f"--now {args.now!r} is not an ISO date or datetime: pass e.g. 2023-05-08") from None
    mode = args.mode
    if args.system:
        wanted = _SEARCH_SYSTEMS[args.system]
        if mode is not None and mode != wanted:
            raise CLIError(f"--system {args.system} and --mode {mode} disagree: pass one of them "
                            f"(--system {args.system} is --mode {wanted})")
        mode = wanted
    where = store_location(cfg)
    if args.trace:
        return _search_trace(cfg, args, where)
    mode = mode or cfg.retriever.mode
    if mode == "cascade":
        from langmem_cog.memory import CogMemory

        memory = CogMemory(cfg)
        require_namespace(memory.store, ns, where)
        memory.sync_graph(ns)  # a namespace written by the raw store alone gets its graph here
        retriever = CogMemRetriever(memory=memory, namespace=ns, k=args.k, missing_ok=False,
                                    mode=mode, now=args.now)
    else:
        store = TurnStore(cfg)
        require_namespace(store, ns, where)
        retriever = CogMemRetriever(store=store, namespace=ns, k=args.k, missing_ok=False, mode=mode)
    for row in _search_rows(retriever.invoke(args.query)):
        print(row)
    return 0


#: ``search``'s note under rows that the claim rules placed away from their place by score.
_CLAIM_RULE = ("claim rule: the cascade puts a current claim before the claim it superseded, and someone else's "
               "opinion after the turn of the person a question names, whatever their scores")
#: ``search``'s note under a row placed first as a person's later word on the matter.
_LATER_WORD = ("later word: for a question about a state now, the cascade puts the same person's later turn on the "
               "matter (one that echoes a leading turn, from another session) first, whatever its score")
_REACTION = ("reaction: for a question about what a named person thinks, the cascade puts that person's stance on "
             "what someone else told (the turn most like a leading turn of the other's) first, whatever its score")
_STATE_VALUE = ("state's value: for a question about a person's state as it is (or was), the cascade puts the turn "
                "that first told the graph's current (or earliest) value first, whatever its score")
_CURRENT_STATE = ("current state: for a question about a state as it is, the cascade puts the turn that replaced a "
                  "leading turn's state first, whatever its score")
_HYBRID_STANCE = ("hybrid's stance: for a question about what a named person thinks (not now), the cascade keeps "
                  "first the turn plain hybrid search ranks first when it is that person's own stated opinion")
_PLACED = {"later_word": ("placed as the later word", _LATER_WORD), "reaction": ("placed as the reaction", _REACTION),
           "state_value": ("placed as the state's value", _STATE_VALUE),
           "current_state": ("placed as the current state", _CURRENT_STATE),
           "hybrid_stance": ("placed as hybrid's stance", _HYBRID_STANCE)}


def _search_rows(docs: Sequence[Any]) -> list[str]:
    """The lines ``search`` prints for the retriever's documents, in the retriever's order.

    Each row shows its rank in that order, the turn id, time, speaker, claim status (metadata
    ``claim_status``, where the graph holds a claim from the turn), state status (``fact_status``, where
    it holds a state fact: ``[state SUPERSEDED]``), stage and the score that ordered it: ``rerank`` for a
    turn the cross-encoder reordered, else the first-stage ``score``. A row away from its place by that
    score also shows the place, and which rule placed it (metadata ``placed_by``: the later word on the
    matter, the holder's reaction, the state's value, the current state or hybrid search's first stance;
    else, where it holds a claim, the claim rule); a note on each rule that placed a row then follows the rows.
    """
    def ordering(m: dict[str, Any]) -> tuple[int, float]:
        # The cross-encoder's head comes before the tail it left in first-stage order.
        return (0, -m["relevance_score"]) if m.get("reranked") else (1, -m["score"])

    by_score = sorted(range(len(docs)), key=lambda i: ordering(docs[i].metadata))
    place = {i: p for p, i in enumerate(by_score, 1)}
    rows, claim_moved, placed = [], False, []
    for rank, d in enumerate(docs, 1):
        m = d.metadata
        score = f"rerank {m['relevance_score']:.3f}" if m.get("reranked") else f"score {m['score']:.3f}"
        status = f"  [{m['claim_status']}]" if m.get("claim_status") else ""
        state = f"  [state {m['fact_status']}]" if m.get("fact_status") else ""
        note = ""
        if place[rank - 1] != rank:
            rule = _PLACED.get(str(m.get("placed_by")))
            if rule is not None and rule[1] not in placed:
                placed.append(rule[1])
            claim_moved |= bool(status) and rule is None
            why = f"; {rule[0]})" if rule is not None else "; placed by the claim rule)" if status else ")"
            note = f"  (#{place[rank - 1]} by score{why}"
        rows.append(f"{rank:>3}. [{m['turn_id']}] {m['timestamp']}  {m['speaker']}{status}{state}  {m['stage']}  "
                    f"{score}{note}\n     {d.page_content}")
    return [*rows, *([_CLAIM_RULE] if claim_moved else []), *placed]


def _search_trace(cfg: Any, args: argparse.Namespace, where: str) -> int:
    """``search --trace``: run the operator loop and print its route, steps and grounded turns."""
    from langmem_cog.graph.loop import GraphRetrieval
    from langmem_cog.graph.operators import node_text
    from langmem_cog.memory import CogMemory

    if args.max_steps < 2:
        raise CLIError(f"--max-steps {args.max_steps} is invalid: pass at least 2 operator steps (anchor, then ground)")
    memory = CogMemory(cfg)
    ns = args.namespace
    require_namespace(memory.store, ns, where)
    memory.sync_graph(ns)  # a namespace written by the raw store alone gets its graph here
    # Loaded before the traced query, so the first step's time is the operator's own.
    t0 = time.perf_counter()
    memory.store.embed_texts([args.query])
    t1 = time.perf_counter()
    vectors = memory.node_vectors
    read, embedded = vectors.read, vectors.embedded
    G = memory.graph(ns)  # reads the node vectors stored beside the graph (and, in cascade mode, embeds the rest)
    texts = {node_text(G, n) for n in G.nodes}
    vectors.warm(texts, namespace=ns)
    read, embedded = vectors.read - read, vectors.embedded - embedded
    print(f"models loaded in {(t1 - t0) * 1000:.1f} ms; {counted(len(texts), 'graph node text')} ready in "
          f"{(time.perf_counter() - t1) * 1000:.1f} ms ({read} read from disk, {embedded} embedded; before the "
          "traced query)")
    state = GraphRetrieval(memory, max_steps=args.max_steps).run(ns, args.query, now=args.now)
    window = state.get("time_window")
    bounds = [d.isoformat() if d is not None else "-" for d in window] if window else None
    print(f"intent: {state['intent']}" + (f"  window: {bounds[0]} .. {bounds[1]}" if bounds else "")
          + (f"  entities: {', '.join(state['entities'])}" if state.get("entities") else ""))
    for t in state.get("trace") or []:
        args_text = json.dumps(t["args"], default=str)
        if len(args_text) > 160:
            args_text = args_text[:157] + "..."
        top = ", ".join(t["top"][:3])
        print(f"step {t['step']}  {t['operator']:<9} -> {t['n_results']:>3} results  {t['ms']:8.1f} ms  {args_text}")
        if top:
            print(f"        top: {top}")
    print(f"stopped: {state.get('reason', '')}")
    evidence = state.get("evidence") or []
    print(f"grounded turns: {len(evidence)} (showing {min(args.k, len(evidence))})")
    for i, e in enumerate(evidence[: args.k], 1):
        print(f"{i:>3}. [{e['turn_id']}] {e['timestamp'][:10]}  score {e['score']:.3f}  via {e['node']} ({e['node_type']})\n"
              f"     {e['speaker']}: {e['text']}")
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``search``."""
    search = sub.add_parser("search", help="search one namespace of a store")
    search.add_argument("query", help="the question or search text")
    search.add_argument("--namespace", required=True, help="the namespace to search (`langmem-cog list` shows them)")
    search.add_argument("--data-dir", help=DATA_DIR_HELP)
    search.add_argument("-k", type=int, default=5, help="how many turns to print (default: 5)")
    search.add_argument("--trace", action="store_true",
                        help="answer with the graph operator loop and print its intent, steps and grounded turns "
                             "(--mode and --system do not apply)")
    search.add_argument("--mode", choices=["cascade", "hybrid", "dense", "lexical"], default=None,
                        help="retrieval path (default: the config's, the shipped cascade; LANGMEM_COG_RETRIEVAL)")
    search.add_argument("--system", choices=sorted(_SEARCH_SYSTEMS), default=None,
                        help="the benchmarks' name of the retrieval path: hybrid (= --mode hybrid: dense + BM25) "
                             "or full (= --mode cascade: graph, fusion scorer, cross-encoder rerank)")
    search.add_argument("--now", help="when the question is asked (ISO date), for 'last month'")
    search.add_argument("--max-steps", type=int, default=5, help="with --trace: operator step budget (at least 2)")
    search.set_defaults(func=cmd_search)

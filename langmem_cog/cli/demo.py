"""``langmem-cog demo``: ingest the bundled sample conversation and answer questions about it."""

from __future__ import annotations

import argparse
from pathlib import Path

from langmem_cog.cli._common import DATA_DIR_HELP


def cmd_demo(args: argparse.Namespace) -> int:
    from importlib import resources

    from langmem_cog import CogMemConfig, CogMemRetriever, load_locomo
    from langmem_cog.graph.schema import ClaimStatus, NodeType
    from langmem_cog.memory import CogMemory

    cfg = CogMemConfig.from_env()
    if args.data_dir:
        cfg = cfg.model_copy(update={"data_dir": Path(args.data_dir)})
    sample = resources.files("langmem_cog") / "data" / "sample_conversation.json"
    with resources.as_file(sample) as path:
        conv = load_locomo(path)[0]
    print(f"langmem-cog demo: store at {cfg.resolved_data_dir()} (embedder: {cfg.embedder})")
    memory = CogMemory(cfg)
    ns = conv.sample_id
    if memory.store.has_namespace(ns):
        memory.forget(ns)  # the demo is idempotent: start from a clean namespace
    memory.add_turns(conv.turns)
    memory.consolidate(ns)
    sessions = sorted({t.session_id for t in conv.turns}, key=int)
    print(
        f"ingested {len(conv.turns)} turns of {' & '.join(conv.speakers)} "
        f"over {len(sessions)} sessions into namespace {ns!r}"
    )
    G = memory.graph(ns)
    counts: dict[str, int] = {}
    for _, d in G.nodes(data=True):
        counts[str(d["type"])] = counts.get(str(d["type"]), 0) + 1
    print("PEC2F graph: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    claims = [d for _, d in G.nodes(data=True) if d["type"] == NodeType.CLAIM and "running" in str(d.get("content", "")).lower()]
    if claims:
        print("claims about running, reconciled (an opinion is attributed to its speaker, never a fact):")
        for d in sorted(claims, key=lambda d: str(d.get("timestamp"))):
            mark = "->" if d.get("status") == ClaimStatus.CURRENT else "  "
            src = d.get("source")
            name = G.nodes[src].get("name", src) if src in G else src
            print(f"  {mark} {str(d.get('timestamp'))[:10]} {name}: {d.get('status'):<11} {str(d.get('content'))[:90]}")
    facts = [d for _, d in G.nodes(data=True) if d["type"] == NodeType.FACT and d.get("consolidated")]
    for d in facts:
        print(f"consolidated fact: {d.get('text')}")
    print()
    retriever = CogMemRetriever(memory=memory, namespace=ns, k=args.k, mode=args.mode,
                                now=max(t.timestamp for t in conv.turns))
    print(f"retrieval: {retriever.mode}" + (" (raw + graph candidates -> shipped fusion -> ConvMemory v2 rerank)"
                                           if retriever.cascade_on else ""))
    hits_at_k = 0
    for qa in conv.qa:
        docs = retriever.invoke(qa["question"])
        gold = set(qa.get("evidence", []))
        found = any(d.metadata["turn_id"] in gold for d in docs)
        hits_at_k += found
        print(f"Q: {qa['question']}   (expected: {qa['answer']})")
        for d in docs:
            m = d.metadata
            mark = "*" if m["turn_id"] in gold else " "
            claim = f" [{m['claim_status']}]" if m.get("claim_status") else ""
            claim += f" [state {m['fact_status']}]" if m.get("fact_status") else ""
            print(f"  {mark} [{m['turn_id']:>6}] {m['timestamp'][:10]}  {m['stage']:<9}{claim}  {d.page_content[:100]}")
        print()
    print(f"evidence turn (*) in the top {args.k} for {hits_at_k} of {len(conv.qa)} questions")
    print(f"the store lives in {cfg.resolved_data_dir()}; search it with:")
    print(f"  langmem-cog search --namespace {ns} \"What is Leo allergic to?\"")
    print(f"  langmem-cog search --namespace {ns} --trace \"What does Maya think about running?\"")
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``demo``."""
    demo = sub.add_parser("demo", help="ingest the bundled sample conversation and answer questions about it")
    demo.add_argument("--data-dir", help=DATA_DIR_HELP)
    demo.add_argument("-k", type=int, default=3, help="evidence turns per question")
    demo.add_argument("--mode", choices=["cascade", "hybrid", "dense", "lexical"], default=None,
                      help="retrieval path (default: the config's, the shipped cascade; LANGMEM_COG_RETRIEVAL)")
    demo.set_defaults(func=cmd_demo)

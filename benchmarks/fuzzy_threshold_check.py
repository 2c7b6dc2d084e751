"""Does the one fuzzy rule (graph.resolve: token_sort_ratio >= 90) change any LoCoMo question's entities
against the loop's former rule (ratio >= 85)? Builds every question's pool through the candidate stage,
resolving the names each intersect step receives both ways.

    python benchmarks/fuzzy_threshold_check.py ../shared/data/locomo/locomo10.json
    python benchmarks/fuzzy_threshold_check.py ../shared/data/longmemeval/longmemeval_s_dev.json.gz

LongMemEval: only the haystacks of questions the router sends to ``intersect`` with names are ingested,
and those names are resolved both ways against their graphs.
"""
import sys

from rapidfuzz import fuzz

import langmem_cog.graph.loop as loop
from langmem_cog.bench.pools import collect_pools
from langmem_cog.config import CogMemConfig

new = loop._resolve_entities


def old(G, names, anchored):
    found = []
    by_type = {loop.NodeType.PERSON: [], loop.NodeType.CONCEPT: []}
    for n, d in G.nodes(data=True):
        if d.get("type") in by_type:
            by_type[d.get("type")].append((n, loop.normalize_name(str(d.get("name") or n))))
    for name in names:
        key = loop.normalize_name(name)
        if not key:
            continue
        for kind in (loop.NodeType.PERSON, loop.NodeType.CONCEPT):
            best = max(((fuzz.ratio(key, nm), str(n), n) for n, nm in by_type[kind]), default=None)
            if best is not None and best[0] >= 85 and best[2] not in found:
                found.append(best[2])
                break
    if len(found) < 2:
        for n, _ in anchored:
            if n in G and G.nodes[n].get("type") == loop.NodeType.PERSON and n not in found:
                found.append(n)
            if len(found) >= 2:
                break
    return found


stats = {"calls": 0, "with_names": 0, "differ": 0}


def both(G, names, anchored):
    a, b = old(G, names, anchored), new(G, names, anchored)
    stats["calls"] += 1
    stats["with_names"] += bool(names)
    if a != b:
        stats["differ"] += 1
        print("DIFF", names, a, b, flush=True)
    return b


loop._resolve_entities = both
if sys.argv[1].endswith(".json.gz"):
    from langmem_cog.bench.longmemeval import ingest_haystack
    from langmem_cog.graph.router import route
    from langmem_cog.loaders import load_longmemeval
    from langmem_cog.memory import CogMemory

    mem = CogMemory(CogMemConfig.preset("ephemeral"))
    for i, q in enumerate(load_longmemeval(sys.argv[1])):
        r = route(q.question)
        if r.intent == "COMPARE" and r.entities:
            ingest_haystack(mem, q, f"q{i}")
            both(mem.graph(f"q{i}"), list(r.entities), [])
else:
    collect_pools(sys.argv[1], CogMemConfig.preset("ephemeral"), with_graph=True, progress=lambda it, d, n: it)
print(stats)

"""``langmem-cog bench graph``: what the PEC2F graph holds and how fast it is built.

Measures, over every conversation of a LoCoMo-schema file:

* throughput of extraction + graph update (+ consolidation), turns/s;
* node and edge counts by type;
* evidence coverage: the share of QA evidence turns that are the provenance of at
  least one node other than a Person;
* reconciliation (claim statuses, SUPERSEDES / CONFLICTS_WITH edges) and
  consolidation (consolidated facts, SUPPORTED_BY edges) counts;
* the attribution probe (:mod:`langmem_cog.bench.probe`): how often flat dense
  retrieval returns an opinion first when a record is asked for, versus
  type-constrained graph retrieval.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from langmem_cog.bench.protocol import clean_evidence
from langmem_cog.graph.rules import RuleExtractor
from langmem_cog.graph.schema import ClaimStatus, EdgeType, NodeType
from langmem_cog.graph.store import GraphMemory
from langmem_cog.loaders import locomo_turns, read_json

__all__ = ["run_graph_bench"]

Progress = Callable[[Iterable[Any], str, int], Iterable[Any]]


def _no_progress(it: Iterable[Any], desc: str, total: int) -> Iterable[Any]:
    return it


def run_graph_bench(
    data: str | Path,
    *,
    embedder: str = "minilm",
    probe: bool = True,
    progress: Progress = _no_progress,
) -> dict[str, Any]:
    """Build the graph of every conversation with the ``RuleExtractor`` and report on it.

    Args:
        data: A JSON file in LoCoMo's schema.
        embedder: The embedder of the attribution probe (``minilm``, ``mpnet`` or a path).
        probe: Whether to run the attribution probe.
        progress: A wrapper for iterables that shows progress.

    Returns:
        The summary dict (see the module docstring).
    """
    records = read_json(data)
    nodes: Counter[str] = Counter()
    edges: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    consolidated = 0
    n_turns = 0
    elapsed = 0.0
    covered = total_evidence = 0
    per_conv: dict[str, dict[str, Any]] = {}
    for rec in progress(records, "graph", len(records)):
        sid = str(rec["sample_id"])
        turns = locomo_turns(rec, namespace="bench")
        extractor = RuleExtractor()
        mem = GraphMemory()
        t0 = time.perf_counter()
        mem.apply("bench", extractor.extract(turns))
        mem.consolidate("bench")
        dt = time.perf_counter() - t0
        elapsed += dt
        n_turns += len(turns)
        G = mem.graph("bench")
        for _, d in G.nodes(data=True):
            nodes[str(d.get("type"))] += 1
            if d.get("type") == NodeType.CLAIM:
                statuses[str(d.get("status"))] += 1
            if d.get("type") == NodeType.FACT and d.get("consolidated"):
                consolidated += 1
        for _, _, k in G.edges(keys=True):
            edges[str(k)] += 1
        content_turns: set[str] = set()
        for _, d in G.nodes(data=True):
            if d.get("type") != NodeType.PERSON:
                content_turns |= set(d.get("provenance", ()))
        valid = {t.id for t in turns}
        evidence = {e for qa in rec.get("qa", []) for e in clean_evidence(qa.get("evidence"), valid)}
        c = len(evidence & content_turns)
        covered += c
        total_evidence += len(evidence)
        per_conv[sid] = {
            "turns": len(turns),
            "nodes": G.number_of_nodes(),
            "edges": G.number_of_edges(),
            "turns_per_s": len(turns) / dt if dt else float("inf"),
            "evidence_coverage": c / len(evidence) if evidence else None,
        }
    summary: dict[str, Any] = {
        "data": str(data),
        "extractor": "rule",
        "n_conversations": len(records),
        "n_turns": n_turns,
        "turns_per_s": n_turns / elapsed if elapsed else float("inf"),
        "nodes_by_type": dict(sorted(nodes.items())),
        "edges_by_type": dict(sorted(edges.items())),
        "evidence_coverage": covered / total_evidence if total_evidence else None,
        "n_evidence_turns": total_evidence,
        "reconciliation": {
            "claims": sum(statuses.values()),
            **{s.value: statuses.get(s.value, 0) for s in ClaimStatus},
            "supersedes_edges": edges.get(EdgeType.SUPERSEDES.value, 0),
            "conflicts_with_edges": edges.get(EdgeType.CONFLICTS_WITH.value, 0),
        },
        "consolidation": {
            "consolidated_facts": consolidated,
            "supported_by_edges": edges.get(EdgeType.SUPPORTED_BY.value, 0),
        },
        "per_conversation": per_conv,
    }
    if probe:
        from langmem_cog.bench.probe import run_probe

        summary["probe"] = run_probe(embedder=embedder)
    return summary

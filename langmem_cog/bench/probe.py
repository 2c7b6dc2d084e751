"""The attribution probe: does retrieval return an opinion when a record is asked for?

Each pair of the bundled fixture (``langmem_cog/data/attribution_probe.json``, 72
pairs written for this project) holds a RECORD (one speaker's own event or fact),
a lexically overlapping OPINION of another speaker, and a question asking for the
record. Two retrievers answer each question over the pair's two turns:

* **flat**: dense cosine over ``"speaker: text"`` (what a plain vector memory does);
* **typed**: the PEC2F graph built by the ``RuleExtractor``; :func:`anchor` over
  record nodes only (Event, Fact; Claims excluded, as for a record query), then
  :func:`ground` to their source turns. If no record node is found (counted in
  ``typed_fallbacks``), turns that carry no Claim come first, in flat order.

The error rate is the share of pairs whose first result is the opinion turn.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, time
from importlib import resources
from pathlib import Path
from typing import Any

from langmem_cog.config import RetrievalMode
from langmem_cog.embeddings import resolve_embedder
from langmem_cog.graph.operators import NodeVectors, anchor, ground
from langmem_cog.graph.rules import RuleExtractor
from langmem_cog.graph.schema import NodeType
from langmem_cog.graph.store import GraphMemory
from langmem_cog.records import Turn, make_turn

__all__ = ["load_probe", "run_probe", "run_retriever_probe", "RECORD_TYPES"]

#: Node types searched for a record query (Claims excluded).
RECORD_TYPES = frozenset({NodeType.EVENT.value, NodeType.FACT.value})


def load_probe(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The probe's pairs (the bundled fixture by default)."""
    if path is None:
        text = (resources.files("langmem_cog") / "data" / "attribution_probe.json").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    return list(json.loads(text)["pairs"])


def _turns(pair: dict[str, Any], ns: str = "probe") -> tuple[Turn, Turn]:
    day = datetime.fromisoformat(pair["date"]).date()
    ts = datetime.combine(day, time(12, 0), tzinfo=UTC)
    rec = make_turn(id="record", namespace=ns, speaker=pair["record"]["speaker"], text=pair["record"]["text"],
                    timestamp=ts, position=0)
    op = make_turn(id="opinion", namespace=ns, speaker=pair["opinion"]["speaker"], text=pair["opinion"]["text"],
                   timestamp=ts, position=1)
    return rec, op


def claim_turns(G: Any) -> set[str]:
    """Turns that are the provenance of a Claim node (opinion-bearing turns)."""
    out: set[str] = set()
    for _, d in G.nodes(data=True):
        if d.get("type") == NodeType.CLAIM:
            out |= set(d.get("provenance", ()))
    return out


def run_probe(embedder: str = "minilm", path: str | Path | None = None) -> dict[str, Any]:
    """Run the attribution probe; returns error rates of flat and typed retrieval."""
    pairs = load_probe(path)
    emb = resolve_embedder(embedder)
    vectors = NodeVectors(emb.embed_array)
    flat_errors = typed_errors = fallbacks = 0
    details = []
    for pair in pairs:
        rec, op = _turns(pair)
        qv = emb.embed_array([pair["query"]])[0]
        tv = emb.embed_array([rec.memory_text, op.memory_text])
        flat = ["record", "opinion"] if float(tv[0] @ qv) >= float(tv[1] @ qv) else ["opinion", "record"]
        mem = GraphMemory()
        mem.apply("probe", RuleExtractor().extract([rec, op]))
        G = mem.graph("probe")
        anchored = anchor(G, pair["query"], types=RECORD_TYPES, vectors=vectors, query_vector=qv)
        typed = [tid for tid, _, _ in ground(G, anchored)]
        if not typed:
            # No record node: rank the turns that carry no Claim (opinions are never records),
            # then the rest, each in flat order.
            fallbacks += 1
            opinionated = claim_turns(G)
            typed = [t for t in flat if t not in opinionated] + [t for t in flat if t in opinionated]
        flat_errors += flat[0] == "opinion"
        typed_errors += typed[0] == "opinion"
        details.append({"id": pair["id"], "flat_first": flat[0], "typed_first": typed[0]})
    n = len(pairs)
    return {
        "pairs": n,
        "flat_error": flat_errors / n,
        "typed_error": typed_errors / n,
        "typed_fallbacks": fallbacks,
        "embedder": embedder,
        "details": details,
    }


def run_retriever_probe(config: Any | None = None, *, mode: RetrievalMode | None = None,
                        path: str | Path | None = None) -> dict[str, Any]:
    """The probe through :class:`~langmem_cog.CogMemRetriever` (the default retriever unless ``mode``).

    Each pair's two turns are stored in a namespace of their own in one :class:`~langmem_cog.memory.CogMemory`
    (raw store and graph, as a user's ingest); the record query must get the record first, the belief
    query (what the opinion's speaker thinks about the topic) the opinion first.

    Returns:
        ``record_h1`` and ``belief_h1`` (share of pairs whose first result is the right turn), ``pairs``,
        ``mode`` and per-pair ``details``.
    """
    import uuid

    from langmem_cog.config import CogMemConfig
    from langmem_cog.memory import CogMemory
    from langmem_cog.retriever import CogMemRetriever

    pairs = load_probe(path)
    memory = CogMemory(config or CogMemConfig.preset("ephemeral"))
    run = uuid.uuid4().hex[:8]
    record_hits = belief_hits = 0
    details = []
    used = ""
    for pair in pairs:
        ns = f"probe.{run}.{pair['id']}"
        rec, op = _turns(pair, ns)
        memory.add_turns([rec, op])
        try:
            retriever = CogMemRetriever(memory=memory, namespace=ns, k=2, mode=mode, now=rec.timestamp)
            used = str(retriever.mode)
            record_first = retriever.invoke(pair["query"])[0].metadata["turn_id"]
            belief_first = retriever.invoke(pair["belief_query"])[0].metadata["turn_id"]
        finally:
            memory.forget(ns)
        record_hits += record_first == "record"
        belief_hits += belief_first == "opinion"
        details.append({"id": pair["id"], "record_query_first": record_first, "belief_query_first": belief_first})
    n = len(pairs)
    return {"pairs": n, "mode": used, "record_h1": record_hits / n, "belief_h1": belief_hits / n, "details": details}

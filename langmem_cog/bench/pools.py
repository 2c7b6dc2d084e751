"""Per-question candidate pools of a LoCoMo run, computed once and reused by every seed.

A pool holds what the online first stage sees for one question: the conversation's turns with
their dense and BM25 scores, and (with the graph on) what the operator loop grounded. The
cascade systems fit their learned stages per seed on the train conversations' pools and
score the test conversations' pools.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langmem_cog.bench.protocol import locomo_questions
from langmem_cog.config import CogMemConfig
from langmem_cog.loaders import locomo_turns, read_json
from langmem_cog.rank.features import CandidatePool, GraphSignals

__all__ = ["QueryPool", "PoolSet", "collect_pools"]

Progress = Callable[[Iterable[Any], str, int], Iterable[Any]]


@dataclass
class QueryPool:
    """One question, its gold and its candidates."""

    sample_id: str
    question: dict[str, Any]
    pool: CandidatePool
    graph: GraphSignals | None
    first_stage_ms: float
    asked_at: str


@dataclass
class PoolSet:
    """All pools of a run plus ingest statistics."""

    by_sample: dict[str, list[QueryPool]] = field(default_factory=dict)
    n_turns: int = 0
    ingest_s: float = 0.0
    memory: Any = None
    namespaces: dict[str, str] = field(default_factory=dict)

    def release(self) -> None:
        """Forget the run's namespaces (kept by ``collect_pools(keep=True)`` for latency probes)."""
        if self.memory is not None:
            for ns in self.namespaces.values():
                self.memory.forget(ns)
            self.memory = None

    def __getstate__(self) -> dict[str, Any]:  # pickle the pools, not the live store
        return {**self.__dict__, "memory": None}


def collect_pools(
    data: str | Path, cfg: CogMemConfig, *, with_graph: bool, progress: Progress, limit: int | None = None,
    keep: bool = False,
) -> PoolSet:
    """Ingest every conversation and compute each question's pool through the online path (timed).

    Args:
        data: LoCoMo JSON.
        cfg: Store config (ephemeral).
        with_graph: Also build the PEC2F graph at ingest and run the operator loop per question.
        progress: Progress wrapper.
        limit: Keep only the first ``limit`` questions of each conversation (development runs).
        keep: Keep the ingested namespaces (``PoolSet.memory``) for later probes; call ``release()``.
    """
    from langmem_cog.graph.loop import GraphRetrieval
    from langmem_cog.memory import CogMemory

    records = read_json(data)
    memory = CogMemory(cfg)
    store = memory.store
    run = uuid.uuid4().hex[:8]
    out = PoolSet()
    memory.embeddings.embed_query("warm up")
    nss: dict[str, str] = {}
    asked: dict[str, str] = {}
    t0 = time.perf_counter()
    for rec in progress(records, "ingest", len(records)):
        sid = str(rec["sample_id"])
        ns = f"pool.{run}." + "".join(c if c.isalnum() or c in "_.-" else "_" for c in sid)
        turns = locomo_turns(rec, namespace=ns)
        if with_graph:
            memory.add_turns(turns)
            memory.consolidate(ns)
        else:
            store.add_turns(turns)
        out.n_turns += len(turns)
        nss[sid] = ns
        asked[sid] = max(t.timestamp for t in turns).isoformat()
    out.ingest_s = time.perf_counter() - t0
    retrieval = GraphRetrieval(memory) if with_graph else None
    todo = [(str(rec["sample_id"]), q) for rec in records for q in locomo_questions(rec)[: limit or None]]
    turn_cache: dict[str, dict[str, Any]] = {}
    # Query vectors in one batch (the online path embeds one query at a time; online latency is
    # measured separately by the benchmark).
    vectors = store.embed_texts([q["question"] for _, q in todo]) if todo else []
    for (sid, q), qv in progress(list(zip(todo, vectors, strict=True)), "pools", len(todo)):
        ns = nss[sid]
        if ns not in turn_cache:
            turn_cache[ns] = {t.id: t for t in store.get_turns(ns)}
        # The operator loop embeds the question through the store's cache: hand it the batch vector.
        store.cache_query_vector(q["question"], qv)
        t1 = time.perf_counter()
        ps = store.pool_scores(ns, q["question"], query_vector=qv, context=True)
        signals = None
        if retrieval is not None:
            signals = GraphSignals.from_state(retrieval.run(ns, q["question"], now=asked[sid]))
        ms = (time.perf_counter() - t1) * 1000
        pool = CandidatePool(turns=[turn_cache[ns][i] for i in ps.ids], dense=ps.dense, lexical=ps.lexical,
                             context=ps.context, context_lexical=ps.context_lexical)
        out.by_sample.setdefault(sid, []).append(QueryPool(sid, q, pool, signals, ms, asked[sid]))
    out.memory, out.namespaces = memory, nss
    if not keep:
        out.release()
    return out

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

__all__ = ["QueryPool", "PoolSet", "collect_lme_pools", "collect_pools", "embedder_label", "LME_POOL_MAX_TOKENS"]

#: The embedder's token limit in the LongMemEval pools (every LongMemEval figure of the project uses 128).
LME_POOL_MAX_TOKENS = 128

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
    #: The namespace's plain hybrid ranking (``TurnStore.search``), where the collector recorded it.
    hybrid: list[str] | None = None


@dataclass
class PoolSet:
    """All pools of a run plus ingest statistics."""

    by_sample: dict[str, list[QueryPool]] = field(default_factory=dict)
    n_turns: int = 0
    ingest_s: float = 0.0
    memory: Any = None
    namespaces: dict[str, str] = field(default_factory=dict)
    #: The embedder the pools were built with (``"minilm int8"``; ``""``: not recorded).
    embedder: str = ""

    def release(self) -> None:
        """Forget the run's namespaces (kept by ``collect_pools(keep=True)`` for latency probes)."""
        if self.memory is not None:
            for ns in self.namespaces.values():
                self.memory.forget(ns)
            self.memory = None

    def __getstate__(self) -> dict[str, Any]:  # pickle the pools, not the live store
        return {**self.__dict__, "memory": None}


def embedder_label(spec: str, embeddings: Any) -> str:
    """``"{spec} {precision}"`` of an embedder (through a :class:`~langmem_cog.embeddings.CachedEmbeddings`).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> embedder_label("minilm", DeterministicFakeEmbedding(size=8))
        'minilm ?'
    """
    return f"{spec} {getattr(getattr(embeddings, 'inner', embeddings), 'precision', '?')}"


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
    from langmem_cog.memory import CogMemory
    from langmem_cog.rank.cascade import Cascade

    records = read_json(data)
    memory = CogMemory(cfg)
    store = memory.store
    run = uuid.uuid4().hex[:8]
    out = PoolSet(embedder=embedder_label(cfg.embedder, memory.embeddings))
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
    cascade = Cascade(store=store, memory=memory if with_graph else None, use_graph=with_graph)
    todo = [(str(rec["sample_id"]), q) for rec in records for q in locomo_questions(rec)[: limit or None]]
    # Query vectors in one batch (the online path embeds one query at a time; online latency is
    # measured separately by the benchmark).
    vectors = list(store.embed_texts([q["question"] for _, q in todo])) if todo else []
    for (sid, q), qv in progress(list(zip(todo, vectors, strict=True)), "pools", len(todo)):
        ns = nss[sid]
        # The operator loop embeds the question through the store's cache: hand it the batch vector.
        store.cache_query_vector(q["question"], qv)
        t1 = time.perf_counter()
        # The retriever's own candidate stage (Cascade.candidates), so a kept pool is what it would see.
        pool, signals = cascade.candidates(ns, q["question"], now=asked[sid], query_vector=qv, context=True)
        ms = (time.perf_counter() - t1) * 1000
        out.by_sample.setdefault(sid, []).append(QueryPool(sid, q, pool, signals, ms, asked[sid]))
    out.memory, out.namespaces = memory, nss
    if not keep:
        out.release()
    return out


def collect_lme_pools(
    data: str | Path, cfg: CogMemConfig, *, progress: Progress, selection: Any = None, embeddings: Any | None = None,
    with_graph: bool = True, context: bool = True, on_pool: Callable[[QueryPool], None] | None = None,
) -> PoolSet:
    """LongMemEval pools: each question's haystack ingested into a fresh namespace of a
    :class:`~langmem_cog.memory.CogMemory` (raw store, graph and consolidation, as a user's ingest),
    then its candidates from the retriever's own candidate stage (:meth:`Cascade.candidates`, context
    scores included), asked at ``question_date``; the namespace is forgotten after.

    Args:
        data: LongMemEval JSON(.gz).
        cfg: Store config (ephemeral).
        progress: Progress wrapper.
        selection: The questions (:class:`~langmem_cog.bench.longmemeval.LmeSelection`; default: every
            scorable one).
        embeddings: An embedder to use (e.g. a :class:`~langmem_cog.embeddings.CachedEmbeddings`;
            default: the config's, truncated to the benchmark's :data:`LME_POOL_MAX_TOKENS` tokens).
        with_graph: Build the graph and run the operator loop.
        context: Score the context vectors and texts (one more embedding per turn). Pools without
            them serve a recipe whose fusion gives the context features no weight (the shipped
            recipe's untrained prior); :func:`~langmem_cog.bench.recipe.fit_recipe` refuses to fit a
            fusion scorer on them.
        on_pool: Called with each pool as soon as it is collected (a long run saves as it goes).

    Returns:
        A :class:`PoolSet` keyed by question id; each question dict has ``qa_index`` 0, ``question``,
        ``category`` (the question type) and ``gold`` (the ``has_answer`` turn ids); each pool keeps
        the namespace's plain hybrid ranking (``QueryPool.hybrid``) as the baseline.
    """
    from langmem_cog.bench.longmemeval import LmeSelection, ingest_haystack
    from langmem_cog.memory import CogMemory
    from langmem_cog.rank.cascade import Cascade

    if embeddings is None:
        from langmem_cog.embeddings import config_embedder

        embeddings = config_embedder(cfg, max_seq_length=LME_POOL_MAX_TOKENS)
    memory = CogMemory(cfg, embeddings=embeddings)
    cascade = Cascade(store=memory.store, memory=memory if with_graph else None, use_graph=with_graph)
    out = PoolSet(embedder=embedder_label(cfg.embedder, embeddings))
    run = uuid.uuid4().hex[:8]
    questions = (selection or LmeSelection()).questions(data)
    for i, q in enumerate(progress(questions, "longmemeval pools", len(questions))):
        ns = f"lmepool.{run}.{i}"
        turns, seconds = ingest_haystack(memory, q, ns, with_graph=with_graph)
        out.ingest_s += seconds
        out.n_turns += len(turns)
        try:
            t1 = time.perf_counter()
            pool, signals = cascade.candidates(ns, q.question, now=q.question_date, context=context)
            ms = (time.perf_counter() - t1) * 1000
            hybrid = [h.turn.id for h in memory.store.search(ns, q.question, k=len(turns), mode="hybrid")]
        finally:
            memory.forget(ns)
        question = {"qa_index": 0, "question": q.question, "category": q.question_type,
                    "gold": list(q.gold_turn_ids)}
        qp = QueryPool(q.question_id, question, pool, signals, ms, q.question_date.isoformat(), hybrid)
        out.by_sample[q.question_id] = [qp]
        if on_pool is not None:
            on_pool(qp)
    return out

"""The LoCoMo retrieval benchmark: the published protocol run through the real store.

Every conversation is ingested once into its own namespace of an ephemeral
:class:`~langmem_cog.store.TurnStore` (this measures ingest throughput). For
each seed, systems that learn (``hybrid``: the BM25 weight of z-score fusion)
are fitted on that seed's train conversations only; then each test question is
answered by a timed ``TurnStore.search`` over its whole conversation, and the
full ranking is scored (:mod:`langmem_cog.bench.protocol`).

The systems are those of :mod:`langmem_cog.bench.systems` that run on LoCoMo; this module runs the
``search`` and ``graph`` kinds, :mod:`langmem_cog.bench.cascade` the ``cascade`` kind. A ``graph``
system ingests each conversation with :class:`~langmem_cog.memory.CogMemory` and the rule extractor
(then consolidates) and asks at the conversation's last session date; its ranking is the grounded
turns in order, so a question whose gold turns are never grounded has rank ``None`` and MRR 0. It
trains nothing: every seed scores the same answers (each question is run once).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langmem_cog.bench.protocol import SEEDS, locomo_questions, percentiles
from langmem_cog.bench.runner import (
    LocomoRun,
    Progress,
    RunInfo,
    default_locomo_path,
    namespacer,
    no_progress,
    row,
    run_summary,
    splits,
    write_outputs,
)
from langmem_cog.bench.systems import get_system
from langmem_cog.config import CogMemConfig
from langmem_cog.errors import InvalidInputError
from langmem_cog.fusion import tune_weight
from langmem_cog.loaders import locomo_turns, read_json
from langmem_cog.store import TurnStore

# LocomoRun, default_locomo_path and write_outputs live in bench.runner and are re-exported here.
__all__ = ["LocomoRun", "run_locomo", "default_locomo_path", "write_outputs"]

logger = logging.getLogger(__name__)



def run_locomo(
    data: str | Path,
    *,
    system: str = "hybrid",
    embedder: str = "minilm",
    seeds: Sequence[int] = SEEDS,
    split: str = "seeds",
    config: CogMemConfig | None = None,
    progress: Progress = no_progress,
) -> LocomoRun:
    """Run the LoCoMo retrieval protocol for a ``search`` or ``graph`` system.

    Args:
        data: A JSON file in LoCoMo's schema.
        system: A system of kind ``search`` or ``graph`` (:mod:`langmem_cog.bench.systems`; the
            ``cascade`` systems run with :func:`~langmem_cog.bench.cascade.run_cascade`).
        embedder: ``minilm``, ``mpnet`` or a model directory.
        seeds: Split seeds (``split="seeds"``).
        split: ``seeds`` (shuffle-and-halve per seed) or ``all`` (every conversation is test,
            one pseudo-seed ``0``; for systems that train on nothing).
        config: Base config (ephemeral store); ``embedder`` overrides its embedder.
        progress: A wrapper for iterables that shows progress (the CLI passes tqdm).

    Returns:
        The summary (keys of the published report) and one row per test question per seed.
    """
    chosen = get_system(system, "locomo")
    if chosen.kind not in ("search", "graph"):
        raise InvalidInputError(f"system {system!r} is a {chosen.kind} system: run it with bench.cascade.run_cascade")
    if split not in ("seeds", "all"):
        raise InvalidInputError(f"split={split!r} is invalid: use 'seeds' or 'all'")
    records = read_json(data)
    if not isinstance(records, list) or not records:
        raise InvalidInputError(f"{data}: expected a non-empty JSON list of LoCoMo conversations")
    cfg = (config or CogMemConfig.preset("ephemeral")).model_copy(update={"embedder": embedder})
    if chosen.kind == "graph":
        return _run_graph(data, records, cfg, system=system, seeds=seeds, split=split, progress=progress)
    store = TurnStore(cfg)
    by_id, questions, _ns = _conversations(records)

    # Ingest: every conversation once, timed end to end (embedding, Chroma, BM25).
    store.embeddings.embed_query("warm up")
    n_turns = 0
    t0 = time.perf_counter()
    for sid in progress(list(by_id), "ingest", len(by_id)):
        turns = locomo_turns(by_id[sid], namespace=_ns(sid))
        store.add_turns(turns)
        n_turns += len(turns)
    ingest_s = time.perf_counter() - t0

    mode, fusion, tunes = chosen.mode, chosen.fusion, chosen.tunes_weight
    seed_splits = splits(by_id, seeds, split)

    pools: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    if tunes and split == "seeds":
        pools = _train_pools(store, questions, _ns, progress)

    rows: list[dict[str, Any]] = []
    latencies: list[float] = []
    weights: dict[str, float] = {}
    for seed, train, test in seed_splits:
        weight = cfg.search.lexical_weight
        if tunes and train:
            dense = [p[0] for sid in train for p in pools[sid]]
            lexical = [p[1] for sid in train for p in pools[sid]]
            gold = [p[2] for sid in train for p in pools[sid]]
            weight, train_mrr = tune_weight(dense, lexical, gold)
            logger.info("seed %s: lexical weight %.2f (train MRR %.4f)", seed, weight, train_mrr)
        weights[str(seed)] = weight
        todo = [(sid, q) for sid in test for q in questions[sid]]
        for sid, q in progress(todo, f"seed {seed}", len(todo)):
            ns = _ns(sid)
            size = store.count(ns)
            store.clear_query_cache()  # a question asked again in a later seed pays for its embedding again
            t1 = time.perf_counter()
            hits = store.search(ns, q["question"], k=size, mode=mode, lexical_weight=weight, fusion=fusion)
            latencies.append((time.perf_counter() - t1) * 1000)
            rows.append(row(seed, sid, q, [h.turn.id for h in hits]))
    for sid in by_id:
        store.forget_namespace(_ns(sid))
    params = {"lexical_weight": weights, "fusion": fusion, "mode": mode}
    result = run_summary(RunInfo(system, embedder, data, split, seeds), rows, latencies, n_turns, ingest_s, params)
    return LocomoRun(summary=result, rows=rows)


def _conversations(
    records: list[dict[str, Any]],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]], Callable[[str], str]]:
    """The conversations by sample id, their scorable questions, and this run's namespace of each
    (in-memory Chroma clients share state within a process: every run gets its own namespaces)."""
    by_id = {str(r["sample_id"]): r for r in records}
    return by_id, {sid: locomo_questions(rec) for sid, rec in by_id.items()}, namespacer(uuid.uuid4().hex[:8])


def _train_pools(
    store: TurnStore, questions: dict[str, list[dict[str, Any]]], _ns: Callable[[str], str], progress: Progress
) -> dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Dense scores, BM25 scores and gold masks of every question (fitting data; batched query embedding)."""
    out: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for sid in progress(list(questions), "score pools", len(questions)):
        ns = _ns(sid)
        qs = questions[sid]
        if not qs:
            out[sid] = []
            continue
        vecs = store.embed_texts([q["question"] for q in qs])
        items = []
        for q, v in zip(qs, vecs, strict=True):
            pool = store.pool_scores(ns, q["question"], query_vector=v)
            gold = np.isin(np.array(pool.ids), q["gold"])
            items.append((pool.dense, pool.lexical, gold))
        out[sid] = items
    return out


def _run_graph(
    data: str | Path,
    records: list[dict[str, Any]],
    cfg: CogMemConfig,
    *,
    system: str,
    seeds: Sequence[int],
    split: str,
    progress: Progress,
) -> LocomoRun:
    """A ``graph`` system: ingest with ``CogMemory``, answer with the operator loop."""
    from langmem_cog.graph.loop import GraphRetrieval
    from langmem_cog.memory import CogMemory

    memory = CogMemory(cfg)
    by_id, questions, _ns = _conversations(records)

    # Ingest: raw store (embedding, Chroma, BM25) + extraction + graph update + consolidation.
    memory.embeddings.embed_query("warm up")
    n_turns = 0
    asked_at: dict[str, str] = {}
    t0 = time.perf_counter()
    for sid in progress(list(by_id), "ingest", len(by_id)):
        turns = locomo_turns(by_id[sid], namespace=_ns(sid))
        memory.add_turns(turns)
        memory.consolidate(_ns(sid))
        n_turns += len(turns)
        asked_at[sid] = max(t.timestamp for t in turns).isoformat()
    ingest_s = time.perf_counter() - t0

    retrieval = GraphRetrieval(memory)
    seed_splits = splits(by_id, seeds, split)
    # The loop is deterministic and trains nothing: run each test question once, reuse it across seeds.
    needed = sorted({sid for _, _, test in seed_splits for sid in test})
    answers: dict[tuple[str, int], dict[str, Any]] = {}
    latencies: list[float] = []
    step_ms: dict[str, list[float]] = {}
    intents: dict[str, int] = {}
    todo = [(sid, q) for sid in needed for q in questions[sid]]
    for sid, q in progress(todo, "graph loop", len(todo)):
        memory.store.clear_query_cache()
        t1 = time.perf_counter()
        result = retrieval.result(_ns(sid), q["question"], now=asked_at[sid])
        latencies.append((time.perf_counter() - t1) * 1000)
        for entry in result.trace:
            step_ms.setdefault(entry["operator"], []).append(entry["ms"])
        intents[result.intent] = intents.get(result.intent, 0) + 1
        answers[(sid, q["qa_index"])] = {"ranked": result.turn_ids, "intent": result.intent, "steps": result.steps}

    rows: list[dict[str, Any]] = []
    for seed, _train, test in seed_splits:
        for sid in test:
            for q in questions[sid]:
                ans = answers[(sid, q["qa_index"])]
                rows.append(row(seed, sid, q, ans["ranked"], n_grounded=len(ans["ranked"]),
                                 intent=ans["intent"], steps=ans["steps"]))
    for sid in by_id:
        memory.forget(_ns(sid))
    n_q = max(len(answers), 1)
    params = {"max_steps": 5, "router": "rule", "sufficiency": "rule"}
    summary = {
        **run_summary(RunInfo(system, cfg.embedder, data, split, seeds), rows, latencies, n_turns, ingest_s, params),
        "graph": {
            "questions_run": len(answers),
            "grounded_any_gold": sum(1 for r in rows if r["rank"] is not None) / max(len(rows), 1),
            "mean_grounded_turns": sum(len(a["ranked"]) for a in answers.values()) / n_q,
            "mean_steps": sum(a["steps"] for a in answers.values()) / n_q,
            "intents": dict(sorted(intents.items())),
            "step_latency_ms": {op: percentiles(v) for op, v in sorted(step_ms.items())},
        },
    }
    return LocomoRun(summary=summary, rows=rows)

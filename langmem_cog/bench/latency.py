"""Latency of the default retriever on the live path: ``CogMemRetriever.invoke`` as a user calls it.

* LoCoMo: the conversations are ingested (raw store + graph + consolidation), one warm-up question per
  namespace is asked and timed on its own (the first query after an ingest), then a seeded sample of
  questions is timed one at a time, each query's vector embedded anew (no query cache).
* LongMemEval: each haystack (~500 turns) is ingested into a fresh namespace and its question is asked
  right after, which is the namespace's first query (the cost a user pays when asking right after
  telling us something); then it is asked once more (a warm query).

Nothing is cached between systems: the figures are what ``CogMemRetriever(memory=..., namespace=...)``
costs on this machine, with the models of ``CogMemConfig.models_dir`` (default: the shipped ones).
"""

from __future__ import annotations

import random
import time
import uuid
from pathlib import Path
from typing import Any

from langmem_cog.bench.protocol import locomo_questions, percentiles
from langmem_cog.bench.runner import Progress, no_progress
from langmem_cog.config import CogMemConfig
from langmem_cog.errors import InvalidInputError

__all__ = ["run_latency"]


def _timed(retriever: Any, query: str) -> float:
    retriever.store.clear_query_cache()
    t0 = time.perf_counter()
    retriever.invoke(query)
    return (time.perf_counter() - t0) * 1000


def run_latency(on: str, data: str | Path, *, questions: int = 200, conversations: int = 2, haystacks: int = 5,
                config: CogMemConfig | None = None, max_seq_length: int | None = None,
                progress: Progress = no_progress) -> dict[str, Any]:
    """Time the default retriever end to end.

    Args:
        on: ``locomo`` or ``longmemeval``.
        data: The dataset file.
        questions: LoCoMo: questions timed (seeded sample over the ingested conversations).
        conversations: LoCoMo: conversations ingested (the first ones of the file).
        haystacks: LongMemEval: haystacks ingested, each asked its question twice (first and warm).
        config: Base config (default: ephemeral); its ``k`` (10) is the documents per query.
        max_seq_length: Truncation of the embedder (``None``: the model's own).
        progress: Progress wrapper.

    Returns:
        ``first_query_ms`` and ``query_ms`` percentiles (p50, p95), their raw values, ``n_turns`` and
        the retrieval mode timed.
    """
    from langmem_cog.bench.longmemeval import ingest_haystack
    from langmem_cog.embeddings import config_embedder
    from langmem_cog.loaders import load_longmemeval, locomo_turns, read_json
    from langmem_cog.memory import CogMemory
    from langmem_cog.retriever import CogMemRetriever

    if on not in ("locomo", "longmemeval"):
        raise InvalidInputError(f"on={on!r} is invalid: use 'locomo' or 'longmemeval'")
    cfg = config or CogMemConfig.preset("ephemeral")
    emb = config_embedder(cfg, max_seq_length=max_seq_length)
    memory = CogMemory(cfg, embeddings=emb)
    memory.embeddings.embed_query("warm up")
    run = uuid.uuid4().hex[:8]
    first: list[float] = []
    warm: list[float] = []
    n_turns = 0
    mode = ""
    if on == "locomo":
        asked: list[tuple[Any, str]] = []
        for rec in read_json(data)[:conversations]:
            ns = f"lat.{run}." + "".join(c if c.isalnum() or c in "_.-" else "_" for c in str(rec["sample_id"]))
            turns = locomo_turns(rec, namespace=ns)
            memory.add_turns(turns)
            memory.consolidate(ns)
            n_turns += len(turns)
            retriever = CogMemRetriever(memory=memory, namespace=ns, now=max(t.timestamp for t in turns))
            mode = str(retriever.mode)
            qs = locomo_questions(rec)
            first.append(_timed(retriever, qs[0]["question"]))
            asked += [(retriever, q["question"]) for q in qs[1:]]
        random.Random(0).shuffle(asked)
        for retriever, q in progress(asked[:questions], "latency", min(questions, len(asked))):
            warm.append(_timed(retriever, q))
    else:
        lme_qs = [q for q in load_longmemeval(data) if q.gold_turn_ids][:haystacks]
        for i, q in enumerate(progress(lme_qs, "latency", len(lme_qs))):
            ns = f"lat.{run}.{i}"
            turns, _ = ingest_haystack(memory, q, ns)
            n_turns += len(turns)
            retriever = CogMemRetriever(memory=memory, namespace=ns, now=q.question_date)
            mode = str(retriever.mode)
            try:
                first.append(_timed(retriever, q.question))
                warm.append(_timed(retriever, q.question))
            finally:
                memory.forget(ns)
    return {"on": on, "mode": mode, "n_turns": n_turns, "first_query_ms": percentiles(first),
            "query_ms": percentiles(warm), "first_query_raw_ms": [round(x, 1) for x in first],
            "n_queries": len(warm), "models": str(cfg.models_dir or "shipped")}

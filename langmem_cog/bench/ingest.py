"""Cold ingest speed: ``CogMemory.add_turns`` into a persistent data dir, graph on, beside plain encoding.

A user connecting an existing history waits for this. Each conversation (LoCoMo) or haystack
(LongMemEval-S) is one ``add_turns`` call into a fresh persistent data directory (Chroma + BM25 log
+ graph journal, the graph on with the rule extractor), timed end to end. The store's
:class:`~langmem_cog.store.StageTimes` split the time into embedding, Chroma, BM25 and context
vectors; the rest of the call is the graph (extraction and the graph's commit). In the same run, on
the same texts (each turn's ``memory_text``), plain fp32 ``SentenceTransformer.encode`` at batch 64
gives the reference rate: the ratio end-to-end / reference is the issue's figure (>= 1.0 means the
whole ingest is faster than plain fp32 embedding of the same texts alone).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from langmem_cog.bench.runner import Progress, no_progress
from langmem_cog.config import CogMemConfig
from langmem_cog.errors import InvalidInputError

__all__ = ["run_ingest"]


def _turn_groups(on: str, data: str | Path, limit: int) -> list[list[Any]]:
    from langmem_cog.loaders import load_longmemeval, locomo_turns, read_json

    if on == "locomo":
        recs = read_json(data)[:limit]
        return [locomo_turns(rec, namespace=f"ingest.{i}") for i, rec in enumerate(recs)]
    qs = [q for q in load_longmemeval(data) if q.gold_turn_ids][:limit]
    return [[t.model_copy(update={"namespace": f"ingest.{i}"}) for t in q.turns] for i, q in enumerate(qs)]


def run_ingest(on: str, data: str | Path, *, limit: int | None = None, config: CogMemConfig | None = None,
               data_dir: str | Path | None = None, progress: Progress = no_progress) -> dict[str, Any]:
    """Time a cold ingest and the plain fp32 encoding of the same texts.

    Args:
        on: ``locomo`` (conversations) or ``longmemeval`` (haystacks of scorable questions).
        data: The dataset file.
        limit: Conversations / haystacks ingested (default: 10 LoCoMo conversations, 20 haystacks).
        config: Base config (default: ``CogMemConfig()``, persistent); ``data_dir`` replaces its data dir.
        data_dir: Where to ingest (default: a temporary directory, removed after).
        progress: Progress wrapper.

    Returns:
        ``turns``, ``seconds``, ``turns_per_s`` end to end; ``reference_turns_per_s`` (plain fp32
        encode, batch 64) and ``ratio``; ``shares`` of the end-to-end time (embed, chroma, bm25,
        context, graph, other); the embedder's backend and precision.
    """
    from langmem_cog.embeddings import LocalSentenceEmbeddings, resolve_model_path
    from langmem_cog.memory import CogMemory

    if on not in ("locomo", "longmemeval"):
        raise InvalidInputError(f"on={on!r} is invalid: use 'locomo' or 'longmemeval'")
    groups = _turn_groups(on, data, limit if limit is not None else (10 if on == "locomo" else 20))
    texts = [t.memory_text for g in groups for t in g]
    base = config or CogMemConfig()
    with tempfile.TemporaryDirectory(prefix="lmc-ingest-") as tmp:
        cfg = base.model_copy(update={"data_dir": Path(data_dir or tmp), "chroma_mode": "persistent"})
        memory = CogMemory(cfg)
        memory.embeddings.embed_query("warm up")  # the model's load is not ingest
        times = memory.store.stage_times
        times.reset()
        t0 = time.perf_counter()
        for group in progress(groups, "ingest", len(groups)):
            memory.add_turns(group)
        seconds = time.perf_counter() - t0
        backend = getattr(memory.embeddings, "backend", "?")
        precision = getattr(memory.embeddings, "precision", "?")
        # The reference: plain fp32 SentenceTransformer.encode (batch 64) of the same texts, same run.
        ref = LocalSentenceEmbeddings(resolve_model_path(cfg.embedder), backend="torch").model
        ref.encode(texts[:64], batch_size=64, show_progress_bar=False)
        r0 = time.perf_counter()
        ref.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        ref_seconds = time.perf_counter() - r0
    graph = max(seconds - times.total, 0.0)
    other = max(times.total - times.embed - times.chroma - times.bm25 - times.context, 0.0)
    n = len(texts)
    return {
        "on": on, "units": len(groups), "turns": n, "seconds": round(seconds, 2),
        "turns_per_s": round(n / seconds, 1), "reference_turns_per_s": round(n / ref_seconds, 1),
        "ratio": round(ref_seconds / seconds, 3), "backend": backend, "precision": precision,
        "shares": {k: round(v / seconds, 3) for k, v in (("embed", times.embed), ("chroma", times.chroma),
                                                           ("bm25", times.bm25), ("context", times.context),
                                                           ("graph", graph), ("other", other))},
    }

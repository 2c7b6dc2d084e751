"""Train the shipped cascade models from LongMemEval-S dev (never LoCoMo).

:func:`train_shipped_models` is what ``langmem-cog train-reranker`` runs: it builds cheap candidate
pools for every non-abstention LongMemEval question (:func:`~langmem_cog.rank.data.longmemeval_pools`),
fits the fusion scorer on them, then fine-tunes the cross-encoder from the packaged MiniLM on the
fused top-10 lists (+ missed gold). It writes ``fusion.json``, ``cascade.json`` and ``reranker/``
(fp16 checkpoint plus ``training.json`` with the command, the data file's SHA-256 and the seed).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shlex
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from langmem_cog.embeddings import resolve_embedder, resolve_model_path
from langmem_cog.loaders import load_longmemeval
from langmem_cog.rank.data import longmemeval_pools, rerank_examples
from langmem_cog.rank.features import candidate_features
from langmem_cog.rank.scorer import FusionScorer
from langmem_cog.rank.training import TrainConfig, train_cross_encoder

__all__ = ["train_shipped_models", "sha256_of"]

logger = logging.getLogger(__name__)


def sha256_of(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def train_shipped_models(
    data: str | Path,
    out_dir: str | Path,
    config: TrainConfig | None = None,
    *,
    limit: int | None = None,
    bm25_depth: int = 30,
    progress: Callable[[Iterable[Any], str, int], Iterable[Any]] | None = None,
) -> dict[str, Any]:
    """Fit the fusion scorer and fine-tune the reranker on LongMemEval questions.

    Args:
        data: LongMemEval JSON / JSON.gz (the shipped models: ``longmemeval_s_dev.json.gz``).
        out_dir: The models folder to write (``fusion.json``, ``cascade.json``, ``reranker/``).
        config: Cross-encoder training settings.
        limit: Use only the first ``limit`` questions (smoke tests).
        bm25_depth: BM25 candidates per haystack.
        progress: Optional progress wrapper.

    Returns:
        The reranker's ``training.json`` dict plus the scorer's provenance.
    """
    config = config or TrainConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    questions = load_longmemeval(data, limit=limit)
    embedder = resolve_embedder("minilm")

    def embed(texts: list[str]) -> Any:
        return embedder.embed_array(texts)

    pools = longmemeval_pools(questions, embed, bm25_depth=bm25_depth, progress=progress)
    feats = [candidate_features(pool, q.question, None) for q, pool, _ in pools]
    golds = [g for _, _, g in pools]
    scorer = FusionScorer.fit(feats, golds, trained_on=f"LongMemEval-S dev ({len(pools)} questions, BM25 top-{bm25_depth} pools)")
    (out / "fusion.json").write_text(json.dumps(scorer.to_dict(), indent=2) + "\n", encoding="utf-8")
    scored = [(q.question, pool, scorer.score(X), g) for (q, pool, g), X in zip(pools, feats, strict=True)]
    examples = rerank_examples(scored, depth=10)
    provenance = {
        "command": " ".join(shlex.quote(a) for a in ["langmem-cog", *sys.argv[1:]]) if sys.argv else "",
        "data": Path(data).name,
        "data_sha256": sha256_of(data),
        "seed": config.seed,
        "questions": len(pools),
        "trained_on": "LongMemEval-S dev only (never LoCoMo)",
    }
    report = train_cross_encoder(examples, resolve_model_path("minilm"), out / "reranker", config,
                                 progress=progress, provenance=provenance)
    settings = {"cross_encoder_weight": 1.0, "first_stage_weight": 1.0, "max_length": config.max_length,
                "note": "fixed 1:1 blend of z(cross-encoder) and z(first stage) inside the protected top-10"}
    (out / "cascade.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return {**report, "scorer": scorer.to_dict()}

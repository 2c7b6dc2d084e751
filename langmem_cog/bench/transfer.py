"""Leave-one-dataset-out: the default retriever, with models fitted on one dataset, scored on another.

``langmem-cog train-models --datasets longmemeval --out DIR`` fits the shipped recipe on LongMemEval
alone; :func:`run_transfer` then ranks every LoCoMo question (``--split all``) exactly as
:class:`~langmem_cog.CogMemRetriever` with ``CogMemConfig(models_dir=DIR)`` would: the pools come from
the retriever's candidate stage (:meth:`~langmem_cog.rank.cascade.Cascade.candidates`) and are ranked
by :meth:`Cascade.fuse` and :meth:`Cascade.rank_pool`, the code of ``Cascade.rank`` itself (a test
pins cached and live rankings equal). Rows pair with ``bench locomo --system hybrid --split all``
(seed 0) in ``bench compare``; on LongMemEval, the pools also hold each namespace's plain hybrid
ranking, written as the baseline's rows.

The graph's contribution is measured on the same pools: ``nograph`` ranks them with the same models
but without the operator loop's signals (no graph features, no reconciled claims), as
``CogMemRetriever(use_graph=False)`` would. The cross-encoder's scores of a pool's head are computed
once and shared by the two rankings where their heads are equal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, Field

from langmem_cog.bench.compare import compare_rows
from langmem_cog.bench.protocol import summarize
from langmem_cog.bench.runner import LocomoRun, Progress, no_progress, row
from langmem_cog.config import CogMemConfig
from langmem_cog.errors import InvalidInputError

__all__ = ["run_transfer"]


class _SharedScores(BaseDocumentCompressor):
    """A compressor whose output for a (query, candidate ids) pair is computed once (copies returned)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseDocumentCompressor
    seen: dict[tuple[str, tuple[str, ...]], list[Document]] = Field(default_factory=dict)

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[Document]:
        key = (query, tuple(str(d.metadata["turn_id"]) for d in documents))
        if key not in self.seen:
            self.seen[key] = list(self.inner.compress_documents(documents, query, callbacks))
        return [Document(id=d.id, page_content=d.page_content, metadata=dict(d.metadata)) for d in self.seen[key]]


def _rows(on: str, ranked: Sequence[tuple[Any, list[str]]]) -> list[dict[str, Any]]:
    from langmem_cog.bench.longmemeval import lme_metrics

    rows = []
    for qp, ids in ranked:
        entry = row(0, qp.sample_id, qp.question, ids)
        if on == "longmemeval":
            session_of = {t.id: t.session_id for t in qp.pool.turns}
            entry.update(lme_metrics(ids, qp.question["gold"], session_of, []), n_turns=len(qp.pool.turns))
        rows.append(entry)
    return rows


def _summary(on: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    from langmem_cog.bench.longmemeval import summarize_lme

    return summarize_lme(rows) if on == "longmemeval" else summarize(rows)


def run_transfer(models_dir: str | Path | None, on: str, data: str | Path, *, pool_cache: str | Path | None = None,
                 lme_limit: int | None = None, precision: str = "auto", raw_protect: int | None = None,
                 progress: Progress = no_progress) -> dict[str, LocomoRun]:
    """Score the default retriever with the models of ``models_dir`` on every question of ``on``.

    Args:
        models_dir: A folder written by ``langmem-cog train-models`` (``None``: the shipped models).
        on: ``locomo`` (all 10 conversations, as ``--split all``) or ``longmemeval``.
        data: The dataset file.
        pool_cache: Read the labelled pools from here if it exists, else build and write them.
        lme_limit: LongMemEval: only the first N scorable questions (bit-reversed order).
        precision: The cross-encoder's arithmetic (``auto``, ``fp32`` or ``int8``, ``CogMemConfig.rerank_precision``).
        raw_protect: How many of plain hybrid search's best turns the head keeps (``None``: the config's,
            ``CascadeSettings.raw_protect``); the pools do not depend on it.
        progress: Progress wrapper.

    Returns:
        ``{"default": ..., "input": ..., "nograph": ...}`` (the compressor's input, the fused ranking;
        the default without the graph's signals) and, on
        LongMemEval, ``"hybrid"`` (plain hybrid search of the same namespaces); each a
        :class:`~langmem_cog.bench.locomo.LocomoRun`. ``default``'s summary has the paired bootstrap
        of the compressor against its input, of the default against ``nograph`` (``graph_contribution``)
        and of the default against hybrid where recorded.
    """
    from langmem_cog.bench.recipe import load_or_collect_pools, rank_pools
    from langmem_cog.rank.defaults import default_compressor, default_scorer

    if on not in ("locomo", "longmemeval"):
        raise InvalidInputError(f"on={on!r} is invalid: use 'locomo' or 'longmemeval'")
    ps = load_or_collect_pools(on, data, cache=pool_cache, lme_limit=lme_limit, progress=progress)
    qps = [qp for group in ps.by_sample.values() for qp in group]
    cfg = CogMemConfig.preset("ephemeral", rerank_precision=precision,
                              **({} if raw_protect is None else {"cascade": {"raw_protect": raw_protect}}))
    scorer = default_scorer(models_dir)
    compressor = default_compressor(models_dir=models_dir, backend=cfg.inference_backend,
                                    precision=cfg.rerank_precision, cache_dir=cfg.resolved_cache_dir())
    shared = _SharedScores(inner=compressor)
    runs: dict[str, list[dict[str, Any]]] = {
        "default": _rows(on, rank_pools(progress(qps, "default", len(qps)), scorer, shared, cfg)),
        "input": _rows(on, rank_pools(qps, scorer, None, cfg)),
        "nograph": _rows(on, rank_pools(progress([dataclasses.replace(qp, graph=None) for qp in qps], "nograph",
                                                 len(qps)), scorer, shared, cfg)),
    }
    if all(qp.hybrid is not None for qp in qps):
        runs["hybrid"] = _rows(on, [(qp, list(qp.hybrid)) for qp in qps])
    out: dict[str, LocomoRun] = {}
    for name, rows in runs.items():
        summary = {"system": name, "on": on, "data": str(data), "models": str(models_dir or "shipped"),
                   "rerank_precision": "int8" if getattr(compressor.cross_encoder, "quantize", False) else "fp32",
                   "blend": {"cross_encoder_weight": compressor.cross_encoder_weight, "scale": compressor.scale},
                   "scorer": scorer.trained_on, "n_questions": len(rows), **_summary(on, rows)}
        out[name] = LocomoRun(summary=summary, rows=rows)
    cmp = compare_rows(runs["input"], runs["default"])
    out["default"].summary["compressor_vs_input"] = {"mrr_delta": cmp.diff, "mrr_delta_ci95": [cmp.ci_low, cmp.ci_high],
                                                     "report": cmp.format("input", "default")}
    cmp = compare_rows(runs["nograph"], runs["default"])
    out["default"].summary["graph_contribution"] = {"mrr_delta": cmp.diff, "mrr_delta_ci95": [cmp.ci_low, cmp.ci_high],
                                                    "report": cmp.format("nograph", "default")}
    if "hybrid" in runs:
        cmp = compare_rows(runs["hybrid"], runs["default"])
        out["default"].summary["vs_hybrid"] = {"mrr_delta": cmp.diff, "mrr_delta_ci95": [cmp.ci_low, cmp.ci_high],
                                               "report": cmp.format("hybrid", "default")}
    return out

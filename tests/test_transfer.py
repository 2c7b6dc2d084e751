"""The shipped recipe (train-models) and the leave-one-dataset-out bench (bench transfer), run for real."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from langmem_cog import CogMemConfig, CogMemRetriever
from langmem_cog.bench.pools import collect_pools
from langmem_cog.bench.recipe import PoolSource, Recipe, dropped_features, rank_pools, refit_fusion, train_models
from langmem_cog.bench.transfer import run_transfer
from langmem_cog.errors import InvalidInputError
from langmem_cog.rank.defaults import default_compressor, default_scorer
from langmem_cog.rank.training import TrainConfig


def _noop(it, _desc, _n):
    return it


def test_cached_pools_rank_exactly_as_the_live_retriever(two_conversations: Path) -> None:
    cfg = CogMemConfig.preset("ephemeral")
    ps = collect_pools(two_conversations, cfg, with_graph=True, progress=_noop, keep=True)
    try:
        qps = [qp for group in ps.by_sample.values() for qp in group]
        cached = rank_pools(qps, default_scorer(), default_compressor(), cfg)
        assert len(cached) == 28
        for qp, ids in cached:
            live = CogMemRetriever(memory=ps.memory, namespace=ps.namespaces[qp.sample_id], k=len(ids),
                                   now=qp.asked_at).invoke(qp.question["question"])
            assert [d.metadata["turn_id"] for d in live] == ids, qp.question["question"]
        # bench transfer's "nograph" ranking is the live retriever without the graph stage.
        nograph = rank_pools([dataclasses.replace(qp, graph=None) for qp in qps[:6]], default_scorer(),
                             default_compressor(), cfg)
        for qp, ids in nograph:
            live = CogMemRetriever(memory=ps.memory, namespace=ps.namespaces[qp.sample_id], k=len(ids),
                                   now=qp.asked_at, use_graph=False).invoke(qp.question["question"])
            assert [d.metadata["turn_id"] for d in live] == ids, qp.question["question"]
    finally:
        ps.release()


def _machine_paths(value, home: str) -> list[str]:
    if isinstance(value, dict):
        return [p for v in value.values() for p in _machine_paths(v, home)]
    if isinstance(value, list):
        return [p for v in value for p in _machine_paths(v, home)]
    return [value] if isinstance(value, str) and (value.startswith("/") or home in value) else []


def test_train_models_writes_a_folder_the_default_retriever_uses(two_conversations: Path, tmp_path: Path) -> None:
    recipe = Recipe(train=TrainConfig(epochs=1, max_length=32, freeze_layers=3, num_layers=2, pooling="mean",
                                      threads=1), score_max_length=24, tune_queries=4, min_held_out=1, drop_features=("style",))
    out = tmp_path / "models"
    report = train_models({"locomo": two_conversations}, out, recipe=recipe, work_dir=tmp_path / "work",
                          pools=PoolSource(tmp_path / "pools"), command="langmem-cog train-models --datasets locomo")
    assert (tmp_path / "pools" / "locomo-pools.pkl").exists()
    assert {p.name for p in out.iterdir()} == {"fusion.json", "cascade.json", "reranker", "manifest.json"}
    meta = json.loads((out / "reranker" / "training.json").read_text())
    assert meta["data"]["locomo"]["sha256"] and meta["data"]["locomo"]["questions"] == 28
    assert meta["recipe"]["drop_features"] == ["style"] and meta["tune_questions"] == 4  # a sixth of 28
    assert meta["command"].startswith("langmem-cog train-models")
    assert not _machine_paths(meta, str(Path.home())), "training.json must not record machine paths"
    assert report["cross_encoder_weight"] == json.loads((out / "cascade.json").read_text())["cross_encoder_weight"]
    assert json.loads((out / "cascade.json").read_text())["scale"] == recipe.blend_scale == "z"
    scorer = json.loads((out / "fusion.json").read_text())
    weights = dict(zip(scorer["features"], scorer["weights"], strict=True))
    assert all(weights[f] == 0.0 for f in dropped_features(["style"]))
    # The default retriever of a memory configured with this folder uses its models.
    from langmem_cog.memory import CogMemory

    mem = CogMemory(CogMemConfig.preset("ephemeral", models_dir=out))
    r = CogMemRetriever(memory=mem, namespace="unused")
    assert r.fusion.weights.tolist() == default_scorer(out).weights.tolist()
    assert r.compressor.cross_encoder_weight == report["cross_encoder_weight"]
    # Leave-one-dataset-out bench: the same pools (cached), ranked through the cascade's own code.
    runs = run_transfer(out, "locomo", two_conversations, pool_cache=tmp_path / "pools" / "locomo-pools.pkl")
    assert set(runs) == {"default", "input", "nograph"}
    assert runs["default"].summary["n_questions"] == 28
    assert runs["default"].summary["blend"] == {"cross_encoder_weight": report["cross_encoder_weight"], "scale": "z"}
    for before, after in zip(runs["input"].rows, runs["default"].rows, strict=True):
        assert set(before["ranked_ids"][:10]) == set(after["ranked_ids"][:10])  # recall@10 preserved
    assert "compressor_vs_input" in runs["default"].summary and "graph_contribution" in runs["default"].summary
    # The head's share kept for plain hybrid search: the config's 8 unless asked; the pools are reused as they are.
    eight = run_transfer(out, "locomo", two_conversations, pool_cache=tmp_path / "pools" / "locomo-pools.pkl",
                         raw_protect=8)
    assert [r["ranked_ids"] for r in eight["input"].rows] == [r["ranked_ids"] for r in runs["input"].rows]
    free = run_transfer(out, "locomo", two_conversations, pool_cache=tmp_path / "pools" / "locomo-pools.pkl",
                        raw_protect=0)
    assert any(set(a["ranked_ids"][:10]) != set(b["ranked_ids"][:10])
               for a, b in zip(free["input"].rows, runs["input"].rows, strict=True))
    # Pools without context scores cannot fit a fusion that weighs the context features.
    from langmem_cog.bench.cascade import load_pool_cache
    from langmem_cog.bench.recipe import fit_scorer

    qps = [dataclasses.replace(qp, pool=dataclasses.replace(qp.pool, context=None, context_lexical=None))
           for group in load_pool_cache(tmp_path / "pools" / "locomo-pools.pkl").by_sample.values() for qp in group]
    with pytest.raises(InvalidInputError, match="no context scores"):
        fit_scorer(qps, Recipe(fit_fusion=True))
    scorer, _, _ = fit_scorer(qps, Recipe(fit_fusion=True, drop_features=("context",)))
    assert all(scorer.weights[i] == 0.0 for i, f in enumerate(scorer.features) if f.startswith("context_"))
    with pytest.raises(InvalidInputError, match="unknown dataset"):
        train_models({"nope": two_conversations}, out, recipe=recipe, work_dir=tmp_path / "w2")


def test_refit_fusion_keeps_the_cross_encoder_and_blend_of_the_folder(two_conversations: Path, tmp_path: Path) -> None:
    import shutil

    from langmem_cog.rank.defaults import models_path
    from langmem_cog.rank.manifest import check_models

    folder = tmp_path / "models"
    shutil.copytree(models_path(), folder, ignore=shutil.ignore_patterns("__pycache__"))
    kept = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.name not in ("fusion.json", "manifest.json")}
    done = refit_fusion({"locomo": two_conversations}, folder, pools=PoolSource(tmp_path / "pools"),
                        command="langmem-cog train-models --fusion-only --datasets locomo")
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and p.name not in ("fusion.json", "manifest.json")} == kept
    scorer = json.loads((folder / "fusion.json").read_text())
    assert scorer["trained_on"] == done["trained_on"] == "locomo (28 questions)"
    assert scorer["meta"]["refitted_alone"] and scorer["meta"]["data"]["locomo"]["questions"] == 28
    assert not _machine_paths(scorer, str(Path.home()))
    check_models(folder)  # the manifest was written again: loading accepts the folder
    assert default_scorer(folder).weights.tolist() == scorer["weights"]
    (folder / "cascade.json").unlink()
    with pytest.raises(InvalidInputError, match="no cascade.json"):
        refit_fusion({"locomo": two_conversations}, folder, pools=PoolSource(tmp_path / "pools"))


@pytest.fixture(scope="module")
def locomo_qps(two_conversations: Path) -> list:
    """The labelled LoCoMo pools of the two-conversation file, built once for the tests that only read them."""
    from langmem_cog.bench.recipe import load_or_collect_pools

    ps = load_or_collect_pools("locomo", two_conversations, cache=None, lme_limit=None, progress=_noop)
    return [qp for group in ps.by_sample.values() for qp in group]


def test_few_questions_cross_fit_the_blend_weight_on_every_question(locomo_qps: list, tmp_path: Path) -> None:
    from langmem_cog.bench.cascade import BLEND_GRID
    from langmem_cog.bench.recipe import fit_recipe

    qps = locomo_qps
    recipe = Recipe(train=TrainConfig(epochs=1, max_length=32, freeze_layers=3, num_layers=2, pooling="mean",
                                      threads=1), score_max_length=24, tune_queries=6, folds=2)
    assert recipe.cross_fits(len(qps))  # a sixth of 28 is 4, under min_held_out
    models = fit_recipe(qps, recipe, tmp_path / "work")
    # Every question chose the blend weight, scored by a cross-encoder that did not train on it; the
    # shipped one trained on all of them.
    assert models.report["tune_questions"] == models.report["fit_questions"] == 28
    assert models.report["blend_chosen_on"].startswith("cross-fitted over 2 folds")
    assert models.cross_encoder_weight in BLEND_GRID and set(models.report["tune_mrr"]) == {str(w) for w in BLEND_GRID}
    assert models.reranker_dir == tmp_path / "work" / "reranker"
    folds = [json.loads((tmp_path / "work" / "folds" / f"fold-{f}" / "training.json").read_text()) for f in (0, 1)]
    assert [f["examples"] for f in folds] == [14, 14] and models.report["examples"] == 28
    # An interrupted run reuses the checkpoints it finds; a different recipe refuses them.
    again = fit_recipe(qps, recipe, tmp_path / "work", reuse=True)
    assert again.report["tune_mrr"] == models.report["tune_mrr"]
    assert models.report["blend_rule"] == "one_se"
    best = fit_recipe(qps, dataclasses.replace(recipe, blend_rule="best"), tmp_path / "work", reuse=True)
    assert best.report["tune_mrr"] == models.report["tune_mrr"] and best.report["blend_rule"] == "best"
    assert models.cross_encoder_weight <= best.cross_encoder_weight
    other = dataclasses.replace(recipe, train=dataclasses.replace(recipe.train, lr=1e-3))
    with pytest.raises(InvalidInputError, match="drop reuse"):
        fit_recipe(qps, other, tmp_path / "work", reuse=True)
    with pytest.raises(InvalidInputError, match="folds=0"):
        Recipe(folds=0)
    with pytest.raises(InvalidInputError, match="name_speakers=1.5"):
        Recipe(name_speakers=1.5)
    with pytest.raises(InvalidInputError, match="blend_rule='top'"):
        Recipe(blend_rule="top")


def test_one_standard_error_rule_keeps_the_smallest_weight_within_one_se_of_the_best() -> None:
    import numpy as np

    from langmem_cog.bench.blend import BLEND_GRID, _blend_reciprocal_ranks, best_blend

    rng = np.random.default_rng(0)
    for trial in range(30):
        heads = []
        for _ in range(int(rng.integers(2, 40))):
            n = 10
            gold = rng.random(n) < 0.15
            heads.append((rng.normal(size=n) + 1.5 * gold * rng.random(), rng.normal(size=n), gold))
        best, grid = best_blend(heads, rule="best")
        one_se, grid2 = best_blend(heads, rule="one_se")
        assert grid == grid2 and one_se <= best, trial
        rr = _blend_reciprocal_ranks(heads, BLEND_GRID)
        floor = rr[best].mean() - rr[best].std(ddof=1) / np.sqrt(len(heads))
        assert rr[one_se].mean() >= floor - 1e-12
        assert all(rr[w].mean() < floor for w in BLEND_GRID if w < one_se)
    with pytest.raises(InvalidInputError, match="blend rule 'x' is unknown"):
        best_blend(heads, rule="x")


def test_named_speaker_lists_leave_chats_between_people_as_they_are(locomo_qps: list) -> None:
    from langmem_cog.bench.recipe import fit_scorer, training_lists

    qps = locomo_qps
    scorer, feats, gold = fit_scorer(qps, Recipe())
    plain = training_lists(qps, scorer, feats, gold, Recipe())
    assert plain and training_lists(qps, scorer, feats, gold, Recipe(name_speakers=1.0)) == plain


def test_same_role_lists_leave_chats_between_people_as_they_are(locomo_qps: list) -> None:
    from langmem_cog.bench.recipe import fit_scorer, training_lists

    qps = locomo_qps
    scorer, feats, gold = fit_scorer(qps, Recipe())
    plain = training_lists(qps, scorer, feats, gold, Recipe())
    assert plain and training_lists(qps, scorer, feats, gold, Recipe(same_role=True)) == plain


def test_same_role_lists_tell_an_assistant_chat_within_its_golds_role(locomo_qps: list) -> None:
    from langmem_cog.bench.recipe import fit_scorer, training_lists

    qps = locomo_qps
    # The same pools told as assistant chats: each conversation's first speaker is the user.
    role = {}
    for qp in qps:
        names = list(dict.fromkeys(t.speaker for t in qp.pool.turns))
        role[id(qp)] = {names[0]: "user", **{n: "assistant" for n in names[1:]}}
    chats = [dataclasses.replace(qp, pool=dataclasses.replace(qp.pool, turns=[t.model_copy(update={"speaker": role[id(qp)][t.speaker]})
                                                                                  for t in qp.pool.turns]))
             for qp in qps]
    scorer, feats, gold = fit_scorer(chats, Recipe())
    plain = training_lists(chats, scorer, feats, gold, Recipe())
    lists = training_lists(chats, scorer, feats, gold, Recipe(same_role=True))
    assert len(lists) == len(plain) and lists != plain
    for ex, base in zip(lists, plain, strict=True):
        roles = {d.partition(": ")[0] for d, g in zip(base.docs, base.gold, strict=True) if g}
        if not roles:
            assert ex == base
            continue
        assert {d.partition(": ")[0] for d in ex.docs} <= roles and sum(ex.gold) == sum(base.gold)
        assert len([g for g in ex.gold if not g]) <= 10


def test_deeper_training_lists_hold_the_compressors_top_10(locomo_qps: list) -> None:
    from langmem_cog.bench.recipe import fit_scorer, training_lists

    qps = locomo_qps
    scorer, feats, gold = fit_scorer(qps, Recipe())
    plain = training_lists(qps, scorer, feats, gold, Recipe())
    deep = training_lists(qps, scorer, feats, gold, Recipe(list_depth=20))
    assert len(deep) == len(plain)
    for p, d in zip(plain, deep, strict=True):
        assert p.query == d.query and set(p.docs) <= set(d.docs)  # the reordered top 10 (and missed gold) is in it
        assert sum(d.gold) == sum(p.gold) and len(d.docs) > len(p.docs)
        # The documents a deeper list adds are fused ranks below the head, never gold.
        assert not any(g for doc, g in zip(d.docs, d.gold, strict=True) if doc not in set(p.docs))
    with pytest.raises(InvalidInputError, match="list_depth"):
        Recipe(list_depth=0)


def test_dropped_features_names_groups_and_refuses_unknown() -> None:
    assert "graph_claim" in dropped_features(["graph"]) and "in_window" in dropped_features(["graph"])
    with pytest.raises(InvalidInputError, match="unknown feature"):
        dropped_features(["positon"])


def test_latency_times_the_default_retriever_on_the_live_path(two_conversations: Path) -> None:
    from langmem_cog.bench.latency import run_latency

    res = run_latency("locomo", two_conversations, questions=3, conversations=1)
    assert res["mode"] == "cascade" and res["n_turns"] == 105 and res["n_queries"] == 3
    assert len(res["first_query_raw_ms"]) == 1 and res["first_query_ms"]["p50"] > 0 and res["query_ms"]["p50"] > 0
    with pytest.raises(InvalidInputError, match="on='x'"):
        run_latency("x", two_conversations)


def test_bench_ingest_times_a_cold_persistent_ingest_beside_plain_encoding(two_conversations, tmp_path, capsys):
    from langmem_cog.bench.ingest import run_ingest
    from langmem_cog.cli import main

    res = run_ingest("locomo", two_conversations, limit=2, data_dir=tmp_path / "d")
    assert res["units"] == 2 and res["turns"] > 0 and res["turns_per_s"] > 0 and res["reference_turns_per_s"] > 0
    assert set(res["shares"]) == {"embed", "chroma", "bm25", "context", "graph", "other"}
    # Each share is rounded to 3 decimals, so their sum may pass 1 by half a thousandth per share.
    assert all(v >= 0 for v in res["shares"].values()) and 0.5 < sum(res["shares"].values()) <= 1 + 0.0005 * 6 + 1e-9
    assert res["shares"]["embed"] > 0 and res["shares"]["chroma"] > 0 and res["shares"]["graph"] > 0
    assert (tmp_path / "d" / "chroma").is_dir()  # a persistent ingest
    assert main(["bench", "ingest", "--on", "locomo", "--data", str(two_conversations), "--limit", "1"]) == 0
    assert "turns/s end to end" in capsys.readouterr().out
    with pytest.raises(InvalidInputError):
        run_ingest("x", two_conversations)


def test_stage_times_add_up_what_add_turns_spent(fake_store, ns) -> None:
    from fakes import make_turns

    times = fake_store.stage_times
    times.reset()
    fake_store.add_turns(make_turns(ns, ["I adopted a puppy", "My sister paints", "We ran a marathon"]))
    assert times.turns == 3 and times.total > 0 and times.embed > 0 and times.chroma > 0
    assert times.embed + times.chroma + times.bm25 + times.context <= times.total
    times.reset()
    assert (times.total, times.turns) == (0.0, 0)

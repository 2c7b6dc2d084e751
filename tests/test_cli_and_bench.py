"""End-to-end tests of the CLI (demo, search, bench locomo, bench compare) on the bundled sample."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from langmem_cog.bench.locomo import run_locomo, write_outputs
from langmem_cog.cli import main
from langmem_cog.errors import InvalidInputError

SAMPLE = Path(__file__).resolve().parents[1] / "langmem_cog" / "data" / "sample_conversation.json"


def test_demo_runs_and_reports_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path) in out
    assert "ingested 105 turns" in out
    assert "What is Leo allergic to?" in out
    # a second run is idempotent (namespace is re-created, no duplicate-id error)
    assert main(["demo", "--data-dir", str(tmp_path)]) == 0
    assert main(["search", "--data-dir", str(tmp_path), "--namespace", "demo-1", "-k", "2", "shellfish allergy"]) == 0
    assert "D1:18" in capsys.readouterr().out
    # the cascade's rows: numbered in the returned order; a score out of order is explained in its row
    assert main(["search", "--data-dir", str(tmp_path), "--namespace", "demo-1", "-k", "5",
                 "What does Maya think about running?"]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if re.match(r" +\d+\. \[", ln)]
    assert [int(r.split(".")[0]) for r in rows] == [1, 2, 3, 4, 5]
    assert all(" Maya" in r and ("raw" in r or "graph" in r) for r in rows)
    scores = [float(re.search(r"(?:rerank|score) (-?\d+\.\d+)", r).group(1)) for r in rows]
    for i in range(1, len(rows)):
        assert scores[i] <= scores[i - 1] or "by score" in rows[i - 1] or "by score" in rows[i], rows[i - 1: i + 1]


def test_search_unknown_namespace_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--data-dir", str(tmp_path), "--namespace", "nobody", "hello"]) == 2
    assert "namespace 'nobody' holds no turns" in capsys.readouterr().err


def test_bench_locomo_split_all(two_conversations: Path) -> None:
    run = run_locomo(two_conversations, system="hybrid", split="all")
    s = run.summary
    assert s["split"] == "all" and s["seeds"] == [0]
    assert s["n_rows"] == 28 == len(run.rows)
    for key in ("mrr", "h1", "r10", "hit10"):
        assert 0.0 <= s["full"][key] <= 1.0
    assert s["full"]["hit10"] > 0.5  # the sample's questions are answerable
    assert set(s["latency_ms"]) == {"p50", "p95"} and s["ingest_turns_per_s"] > 0
    row = run.rows[0]
    assert {"seed", "sample_id", "qa_index", "question", "category", "gold", "ranked_ids", "rank"} <= set(row)
    assert len(row["ranked_ids"]) == 50


def test_bench_locomo_seeds_tunes_on_train_only(two_conversations: Path, tmp_path: Path) -> None:
    run = run_locomo(two_conversations, system="hybrid", seeds=[7, 11])
    assert set(run.summary["per_seed"]) == {"7", "11"}
    # one conversation is train and the other test for each seed: 14 test questions per seed
    assert run.summary["n_rows"] == 28
    assert set(run.summary["params"]["lexical_weight"]) == {"7", "11"}
    out, rows = tmp_path / "s.json", tmp_path / "r.jsonl"
    write_outputs(run, out, rows)
    summary = json.loads(out.read_text())
    for key in ("system", "embedder", "data", "split", "seeds", "n_rows", "full", "std", "per_seed",
                "per_category", "latency_ms", "ingest_turns_per_s"):
        assert key in summary
    assert len(rows.read_text().splitlines()) == 28


def test_bench_cli_and_compare(two_conversations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for system in ("dense", "hybrid"):
        code = main(["bench", "locomo", "--data", str(two_conversations), "--system", system, "--split", "all",
                     "--out", str(tmp_path / f"{system}.json"), "--rows", str(tmp_path / f"{system}.jsonl")])
        assert code == 0
    capsys.readouterr()
    assert main(["bench", "compare", str(tmp_path / "dense.jsonl"), str(tmp_path / "hybrid.jsonl"),
                 "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert "MRR" in out and "95%" in out


def test_bench_missing_data_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "locomo", "--data", str(tmp_path / "missing.json"), "--split", "all"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_one_system_registry_serves_both_benchmarks_and_the_cli() -> None:
    from langmem_cog.bench.systems import SYSTEMS, BenchSystem, CascadeRecipe, system_names
    from langmem_cog.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["bench"]
    benches = next(a for a in sub._actions if a.dest == "bench").choices
    for dataset in ("locomo", "longmemeval"):
        (opt,) = [a for a in benches[dataset]._actions if a.dest == "system"]
        assert list(opt.choices) == system_names(dataset)
    assert {n for n, s in SYSTEMS.items() if s.kind == "cascade"} == {"augmented", "full", "full-zeroshot"}
    assert all(s.rank is not None for s in SYSTEMS.values() if "longmemeval" in s.datasets)
    with pytest.raises(InvalidInputError, match="needs a rank function"):
        BenchSystem("x", "x", "search", mode="dense")
    with pytest.raises(InvalidInputError, match="CascadeRecipe"):
        BenchSystem("x", "x", "cascade", ("locomo",))
    assert CascadeRecipe("shipped", "shipped").fits is False and CascadeRecipe("fitted", "none").fits
    with pytest.raises(InvalidInputError, match="is a cascade system"):
        run_locomo("unused.json", system="full")


@pytest.mark.parametrize(("flags", "changed"), [([], {}), (["--freeze-layers", "3"], {"freeze_layers": 3}),
                                                 (["--epochs", "3", "--freeze-layers", "0"], {"epochs": 3, "freeze_layers": 0}),
                                                 (["--lr", "1e-4"], {"lr": 1e-4}),
                                                 (["--max-length", "64"], {"max_length": 64}),
                                                 (["--prior-weight", "1.0"], {"prior_weight": 1.0}),
                                                 (["--num-layers", "6"], {"num_layers": 6})])
def test_train_models_passes_the_training_flags_to_the_recipe(flags: list[str], changed: dict[str, float],
                                                              recipe_seen) -> None:
    from langmem_cog.bench.recipe import SHIPPED_RECIPE

    recipe = recipe_seen(*flags)
    assert recipe.train == dataclasses.replace(SHIPPED_RECIPE.train, **changed)
    assert recipe.score_max_length == SHIPPED_RECIPE.score_max_length


@pytest.fixture
def recipe_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Run ``train-models`` with extra flags, training stubbed out: the ``Recipe`` it would fit."""
    import langmem_cog.bench.recipe as recipe_module

    seen = {}
    monkeypatch.setattr(recipe_module, "train_models",
                        lambda datasets, out, *, recipe, **kwargs: seen.update(recipe=recipe) or {"trained_on": "locomo"})
    data = tmp_path / "locomo.json"
    data.write_text("[]", encoding="utf-8")

    def run(*flags: str):
        assert main(["train-models", "--datasets", "locomo", "--locomo", str(data), "--out", str(tmp_path / "m"),
                     "--work-dir", str(tmp_path / "w"), *flags]) == 0
        return seen["recipe"]

    return run


def test_train_models_fusion_only_refuses_a_folder_without_a_cross_encoder(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "locomo.json"
    data.write_text("[]", encoding="utf-8")
    (tmp_path / "m").mkdir()
    assert main(["train-models", "--fusion-only", "--datasets", "locomo", "--locomo", str(data),
                 "--out", str(tmp_path / "m")]) == 2
    assert "no cascade.json or reranker" in capsys.readouterr().err
    assert list((tmp_path / "m").iterdir()) == []  # nothing written


def test_train_models_passes_the_scoring_length_to_the_recipe(recipe_seen) -> None:
    from langmem_cog.bench.recipe import SHIPPED_RECIPE

    recipe = recipe_seen("--score-max-length", "96")
    assert recipe.score_max_length == 96 and recipe.train == SHIPPED_RECIPE.train


def test_train_models_passes_the_list_depth_to_the_recipe(recipe_seen, capsys: pytest.CaptureFixture[str]) -> None:
    from langmem_cog.bench.recipe import SHIPPED_RECIPE

    assert recipe_seen().list_depth == SHIPPED_RECIPE.list_depth == 10
    recipe = recipe_seen("--list-depth", "20")
    assert recipe.list_depth == 20 and recipe.train == SHIPPED_RECIPE.train
    with pytest.raises(SystemExit):
        recipe_seen("--list-depth", "0")
    assert "--list-depth" in capsys.readouterr().err


def test_train_models_passes_the_blend_scale_to_the_recipe(recipe_seen) -> None:
    from langmem_cog.bench.recipe import SHIPPED_RECIPE, Recipe

    assert recipe_seen().blend_scale == SHIPPED_RECIPE.blend_scale == "center"
    assert recipe_seen("--blend-scale", "z") == dataclasses.replace(SHIPPED_RECIPE, blend_scale="z")
    with pytest.raises(InvalidInputError, match="blend_scale"):
        Recipe(blend_scale="minmax")


def test_train_models_passes_same_role_lists_to_the_recipe(recipe_seen) -> None:
    from langmem_cog.bench.recipe import SHIPPED_RECIPE, Recipe

    assert recipe_seen().same_role is SHIPPED_RECIPE.same_role is False
    assert recipe_seen("--same-role", "on") == dataclasses.replace(SHIPPED_RECIPE, same_role=True)
    assert recipe_seen("--same-role", "off") == SHIPPED_RECIPE
    with pytest.raises(InvalidInputError, match="same_role='yes'"):
        Recipe(same_role="yes")


@pytest.mark.parametrize("weight", ["-1", "nan", "inf", "heavy"])
def test_train_models_refuses_a_prior_weight_below_zero_or_not_finite(weight: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["train-models", "--prior-weight", weight])
    assert "--prior-weight" in capsys.readouterr().err


@pytest.mark.parametrize("limit", ["0", "7", "513", "64.5", "long"])
def test_train_models_refuses_a_pair_token_limit_out_of_range(limit: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["train-models", "--max-length", limit])
    assert "--max-length" in capsys.readouterr().err


@pytest.mark.parametrize("rate", ["0", "-1e-4", "nan", "fast"])
def test_train_models_refuses_a_learning_rate_that_is_not_above_zero(rate: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["train-models", "--lr", rate])
    assert "--lr" in capsys.readouterr().err

"""The cascade systems of the LoCoMo bench, run for real on a two-conversation file."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from langmem_cog.bench.cascade import CascadeFit, CascadeRun, ScoreSettings, reranker_questions, run_cascade
from langmem_cog.errors import InvalidInputError
from langmem_cog.rank.training import TrainConfig


def test_augmented_fits_on_train_and_scores_test(two_conversations: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "pools.pkl"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    run = run_cascade(two_conversations, "augmented", run=CascadeRun(seeds=[7], pool_cache=cache, latency_sample=3))
    assert not list(scratch.glob("lmc-cascade-*"))  # no work_dir: the scratch folder is removed after the run
    assert cache.exists()
    assert run.summary["system"] == "augmented" and run.summary["n_rows"] == 14
    assert {r["sample_id"] for r in run.rows} == {run.rows[0]["sample_id"]}  # one test conversation
    assert len(run.summary["params"]["scorer"]["7"]) > 10  # fitted weights recorded
    assert run.summary["latency_ms"]["p50"] > 0  # timed end to end on the live store
    assert not run.input_rows
    again = run_cascade(two_conversations, "augmented", run=CascadeRun(seeds=[7], pool_cache=cache))
    assert [r["rank"] for r in again.rows] == [r["rank"] for r in run.rows]
    assert again.summary["latency_ms"] == {"p50": 0.0, "p95": 0.0}  # pools from the cache: no live store to time
    # A cache written before the context BM25 scores existed is refused, not silently scored with zeros.
    with cache.open("rb") as fh:
        ps = pickle.load(fh)
    assert all(qp.pool.context_lexical is not None for qps in ps.by_sample.values() for qp in qps)
    next(iter(ps.by_sample.values()))[0].pool.context_lexical = None
    with cache.open("wb") as fh:
        pickle.dump(ps, fh)
    with pytest.raises(InvalidInputError, match="older version"):
        run_cascade(two_conversations, "augmented", run=CascadeRun(seeds=[7], pool_cache=cache))


def test_full_reranks_only_the_protected_top10(two_conversations: Path, tmp_path: Path) -> None:
    import torch

    threads = torch.get_num_threads()
    cfg = TrainConfig(epochs=1, max_length=48, max_queries=4, freeze_layers=5, threads=1)
    run = run_cascade(two_conversations, "full",
                      fit=CascadeFit(train=cfg, score=ScoreSettings(max_length=24, threads=2)),
                      run=CascadeRun(seeds=[7], latency_sample=2, work_dir=tmp_path / "ckpt"))
    assert (tmp_path / "ckpt" / "seed-7" / "training.json").exists()
    assert run.summary["params"]["reranker"]["7"]["score_max_length"] == 24  # trained at 48, scores at 24
    assert run.summary["params"]["reranker"]["7"]["score_threads"] == 2
    assert torch.get_num_threads() == threads  # scoring on 2 threads leaves torch's setting as it was
    assert len(run.input_rows) == len(run.rows) == 14
    for before, after in zip(run.input_rows, run.rows, strict=True):
        assert set(before["ranked_ids"][:10]) == set(after["ranked_ids"][:10])
        assert before["ranked_ids"][10:] == after["ranked_ids"][10:]
        assert before["r10"] == after["r10"]
    assert "compressor_vs_input" in run.summary
    assert run.summary["latency_ms"]["p50"] > 0  # timed end to end on the live store


def test_systems_that_fit_refuse_split_all(two_conversations: Path) -> None:
    with pytest.raises(InvalidInputError, match="split all"):
        run_cascade(two_conversations, "augmented", run=CascadeRun(split="all"))
    with pytest.raises(InvalidInputError, match="'nope' is unknown"):
        run_cascade(two_conversations, "nope")
    with pytest.raises(InvalidInputError, match="no cascade system"):
        run_cascade(two_conversations, "hybrid")
    with pytest.raises(InvalidInputError, match="score_max_length=8"):
        run_cascade(two_conversations, "full", fit=CascadeFit(score=ScoreSettings(max_length=8)))
    with pytest.raises(InvalidInputError, match="score_threads=0"):
        run_cascade(two_conversations, "full", fit=CascadeFit(score=ScoreSettings(threads=0)))


def test_full_with_epochs_zero_scores_with_the_init_checkpoint_untouched(two_conversations: Path, tmp_path: Path) -> None:
    from langmem_cog.rank.cross_encoder import default_reranker_path

    cfg = TrainConfig(epochs=0, max_length=48, threads=1)
    cache = tmp_path / "pools.pkl"
    run = run_cascade(two_conversations, "full", fit=CascadeFit(train=cfg, reranker_init=default_reranker_path()),
                      run=CascadeRun(seeds=[7], latency_sample=0, work_dir=tmp_path / "ckpt", pool_cache=cache))
    assert not (tmp_path / "ckpt" / "seed-7").exists()  # nothing trained or written
    info = run.summary["params"]["reranker"]["7"]
    assert info["fine_tuned"] is False and info["tune_queries"] > 0
    assert info["use_positions"] is False  # the shipped checkpoint's pairs carry no positions, so it scores plain pairs
    for before, after in zip(run.input_rows, run.rows, strict=True):
        assert set(before["ranked_ids"][:10]) == set(after["ranked_ids"][:10])
    with pytest.raises(InvalidInputError, match="reranker-init"):
        run_cascade(two_conversations, "full", fit=CascadeFit(train=cfg), run=CascadeRun(seeds=[7], pool_cache=cache))


def test_reranker_questions_hold_the_tune_slice_out_of_training() -> None:
    ps = SimpleNamespace(by_sample={"a": [f"a{i}" for i in range(30)], "b": [f"b{i}" for i in range(20)],
                                    "test": ["t0", "t1"]})
    fit, tune = reranker_questions(7, ["a", "b"], ps, 12, 10)
    rest_fit, rest_tune = reranker_questions(7, ["a", "b"], ps, 12, 10, fit_rest=True)
    assert len(fit) == 12 and len(tune) == 10 and rest_tune == tune  # the same held-out questions
    assert rest_fit[:12] == fit and len(rest_fit) == 40  # every train question but the tune ones
    assert not set(rest_fit) & set(tune) and set(rest_fit) | set(tune) == set(ps.by_sample["a"] + ps.by_sample["b"])
    assert not {"t0", "t1"} & set(rest_fit + tune)  # only the train conversations
    everything, none = reranker_questions(7, ["a", "b"], ps, None, 10)
    assert sorted(everything) == sorted(rest_fit + tune) and none == []  # no cap: all train, nothing to tune


@pytest.mark.parametrize(("precision", "quantize", "int8"), [("fp32", False, False), ("int8", False, True),
                                                             ("auto", False, True), ("fp32", True, True)])
def test_full_zeroshot_scores_with_the_shipped_cross_encoder_in_the_configs_arithmetic(precision: str, quantize: bool,
                                                                                       int8: bool) -> None:
    from langmem_cog.bench.cascade import _models
    from langmem_cog.bench.systems import CascadeRecipe
    from langmem_cog.config import CogMemConfig

    fit = CascadeFit(score=ScoreSettings(quantize=quantize))  # bench locomo --int8
    run = CascadeRun(config=CogMemConfig.preset("ephemeral", rerank_precision=precision))  # --rerank-precision
    _, compressor, _ = _models(CascadeRecipe("shipped", "shipped"), 7, [], None, ({}, {}), fit, None, run)
    assert compressor is not None and compressor.cross_encoder.quantize is int8  # auto: int8 on ONNX Runtime

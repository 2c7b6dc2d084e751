"""The LongMemEval bench: LongMemEval's metric definitions, the runner, the registry and the CLI."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from fakes import FakeEmbeddings

from langmem_cog.bench.compare import compare_rows, load_rows
from langmem_cog.bench.longmemeval import LmeSelection, LmeVectors, lme_metrics, run_longmemeval, spread_order
from langmem_cog.bench.systems import SYSTEMS, register_system
from langmem_cog.cli import main
from langmem_cog.embeddings import CachedEmbeddings
from langmem_cog.errors import InvalidInputError


def _record(qid: str, question: str, gold_text: str, qtype: str = "single-session-user") -> dict:
    filler = [[{"role": "user", "content": f"Filler chat number {i} about the weather and traffic."},
               {"role": "assistant", "content": f"Reply {i}: nothing much to add about weather."}] for i in range(4)]
    answer = [{"role": "user", "content": gold_text, "has_answer": True},
              {"role": "assistant", "content": "Noted, thanks for telling me."}]
    sessions = [*filler, answer]
    # Dates out of order on purpose: the loader sorts sessions by date.
    dates = [f"2023/05/0{9 - i} (Mon) 10:00" for i in range(len(sessions))]
    return {
        "question_id": qid, "question_type": qtype, "question": question, "answer": "x",
        "question_date": "2023/06/01 (Thu) 12:00", "answer_session_ids": [f"{qid}_ans"],
        "haystack_dates": dates, "haystack_session_ids": [f"{qid}_s{i}" for i in range(4)] + [f"{qid}_ans"],
        "haystack_sessions": sessions,
    }


@pytest.fixture
def lme_file(tmp_path: Path) -> Path:
    recs = [
        _record("q1", "What breed is my dog Biscuit?", "My dog Biscuit is a golden retriever puppy."),
        _record("q2", "Where did I buy the espresso machine?", "I bought the espresso machine at Harrods.",
                "knowledge-update"),
        _record("q3_abs", "What is my cat called?", "My dog Biscuit loves the park."),
    ]
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(recs, fh)
    return path


def test_metrics_follow_longmemeval_definitions() -> None:
    session_of = {"a": "s1", "g1": "s2", "b": "s1", "g2": "s3"}
    m = lme_metrics(["a", "g1", "b", "g2"], ["g1", "g2"], session_of, ["s2", "s3"])
    # LongMemEval's DCG: rel[0] + sum(rel[p - 1] / log2(p)) over positions p >= 2.
    assert m["turn_ndcg@5"] == pytest.approx((1 / math.log2(2) + 1 / math.log2(4)) / (1 + 1 / math.log2(2)))
    assert m["turn_recall_all@5"] == 1.0 and m["turn_recall_any@5"] == 1.0
    assert m["session_ndcg@5"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert m["mrr"] == 0.5 and m["rank"] == 2
    only_one = lme_metrics(["g1"] + [f"x{i}" for i in range(20)] + ["g2"], ["g1", "g2"], session_of, [])
    assert only_one["turn_recall_any@10"] == 1.0 and only_one["turn_recall_all@10"] == 0.0
    with pytest.raises(InvalidInputError):
        lme_metrics(["a"], [], session_of, [])


def test_spread_order_prefixes_cover_the_range() -> None:
    order = spread_order(233)
    assert sorted(order) == list(range(233))
    assert max(order[:8]) > 200 and min(order[:8]) == 0


def test_runner_scores_non_abstention_questions_for_several_systems(lme_file: Path) -> None:
    seen: list[tuple[str, str]] = []
    runs = run_longmemeval(lme_file, systems=["bm25", "hybrid"], vectors=LmeVectors(FakeEmbeddings()),
                           on_row=lambda s, r: seen.append((s, r["sample_id"])))
    assert set(runs) == {"bm25", "hybrid"}
    for run in runs.values():
        assert sorted(r["sample_id"] for r in run.rows) == ["q1", "q2"]
        assert run.summary["n_rows"] == 2 and set(run.summary["per_type"]) == {"single-session-user", "knowledge-update"}
        assert all(r["turn_recall_any@10"] == 1.0 for r in run.rows)  # the gold turn shares the question's words
        assert run.summary["n_turns"] == 2 * 10 and run.summary["params"]["trained"] is False
    assert len(seen) == 4
    result = compare_rows(runs["bm25"].rows, runs["hybrid"].rows, resamples=50)
    assert result.n_pairs == 2 and result.n_unmatched == 0


def test_registry_takes_new_systems(lme_file: Path) -> None:
    def oracle(memory, namespace, question, now):  # noqa: ANN001 - the RankFn signature
        turns = memory.store.get_turns(namespace)
        return sorted((t.id for t in turns), key=lambda i: not i.endswith("_ans:0"))

    register_system("oracle-test", oracle)
    try:
        run = run_longmemeval(lme_file, systems=["oracle-test"], vectors=LmeVectors(FakeEmbeddings()), selection=LmeSelection(limit=1))["oracle-test"]
        assert run.summary["full"]["mrr"] == 1.0 and run.summary["full"]["session_recall_all@5"] == 1.0
    finally:
        del SYSTEMS["oracle-test"]
    with pytest.raises(InvalidInputError, match="'nope' is unknown: choose one of .*hybrid"):
        run_longmemeval(lme_file, systems=["nope"], vectors=LmeVectors(FakeEmbeddings()))
    with pytest.raises(InvalidInputError, match="'full' does not run on longmemeval"):
        run_longmemeval(lme_file, systems=["full"], vectors=LmeVectors(FakeEmbeddings()))


def test_cli_writes_rows_and_compare_pairs_them(lme_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, rows = str(tmp_path / "lme-{system}.json"), str(tmp_path / "lme-{system}.jsonl")
    assert main(["bench", "longmemeval", "--data", str(lme_file), "--system", "bm25", "dense",
                 "--max-seq-length", "64", "--out", out, "--rows", rows]) == 0
    assert "turn " in capsys.readouterr().out
    for system in ("bm25", "dense"):
        assert json.loads(Path(out.format(system=system)).read_text())["n_rows"] == 2
        assert len(load_rows(rows.format(system=system))) == 2
    assert main(["bench", "compare", rows.format(system="bm25"), rows.format(system="dense"), "--resamples", "50"]) == 0
    assert "2 shared rows" in capsys.readouterr().out
    assert main(["bench", "longmemeval", "--data", str(lme_file), "--system", "bm25", "dense", "--out", "x.json"]) == 2


def test_runner_skips_scored_questions_and_reuses_saved_vectors(lme_file: Path, tmp_path: Path) -> None:
    cache = tmp_path / "vectors.npz"
    first = run_longmemeval(lme_file, systems=["hybrid"], vectors=LmeVectors(FakeEmbeddings(), cache=cache),
                            selection=LmeSelection(limit=1))
    (done,) = [r["sample_id"] for r in first["hybrid"].rows]
    saved = CachedEmbeddings(FakeEmbeddings())
    assert saved.load(cache) >= 10  # the first question's turns at least

    class Counting(FakeEmbeddings):
        texts: list[str] = []

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            Counting.texts.extend(texts)
            return super().embed_documents(texts)

    second = run_longmemeval(lme_file, systems=["hybrid"], vectors=LmeVectors(Counting(), cache=cache),
                             selection=LmeSelection(skip=[done]))
    assert [r["sample_id"] for r in second["hybrid"].rows] == [q for q in ("q1", "q2") if q != done]
    assert "Filler chat number 0 about the weather and traffic." not in Counting.texts  # shared turn: from the cache
    with pytest.raises(InvalidInputError, match="already scored"):
        run_longmemeval(lme_file, systems=["hybrid"], vectors=LmeVectors(FakeEmbeddings()),
                        selection=LmeSelection(skip=["q1", "q2"]))


def test_embedding_cache_file_round_trips_and_refuses_other_files(tmp_path: Path) -> None:
    emb = CachedEmbeddings(FakeEmbeddings())
    vectors = emb.embed_array(["alpha", "beta"])
    assert emb.save(tmp_path / "c.npz") == 2
    again = CachedEmbeddings(FakeEmbeddings())
    assert again.load(tmp_path / "c.npz") == 2
    assert (again.embed_array(["beta", "alpha"]) == vectors[::-1]).all() and again.misses == 0
    (tmp_path / "bad.npz").write_bytes(b"not a cache")
    with pytest.raises(InvalidInputError, match="not an embedding cache"):
        again.load(tmp_path / "bad.npz")


def test_cli_resume_runs_only_missing_questions(lme_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, rows = str(tmp_path / "lme-{system}.json"), str(tmp_path / "lme-{system}.jsonl")
    args = ["bench", "longmemeval", "--data", str(lme_file), "--system", "bm25", "--max-seq-length", "32",
            "--out", out, "--rows", rows, "--embedding-cache", str(tmp_path / "v.npz")]
    assert main([*args, "--limit", "1"]) == 0
    assert main([*args, "--resume"]) == 0
    summary = json.loads(Path(out.format(system="bm25")).read_text())
    assert summary["n_rows"] == 2 and summary["resumed_rows"] == 1
    assert sorted(r["sample_id"] for r in load_rows(rows.format(system="bm25"))) == ["q1", "q2"]
    assert main(["bench", "longmemeval", "--data", str(lme_file), "--resume"]) == 2  # --resume without --rows
    capsys.readouterr()


def test_lme_pools_come_from_the_cascades_candidate_stage_for_the_selected_questions(lme_file: Path) -> None:
    from langmem_cog.bench.pools import collect_lme_pools
    from langmem_cog.config import CogMemConfig

    every = [q.question_id for q in LmeSelection().questions(lme_file)]
    assert sorted(every) == ["q1", "q2"]
    assert [q.question_id for q in LmeSelection(start=1).questions(lme_file)] == every[1:]
    seen = []
    ps = collect_lme_pools(lme_file, CogMemConfig.preset("ephemeral"), progress=lambda it, _d, _n: it,
                           selection=LmeSelection(skip=[every[0]]), embeddings=FakeEmbeddings(), on_pool=seen.append)
    assert list(ps.by_sample) == [every[1]] and [qp.sample_id for qp in seen] == [every[1]]
    (qp,) = ps.by_sample[every[1]]
    assert len(qp.pool.turns) == 10 and set(qp.question["gold"]) <= {t.id for t in qp.pool.turns}
    assert sorted(qp.hybrid) == sorted(t.id for t in qp.pool.turns)
    for bad in ({"limit": 0}, {"start": -1}):
        with pytest.raises(InvalidInputError):
            LmeSelection(**bad)

"""The LongMemEval bench: LongMemEval's metric definitions, the runner, the registry and the CLI."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from fakes import FakeEmbeddings

from langmem_cog.bench.compare import compare_rows, load_rows
from langmem_cog.bench.longmemeval import SYSTEMS, lme_metrics, register_system, run_longmemeval, spread_order
from langmem_cog.cli import main
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
    runs = run_longmemeval(lme_file, systems=["bm25", "hybrid"], embeddings=FakeEmbeddings(),
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
        run = run_longmemeval(lme_file, systems=["oracle-test"], embeddings=FakeEmbeddings(), limit=1)["oracle-test"]
        assert run.summary["full"]["mrr"] == 1.0 and run.summary["full"]["session_recall_all@5"] == 1.0
    finally:
        del SYSTEMS["oracle-test"]
    with pytest.raises(InvalidInputError, match="unknown systems"):
        run_longmemeval(lme_file, systems=["nope"], embeddings=FakeEmbeddings())


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

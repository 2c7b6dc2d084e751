"""Tests of the LoCoMo benchmark protocol and the paired run comparison."""

from __future__ import annotations

import doctest
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_cog.bench import compare as compare_module
from langmem_cog.bench import protocol as protocol_module
from langmem_cog.bench.compare import ComparisonResult, compare_rows, load_rows
from langmem_cog.bench.protocol import (
    SEEDS,
    clean_evidence,
    conversation_turn_ids,
    locomo_questions,
    percentiles,
    row_metrics,
    split_conversations,
    summarize,
)
from langmem_cog.errors import InvalidInputError

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo10.json"
SAMPLE_IDS = [f"conv-{n}" for n in (26, 30, 41, 42, 43, 44, 47, 48, 49, 50)]


@pytest.fixture(scope="module")
def locomo() -> list[dict]:
    if not LOCOMO.exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO}")
    return json.loads(LOCOMO.read_text(encoding="utf-8"))


# --- doctests ---------------------------------------------------------------


@pytest.mark.parametrize("module", [protocol_module, compare_module])
def test_doctests(module) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# --- split -------------------------------------------------------------------


def test_seeds() -> None:
    assert SEEDS == (7, 11, 23, 31, 47)


@pytest.mark.parametrize("seed", SEEDS)
def test_split_deterministic_disjoint_and_order_free(seed: int) -> None:
    train, test = split_conversations(SAMPLE_IDS, seed)
    assert (train, test) == split_conversations(list(reversed(SAMPLE_IDS)), seed)
    assert len(train) == len(test) == 5
    assert not set(train) & set(test)
    assert sorted(train + test) == sorted(SAMPLE_IDS)


def test_split_differs_across_seeds_and_odd_count() -> None:
    tests = {tuple(sorted(split_conversations(SAMPLE_IDS, s)[1])) for s in SEEDS}
    assert len(tests) > 1
    train, test = split_conversations(["a", "b", "c"], 7)
    assert (len(train), len(test)) == (1, 2)


def test_split_rejects_bad_ids() -> None:
    with pytest.raises(InvalidInputError):
        split_conversations(["a", "a", "b"], 7)
    with pytest.raises(InvalidInputError):
        split_conversations(["a", 3], 7)  # type: ignore[list-item]


# --- evidence ----------------------------------------------------------------


def test_clean_evidence_exact_match_only() -> None:
    valid = {"D1:3", "D8:6", "D9:17", "D11:26", "D30:5", "D4:4"}
    evidence = ["D1:3", "D8:6; D9:17", "D:11:26", "D30:05", "D9:1 D4:4", "D", "D1:3", "D2:2"]
    assert clean_evidence(evidence, valid) == ["D1:3"]
    assert clean_evidence(["D30:5", "D1:3", "D30:5"], valid) == ["D30:5", "D1:3"]


@pytest.mark.parametrize(
    "evidence",
    [None, 5, [], [None, 3, 2.5, ["D1:3"], {"D1:3": 1}, b"D1:3"], "D2:2", object()],
)
def test_clean_evidence_never_crashes(evidence) -> None:
    assert clean_evidence(evidence, {"D1:3"}) == []


def test_clean_evidence_lone_string() -> None:
    assert clean_evidence("D1:3", {"D1:3"}) == ["D1:3"]


def test_locomo_questions_hand_made() -> None:
    record = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "A",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_3": [{"speaker": "B", "dia_id": "D3:1", "text": "yo"}],
        },
        "qa": [
            {"question": "q0", "answer": 1, "evidence": ["D3:1", "D1:1"], "category": 4},
            {"question": "q1", "answer": "x", "evidence": ["D2:1"], "category": 1},
            "not a dict",
            {"question": "q3", "evidence": ["D1:1"], "category": 5, "adversarial_answer": "z"},
        ],
    }
    assert conversation_turn_ids(record) == ["D1:1", "D3:1"]
    assert locomo_questions(record) == [
        {"qa_index": 0, "question": "q0", "category": 4, "gold": ["D3:1", "D1:1"]},
        {"qa_index": 3, "question": "q3", "category": 5, "gold": ["D1:1"]},
    ]
    with pytest.raises(InvalidInputError):
        locomo_questions({"sample_id": "x", "qa": []})
    with pytest.raises(InvalidInputError):
        locomo_questions({"conversation": {}, "qa": None})


def test_real_data_counts(locomo: list[dict]) -> None:
    assert len(locomo) == 10
    assert sum(len(c["qa"]) for c in locomo) == 1986
    assert sum(len(conversation_turn_ids(c)) for c in locomo) == 5882
    kept = {c["sample_id"]: locomo_questions(c) for c in locomo}
    assert sum(len(v) for v in kept.values()) == 1977
    assert {q["category"] for v in kept.values() for q in v} == {1, 2, 3, 4, 5}
    per_seed = []
    for seed in SEEDS:
        _, test = split_conversations(kept, seed)
        per_seed.append(sum(len(kept[s]) for s in test))
    assert per_seed == [938, 1135, 937, 990, 955]
    assert sum(per_seed) == 4955


def test_real_data_malformed_ids_dropped(locomo: list[dict]) -> None:
    by_id = {c["sample_id"]: c for c in locomo}
    conv43 = {q["qa_index"]: q["gold"] for q in locomo_questions(by_id["conv-43"])}
    assert "D11:26" not in conv43[18] and "D:11:26" not in conv43[18]
    assert len(conv43[18]) == 6
    conv26 = {q["qa_index"] for q in locomo_questions(by_id["conv-26"])}
    assert 37 not in conv26 and {30, 46}.isdisjoint(conv26)
    conv50 = {q["qa_index"] for q in locomo_questions(by_id["conv-50"])}
    assert {39, 42, 69}.isdisjoint(conv50)


# --- row metrics -------------------------------------------------------------


def test_row_metrics_hand_made() -> None:
    ranked = [f"t{i}" for i in range(20)]
    assert row_metrics(ranked, ["t0"]) == {
        "rank": 1,
        "mrr": 1.0,
        "h1": 1.0,
        "hit10": 1.0,
        "r10": 1.0,
    }
    m = row_metrics(ranked, ["t3", "t15"])
    assert (m["rank"], m["mrr"], m["h1"], m["hit10"], m["r10"]) == (4, 0.25, 0.0, 1.0, 0.5)
    m = row_metrics(ranked, ["t12"])
    assert (m["rank"], m["mrr"], m["h1"], m["hit10"], m["r10"]) == (13, 1 / 13, 0.0, 0.0, 0.0)
    m = row_metrics(ranked, ["missing", "t9", "t9"])
    assert (m["rank"], m["hit10"], m["r10"]) == (10, 1.0, 0.5)
    m = row_metrics(ranked, ["missing"])
    assert (m["rank"], m["mrr"], m["h1"], m["hit10"], m["r10"]) == (None, 0.0, 0.0, 0.0, 0.0)
    assert row_metrics([], ["x"])["rank"] is None
    with pytest.raises(InvalidInputError):
        row_metrics(ranked, [])


@settings(max_examples=200, deadline=None)
@given(
    ranked=st.lists(st.integers(0, 40), unique=True, max_size=30).map(
        lambda xs: [f"t{x}" for x in xs]
    ),
    gold=st.lists(st.integers(0, 40), min_size=1, max_size=8).map(lambda xs: [f"t{x}" for x in xs]),
)
def test_row_metrics_properties(ranked: list[str], gold: list[str]) -> None:
    m = row_metrics(ranked, gold)
    assert 0.0 <= m["r10"] <= 1.0
    if m["rank"] is None:
        assert m["mrr"] == 0.0 and m["hit10"] == 0.0 and m["r10"] == 0.0
        assert not set(ranked) & set(gold)
    else:
        assert m["mrr"] == 1.0 / m["rank"]
        assert ranked[m["rank"] - 1] in gold
        assert not set(ranked[: m["rank"] - 1]) & set(gold)
        assert m["h1"] == float(m["rank"] == 1)
        assert m["hit10"] == float(m["rank"] <= 10)
    assert (m["r10"] > 0) == (m["hit10"] == 1.0)


# --- summarize -----------------------------------------------------------------


def _row(seed: int, category: int, mrr: float, h1: float, r10: float, hit10: float) -> dict:
    return {"seed": seed, "category": category, "mrr": mrr, "h1": h1, "r10": r10, "hit10": hit10}


def test_summarize_hand_made() -> None:
    rows = [
        _row(7, 1, 1.0, 1.0, 1.0, 1.0),
        _row(7, 2, 0.5, 0.0, 0.5, 1.0),
        _row(7, 2, 0.0, 0.0, 0.0, 0.0),
        _row(11, 1, 0.25, 0.0, 1.0, 1.0),
    ]
    s = summarize(rows)
    assert s["n_rows"] == 4
    assert s["per_seed"]["7"] == pytest.approx(
        {"mrr": 0.5, "h1": 1 / 3, "r10": 0.5, "hit10": 2 / 3, "n": 3}
    )
    assert s["per_seed"]["11"] == {"mrr": 0.25, "h1": 0.0, "r10": 1.0, "hit10": 1.0, "n": 1}
    assert s["full"] == pytest.approx({"mrr": 0.375, "h1": 1 / 6, "r10": 0.75, "hit10": 5 / 6})
    assert s["std"]["mrr"] == pytest.approx(math.sqrt(2) * 0.125)
    assert s["std"]["r10"] == pytest.approx(float(np.std([0.5, 1.0], ddof=1)))
    # category 1: seed 7 mean 1.0, seed 11 mean 0.25 -> 0.625; category 2 only seed 7.
    assert s["per_category"]["1"] == {"mrr": 0.625, "h1": 0.5, "r10": 1.0, "hit10": 1.0, "n": 2}
    assert s["per_category"]["2"] == {"mrr": 0.25, "h1": 0.0, "r10": 0.25, "hit10": 0.5, "n": 2}
    assert list(s["per_seed"]) == ["7", "11"]


def test_summarize_one_seed_and_errors() -> None:
    s = summarize([_row(7, 4, 0.5, 0.0, 1.0, 1.0), _row(7, 4, 1.0, 1.0, 1.0, 1.0)])
    assert s["std"] == {"mrr": 0.0, "h1": 0.0, "r10": 0.0, "hit10": 0.0}
    assert s["full"]["mrr"] == 0.75
    with pytest.raises(InvalidInputError):
        summarize([])
    with pytest.raises(InvalidInputError):
        summarize([{"seed": 7, "category": 1, "mrr": 1.0}])


# --- percentiles -------------------------------------------------------------


def test_percentiles() -> None:
    assert percentiles([3.0, 1.0, 2.0]) == {"p50": 2.0, "p95": pytest.approx(2.9)}
    assert percentiles([5], qs=(0, 100, 99.9)) == {"p0": 5.0, "p100": 5.0, "p99.9": 5.0}
    with pytest.raises(InvalidInputError):
        percentiles([])
    with pytest.raises(InvalidInputError):
        percentiles([1.0], qs=(101,))


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=50),
    q=st.floats(0, 100),
)
def test_percentiles_match_numpy(values: list[float], q: float) -> None:
    got = percentiles(values, qs=(q,))[f"p{q:g}"]
    assert got == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-9)


# --- compare -------------------------------------------------------------------


def _rows(ranks: list[int | None], seed: int = 7, sample_id: str = "conv-1") -> list[dict]:
    return [
        {"seed": seed, "sample_id": sample_id, "qa_index": i, "rank": r, "category": 1}
        for i, r in enumerate(ranks)
    ]


def test_load_rows_round_trip(tmp_path: Path) -> None:
    rows = _rows([1, None, 3])
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    assert load_rows(path) == rows
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seed": 7}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match=":2:"):
        load_rows(bad)
    bad.write_text("{nope\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=":1:"):
        load_rows(bad)


def test_compare_identical_interval_contains_zero() -> None:
    rng = np.random.default_rng(1)
    ranks = [int(r) if r <= 60 else None for r in rng.integers(1, 80, size=300)]
    rows = _rows(ranks)
    result = compare_rows(rows, [dict(r) for r in reversed(rows)], resamples=2000)
    assert isinstance(result, ComparisonResult)
    assert result.diff == 0.0
    assert result.ci_low <= 0.0 <= result.ci_high
    assert not result.significant
    assert result.hit10_benefit == result.hit10_tax == result.h1_benefit == result.h1_tax == 0
    assert (result.n_pairs, result.n_unmatched) == (300, 0)


def test_compare_clearly_better_b_excludes_zero() -> None:
    rng = np.random.default_rng(2)
    ranks_a = [int(r) for r in rng.integers(2, 50, size=400)]
    ranks_b = [max(1, r // 4) for r in ranks_a]
    result = compare_rows(_rows(ranks_a), _rows(ranks_b), resamples=2000, seed=3)
    assert result.diff > 0
    assert 0.0 < result.ci_low <= result.diff <= result.ci_high
    assert result.significant
    again = compare_rows(_rows(ranks_a), _rows(ranks_b), resamples=2000, seed=3)
    assert again == result
    worse = compare_rows(_rows(ranks_b), _rows(ranks_a), resamples=2000, seed=3)
    assert worse.ci_high < 0.0 and "A is better" in worse.format()


def test_compare_benefit_tax_hand_made() -> None:
    #            0  1     2   3     4   5   6  7
    ranks_a = [1, 1, 5, 12, None, 2, 1, 3]
    ranks_b = [1, 4, 11, 2, 1, None, 1, 3]
    result = compare_rows(_rows(ranks_a), _rows(ranks_b), resamples=500)
    # Hit@10: A hits {0,1,2,5,6,7}; B hits {0,1,3,4,6,7}.
    assert (result.hit10_benefit, result.hit10_tax, result.hit10_hits_a) == (2, 2, 6)
    assert result.hit10_tax_share == pytest.approx(2 / 6)
    # H@1: A hits {0,1,6}; B hits {0,4,6}.
    assert (result.h1_benefit, result.h1_tax, result.h1_hits_a) == (1, 1, 3)
    assert result.h1_tax_share == pytest.approx(1 / 3)
    mrr = lambda ranks: sum(1 / r for r in ranks if r) / len(ranks)  # noqa: E731
    assert result.mrr_a == pytest.approx(mrr(ranks_a))
    assert result.mrr_b == pytest.approx(mrr(ranks_b))
    assert result.diff == pytest.approx(mrr(ranks_b) - mrr(ranks_a))
    assert result.hit10_a == 6 / 8 and result.h1_b == 3 / 8
    text = result.format(label_a="base", label_b="new")
    assert "benefit 2" in text and "tax 2" in text and "base" in text and "new" in text
    assert len(text.splitlines()) >= 4


def test_compare_unmatched_and_errors() -> None:
    a = _rows([1, 2, 3, 4])
    b = _rows([1, 2, 3]) + _rows([1], seed=11) + _rows([5], sample_id="conv-2")
    result = compare_rows(a, b, resamples=100)
    assert (result.n_pairs, result.n_unmatched_a, result.n_unmatched_b) == (3, 1, 2)
    assert "unmatched: 1 in A, 2 in B" in result.format()

    with pytest.raises(InvalidInputError, match="share no"):
        compare_rows(_rows([1]), _rows([1], seed=11))
    with pytest.raises(InvalidInputError, match="2 duplicate"):
        compare_rows(_rows([1, 2]) + _rows([1, 2]), _rows([1, 2]))
    with pytest.raises(InvalidInputError, match="B has 1 duplicate"):
        compare_rows(_rows([1, 2]), _rows([1, 2]) + _rows([3]))
    with pytest.raises(InvalidInputError):
        compare_rows([{"seed": 7, "sample_id": "c", "rank": 1}], _rows([1]))
    with pytest.raises(InvalidInputError):
        compare_rows([{"seed": 7, "sample_id": "conv-1", "qa_index": 0}], _rows([1]))
    with pytest.raises(InvalidInputError):
        compare_rows(_rows([0]), _rows([1]))
    with pytest.raises(InvalidInputError):
        compare_rows(_rows([1]), _rows([1]), resamples=0)
    with pytest.raises(ValueError):  # InvalidInputError is a ValueError too
        compare_rows(_rows(["1"]), _rows([1]))  # type: ignore[list-item]


def test_compare_bootstrap_chunks_large_input() -> None:
    # More resamples than fit in one chunk: chunking must not change the interval's sanity.
    ranks = [1 + (i % 30) for i in range(5000)]
    better = [max(1, r - 5) for r in ranks]
    result = compare_rows(_rows(ranks), _rows(better), resamples=1000, seed=5)
    assert result.resamples == 1000
    assert 0.0 < result.ci_low <= result.diff <= result.ci_high

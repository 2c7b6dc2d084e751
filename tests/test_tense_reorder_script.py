"""benchmarks/tense_reorder.py: the features of a state question's top turns, and the listwise fit."""

from __future__ import annotations

import numpy as np


def _row(question: str, gold: str) -> dict:
    docs = [  # the rank order; Sam's turns in March and June, Jo's in April
        {"turn_id": "a", "speaker": "Sam", "timestamp": "2023-03-01T10:00:00+00:00", "relevance_score": 2.0,
         "dense_score": 0.6, "lexical_score": 3.0},
        {"turn_id": "b", "speaker": "Jo", "timestamp": "2023-04-01T10:00:00+00:00", "relevance_score": 1.0,
         "dense_score": 0.5, "lexical_score": 1.0},
        {"turn_id": "c", "speaker": "Sam", "timestamp": "2023-06-01T10:00:00+00:00", "relevance_score": 0.0,
         "dense_score": 0.4, "lexical_score": 0.0},
    ]
    return {"question": question, "gold": [gold], "docs": docs}


def test_a_question_of_no_state_has_no_features(benchmark_script) -> None:
    features = benchmark_script("tense_reorder").features
    assert features(_row("What did Sam cook on Friday?", "a"), 10) is None


def test_now_and_before_sign_the_place_in_time_and_mark_the_holders_edge(benchmark_script) -> None:
    script = benchmark_script("tense_reorder")
    col = {name: i for i, name in enumerate(script.FEATURES)}
    X, y = script.features(_row("Where does Sam live now?", "c"), 10)
    assert y.tolist() == [0.0, 0.0, 1.0]
    assert X[:, col["holder"]].tolist() == [1.0, 0.0, 1.0]
    assert X[:, col["time"]].tolist() == [-0.5, 0.0, 0.5]  # the latest turn highest for "now"
    assert X[:, col["holder_extreme"]].tolist() == [0.0, 0.0, 1.0]  # Sam's latest
    assert np.allclose(X[:, col["inv_rank"]], [1.0, 0.5, 1 / 3])
    X, _ = script.features(_row("Where did Sam use to live?", "a"), 10)
    assert X[:, col["time"]].tolist() == [0.5, -0.0, -0.5]  # the earliest highest for "before"
    assert X[:, col["holder_extreme"]].tolist() == [1.0, 0.0, 0.0]  # Sam's earliest


def test_the_listwise_fit_learns_to_put_the_latest_first(benchmark_script) -> None:
    script = benchmark_script("tense_reorder")
    rows = [script.features(_row("Where does Sam live now?", "c"), 10) for _ in range(4)]
    w = script.fit(rows, l2=0.01)
    X, y = rows[0]
    assert y[int(np.argmax(X @ w))] == 1.0

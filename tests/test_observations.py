"""Observation-statement training lists (LoCoMo train conversations)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from fakes import FakeEmbeddings

from langmem_cog.bench.observations import locomo_observations, observation_pools
from langmem_cog.errors import InvalidInputError
from langmem_cog.rank.data import rerank_examples
from langmem_cog.records import make_turn

TEXTS = [("Leo", "I started working at the bakery on Main Street."), ("Maya", "That sounds fun!"),
         ("Leo", "I also took up the violin last month."), ("Maya", "My cat is sick again.")]


def _turns():
    return [make_turn(id=f"D1:{i + 1}", namespace="c", speaker=s, text=t, position=i,
                      timestamp=datetime(2023, 5, 8, 12, i, tzinfo=UTC)) for i, (s, t) in enumerate(TEXTS)]


def _embed(texts):
    emb = FakeEmbeddings()
    return np.asarray([emb.embed_query(t) for t in texts])


def test_observations_read_string_and_list_evidence():
    rec = {"observation": {"session_1_observation": {"Leo": [["Leo works at a bakery.", "D1:1"],
                                                             ["Leo plays violin.", ["D1:3", " D1:9 "]]]}}}
    assert locomo_observations(rec) == [("Leo works at a bakery.", ["D1:1"]), ("Leo plays violin.", ["D1:3", "D1:9"])]
    assert locomo_observations({}) == []


@pytest.mark.parametrize("bad", [{"observation": ["x"]}, {"observation": {"s": ["x"]}},
                                 {"observation": {"s": {"Leo": [["only one"]]}}}])
def test_malformed_observations_are_refused_by_name(bad):
    with pytest.raises(InvalidInputError, match="observation"):
        locomo_observations(bad)


def test_observation_pools_mark_the_linked_turn_gold_and_skip_unresolved_statements():
    turns = _turns()
    statements = [("Leo works at the bakery on Main Street.", ["D1:1"]), ("Maya's cat is sick.", ["D1:4"]),
                  ("Nobody said this.", ["D7:7"])]
    pools = observation_pools(statements, turns, _embed, lexical_weight=0.5)
    assert [p[0] for p in pools] == [s for s, _ in statements[:2]]
    for (_, pool, fused, gold), (_, ev) in zip(pools, statements, strict=False):
        assert pool.ids == [t.id for t in turns] and len(fused) == len(turns)
        assert [pool.ids[i] for i in np.flatnonzero(gold)] == ev
    # BM25 and the dense score both favour the bakery turn for the bakery statement.
    assert int(np.argmax(pools[0][2])) == 0
    [ex, _] = rerank_examples(pools, depth=2)
    assert ex.query.endswith("Leo works at the bakery on Main Street.") and ex.gold[0]


def test_observation_pools_of_nothing_are_empty():
    assert observation_pools([("x", ["D1:1"])], [], _embed, lexical_weight=1.0) == []
    assert observation_pools([], _turns(), _embed, lexical_weight=1.0) == []


def test_full_trains_on_the_train_conversations_observations_only(two_conversations, tmp_path):
    import json

    from langmem_cog.bench.cascade import run_cascade
    from langmem_cog.rank.training import TrainConfig

    recs = json.loads(two_conversations.read_text())
    for rec in recs:  # observations in both records; only the train conversation's may be read
        turns = rec["conversation"]["session_1"]
        rec["observation"] = {"session_1_observation": {t["speaker"]: [[f"{t['speaker']} said: {t['text']}", t["dia_id"]]]
                                                        for t in turns[:4]}}
    path = tmp_path / "obs.json"
    path.write_text(json.dumps(recs))
    cfg = TrainConfig(epochs=1, max_length=32, max_queries=2, freeze_layers=5, threads=1, num_layers=1)
    run = run_cascade(path, system="full", seeds=[7], train_config=cfg, latency_sample=0, tune_queries=2,
                      work_dir=tmp_path / "ckpt", observation_lists=True)
    report = json.loads((tmp_path / "ckpt" / "seed-7" / "training.json").read_text())
    assert report["observation_lists"] == 2  # two speakers in the train conversation's first turns
    assert report["question_lists"] == 2 and report["examples"] == 4
    assert report["trained_on"].endswith(f"{sorted({r['sample_id'] for r in recs} - {run.rows[0]['sample_id']})}")
